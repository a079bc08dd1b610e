"""The client's half of a read, written once for ``Documents.query`` and ``Memory.recall``
(issue 29 item 2): the rewrites a model computes before the round trip (HyDE: the
embedding of an LLM's hypothetical answer; decomposition: sub-questions with their
embeddings, amem_db/llm.py), the query embedding, the one round trip to the stored
read, then the second stage a reranker outside the database runs on its answer
(amem_db/rerank.py). The stored functions (surql/400, surql/450, sharing surql/410_read)
do the rest."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..db import call
from ..llm import ChatProvider, provider_from_env, rewrite_options

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["SecondStage", "either", "read"]

# what runs on the stored read's answer after the round trip (a client reranker), or None
SecondStage = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def either(a: bool | None, b: bool | None) -> bool:
    """An option given under either of its two names (``use_hyde`` / ``hyde``,
    ``decompose_query`` / ``decompose``): on when either is."""
    return bool(a or b)


async def read(
    mem: Memory,
    fn: str,
    query: str,
    opts: dict[str, Any],
    *,
    embed: bool,
    mode: str,
    hyde: bool = False,
    decompose: bool = False,
    llm: ChatProvider | None = None,
    second_stage: SecondStage | None = None,
) -> dict[str, Any]:
    """One read: ``opts`` gains the rewrites asked for (``hyde`` / ``decompose``, by ``llm``,
    else ``AMEM_LLM_URL``; without a provider, or when it fails, the trace says why and the
    query runs as given; ``mode`` is the read's mode as the rewrites judge it: "bm25" runs no
    vector leg), the query is embedded when ``embed`` (with the model's name, which the
    database checks against its own), ``fn(query, embedding, opts)`` makes the round trip,
    and ``second_stage`` (if any) takes its answer. Returns the raw answer."""
    if hyde or decompose:
        opts.update(await rewrite_options(llm or provider_from_env(), mem.embedder, query, mode=mode,
                                          hyde=hyde, decompose=decompose))
    embedding = await mem.embed_query(query) if embed else None
    if embedding is not None:
        opts["embeddingModel"] = mem.embedder.name
    raw = await call(mem.conn, fn, query, embedding, opts)
    return raw if second_stage is None else await second_stage(raw)
