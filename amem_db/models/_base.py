"""The bases of every result model, the tier vocabulary and the one helper that
turns a stored function's result into its model (``validated``)."""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from ..errors import ServerError

__all__ = ["RecallTier", "Tier", "TierValue", "validated"]

_M = TypeVar("_M", bound=BaseModel)


def validated(model: type[_M], data: Any) -> _M:
    """A stored function's result as its model. A result that does not fit is the
    database's fault, not the caller's: a ``ServerError`` naming the field, never a
    raw pydantic error. Every result the client returns passes here."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        raise ServerError(f"unexpected result shape for {model.__name__}: {first.get('loc')}: {first.get('msg')}") from exc


class Tier(IntEnum):
    """The tier of recall's ladder that answered (MEMORY.md section 4; surql/455_tiers),
    the one vocabulary of ``RecallResponse.tier`` and the traces' ``tier``.

    ``fn::amem::recall`` names tier 2 ``"cache"`` on the wire (and in the trace it writes);
    the traces read it back as 2. Both are read here as ``Tier.CACHE`` (the wire form is
    kept in ``RecallResponse``'s dump), and a tier still compares equal to its wire name,
    so ``response.tier == "cache"`` keeps working."""

    SEED = 1  # seed reads by index (never answers alone)
    CACHE = 2  # response reuse (a stored answer)
    FUSED = 3  # the fused ranker
    ESCALATED = 4  # the doubled pool, one more hop, HyDE

    @classmethod
    def read(cls, value: Any) -> Tier:
        """A tier as a stored function returns it: 1-4, or a name (fn::amem::traces::tier's list)."""
        if isinstance(value, Tier):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4:
            return cls(value)
        if isinstance(value, float) and value.is_integer() and 1 <= value <= 4:
            return cls(int(value))
        if isinstance(value, str):
            name = _NAMES.get(value.strip().lower())
            if name is not None:
                return name
        raise ValueError(f"a tier is 1-4 or one of {sorted(_NAMES)}, not {value!r}")

    @property
    def wire(self) -> int | str:
        """The tier as fn::amem::recall writes it: ``"cache"`` for tier 2, else the number."""
        return "cache" if self is Tier.CACHE else int(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return _NAMES.get(other.strip().lower()) is self
        return int(self) == other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = int.__hash__


# the names fn::amem::traces::tier reads (surql/470_traces), and the numbers as text
_NAMES: dict[str, Tier] = {
    "cache": Tier.CACHE, "reuse": Tier.CACHE, "tier2": Tier.CACHE, "tier 2": Tier.CACHE, "2": Tier.CACHE,
    "escalated": Tier.ESCALATED, "tier4": Tier.ESCALATED, "tier 4": Tier.ESCALATED, "4": Tier.ESCALATED,
    "seed": Tier.SEED, "seeds": Tier.SEED, "direct_lookup": Tier.SEED, "tier1": Tier.SEED, "tier 1": Tier.SEED, "1": Tier.SEED,
    "fused": Tier.FUSED, "tier3": Tier.FUSED, "tier 3": Tier.FUSED, "3": Tier.FUSED,
}


#: a tier field: read from a number or a name (the traces' ``tier``)
TierValue = Annotated[Tier, BeforeValidator(Tier.read)]
#: RecallResponse's tier: read the same way, dumped as fn::amem::recall wrote it ("cache" for 2)
RecallTier = Annotated[Tier, BeforeValidator(Tier.read), PlainSerializer(lambda t: t.wire),
                       WithJsonSchema({"anyOf": [{"type": "integer", "enum": [1, 3, 4]}, {"const": "cache"}],
                                       "description": "the tier that answered: 3, 4, or 'cache' (tier 2)"})]


class _Model(BaseModel):
    """A record the client builds itself: every field is dumped."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _Returned(_Model):
    """A stored function's result: the dump holds exactly the keys it returned."""

    @model_serializer(mode="wrap")
    def _as_returned(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, field in type(self).model_fields.items():
                if name not in self.model_fields_set:
                    data.pop(field.alias if info.by_alias and field.alias else name, None)
        return data


class _Camel(_Returned):
    """A result of the query read path, whose keys are camelCase."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)
