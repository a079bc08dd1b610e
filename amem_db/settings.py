"""Structural settings rendered into the SurrealQL templates.

These shape the schema (index dimension, HNSW graph, KNN pool literal,
analyzer language), so they are template inputs, validated here at render
time. User *values* never go through templates: they travel as ``$params``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .constants import HNSW_EF_PER_POOL, HNSW_EFC, HNSW_M
from .errors import InvalidInput

# snowball languages the engine's analyzer accepts
SNOWBALL_LANGUAGES = (
    "arabic", "danish", "dutch", "english", "french", "german", "greek",
    "hungarian", "italian", "norwegian", "portuguese", "romanian", "russian",
    "spanish", "swedish", "tamil", "turkish",
)


class SchemaSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # 384 = all-MiniLM-L6-v2 / multilingual-e5-small, the offline models we ship
    embedding_dim: int = Field(default=384, ge=2, le=16384)
    hnsw_m: int = Field(default=HNSW_M, ge=4, le=128)
    hnsw_efc: int = Field(default=HNSW_EFC, ge=16, le=2000)
    # KNN needs a literal `<|K,EF|>` (docs/ENGINE-ISSUES.md #2): the pool is rendered in.
    candidate_pool: int = Field(default=256, ge=10, le=4096)
    # recall's own legs (entities, attributes, memory passages): RRF with rrfK 2 hardly reads
    # past rank 64, and a KNN's cost is its K (docs/ENGINE-ISSUES.md #30); at least recall's max k
    # (docs/EVALUATION.md "Candidate pool": LoCoMo R@10 equal at 64 and 256)
    recall_pool: int = Field(default=64, ge=50, le=4096)
    analyzer_language: str = "english"
    # keep the passages of replaced document versions for asOf / atInstant reads
    # (migrations/0011, surql/260_versions): opt-in, it costs storage and replace time
    document_history: bool = False

    @field_validator("analyzer_language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        if v not in SNOWBALL_LANGUAGES:
            raise ValueError(f"analyzer_language must be one of {', '.join(SNOWBALL_LANGUAGES)}")
        return v

    @property
    def hnsw_ef(self) -> int:
        """Search-time EF: HNSW_EF_PER_POOL x the pool (recall@pool >= 0.98 on a built
        graph, docs/BENCHMARKS.md "Vector leg on the graph"), and at least 64."""
        return max(self.candidate_pool * HNSW_EF_PER_POOL, 64)

    def merged(self, overrides: dict[str, Any]) -> SchemaSettings:
        """These settings with ``overrides`` (None = keep); a value out of range
        raises InvalidInput naming the setting and its limits, in one line."""
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return SchemaSettings(**data)
        except ValidationError as exc:
            raise InvalidInput.from_validation(exc, model=SchemaSettings) from None
