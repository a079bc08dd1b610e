"""``mem.answers``: tier 2 of recall, response reuse (fn::amem::answers::*,
surql/440_answers). A caller that synthesises an answer from a recall with its own
model stores it with the ids it cited; a later ``mem.recall(..., reuse=True)`` returns
it (``tier == Tier.CACHE``, ``reused_from``) while the new query is close enough (cosine
>= 0.92), the caller reads the same scopes under the same lens and labels, the answer
is fresh (``reuse_max_age``, 3600 s by default) and every cited record is still current.

    r = await mem.recall("what is Alice's role?")
    text = my_model(r.hits)                                   # the caller's own model
    await mem.answers.remember("what is Alice's role?", text, [h.id for h in r.hits[:3]])
    again = await mem.recall("what's Alice's role?", reuse=True)  # again.answer.text == text
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..models import StoredAnswer
from . import _call

__all__ = ["Answers"]

if TYPE_CHECKING:
    from ._call import Lens
    from .memory import Memory


class Answers:
    """``mem.answers``: store answers for recall's tier 2 (fn::amem::answers::*)."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    async def remember(
        self,
        query: str,
        answer: str,
        cited: Sequence[str],
        *,
        embedding: Sequence[float] | None = None,
        scopes: Sequence[str] | None = None,
        lens: Lens | None = None,
        labels: Sequence[str] | None = None,
    ) -> StoredAnswer:
        """Store ``answer`` (synthesised by the caller for ``query``) with the record ids
        it ``cited`` (recall hit ids; each must be current and readable now). ``lens`` and
        ``labels`` are those of the recall it answers: only a recall under the same ones
        reuses it. Embeds ``query`` with ``mem.embedder`` unless ``embedding`` is given."""
        if not isinstance(query, str) or not isinstance(answer, str):
            raise TypeError("query and answer are str")
        ids = _call.strs("cited", cited)
        vector = list(embedding) if embedding is not None else await asyncio.to_thread(self.mem.embedder.embed_query, query)
        opts: dict[str, Any] = _call.clean({"scopes": _call.strs("scopes", scopes), "lens": _call.lens(lens), "labels": _call.strs("labels", labels),
                                       "embeddingModel": self.mem.embedder.name if embedding is None else None})
        return await _call.call_model(self.mem.conn, StoredAnswer, "fn::amem::answers::remember", query, vector, answer, ids, opts)
