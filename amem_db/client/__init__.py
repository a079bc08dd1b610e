"""The thin async client. Every read is one round trip to one stored function.

    async with await Memory.open(migrate=True) as mem:      # the embedded default
        await mem.documents.ingest_file("docs/returns.md", scopes=["org/acme"])
        await mem.documents.ingest_text("Gift cards cannot be returned.", source="faq#gift-cards")
        response = await mem.documents.query("return window", mode="hybrid", k=5)
        for hit in response.results:
            print(hit.score, hit.document.title, hit.chunk.text[:80])

A path is never guessed from a string: ``ingest_file`` reads a file,
``ingest_text`` stores text, ``ingest_paths`` walks files and folders. Where a
list belongs (``scopes``, ``lens`` clauses, ``graph_edges``, id lists, paths) a
str is a ``TypeError``, never a list of its characters. Results are the
pydantic models of ``amem_db.models``. ``amem_db.SyncMemory`` is the same
surface without ``await``.

One module per namespace: ``memory`` (``Memory``: recall, remember, forget, inspect,
maintain), ``documents``, ``keywords``, ``facts``, ``entities``, ``traces``, ``answers``;
the helpers they share (one round trip validated into its model, the argument checks)
in ``_call``. Import from here: ``from amem_db.client import Memory``.
"""

from __future__ import annotations

from ._call import Lens, Location, When, time_options
from .answers import Answers
from .documents import Documents, QueryFilter
from .entities import Entities
from .facts import Facts
from .keywords import Keywords
from .memory import Memory
from .traces import Traces

__all__ = ["Answers", "Documents", "Entities", "Facts", "Keywords", "Lens", "Location", "Memory", "QueryFilter", "Traces",
           "When", "time_options"]
