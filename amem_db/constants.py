"""Facts that both the SurrealQL and the Python side need, defined once.

The migrator passes every name in ``RENDER_CONTEXT`` into the jinja render of
``surql/`` and ``migrations/``, so a stored function and the Python code read
the same value; there is no second copy to drift. Changing one of these
changes the rendered SurrealQL (and therefore its checksum), so the next
``amem-db migrate`` re-applies what depends on it.
"""

from __future__ import annotations

# k: the spec's default and maximum (documents.query clamps above the maximum)
DEFAULT_K = 10
MAX_K = 50

# a DNF lens has at most this many clauses; the query legs unroll them into
# $c0..$c15 so the engine can test them before decoding a record (surql/_macros.j2)
LENS_SLOTS = 16

# the MIME types the parsers produce (amem_db/parsing): counted by literal from
# the chunk_mime_type index (an index-only count needs a literal value)
MIME_TEXT = "text/plain"
MIME_MARKDOWN = "text/markdown"
MIME_HTML = "text/html"
MIME_PDF = "application/pdf"
MIME_VTT = "text/vtt"
MIME_SRT = "application/x-subrip"
MIME_JSONL = "application/jsonl"
KNOWN_MIME_TYPES: tuple[str, ...] = (MIME_TEXT, MIME_MARKDOWN, MIME_HTML, MIME_PDF, MIME_VTT, MIME_SRT, MIME_JSONL)

# every stored vector field, (table, field): all in one embedding space, so the migrator
# refuses a dimension change while any of them holds a vector (amem_db/migrator.py)
VECTOR_FIELDS: tuple[tuple[str, str], ...] = (
    ("chunk", "embedding"),
    ("audio_chunk", "embedding"),
    ("section", "heading_embedding"),
    ("document", "summary_embedding"),
    ("keyword", "embedding"),
    ("entity", "embedding"),
    ("attribute", "embedding"),
    ("memory_chunk", "embedding"),
    ("passage_version", "embedding"),
)
# the vector fields a KNN (`<|K,EF|>`) reads: one HNSW index each (surql/020), logged and
# rebuilt by index maintenance (surql/060). section.heading_embedding and
# document.summary_embedding are read only by a cosine over given ids (surql/500_graph
# section_signal / summary_signal), so they have none (migrations/0027): a built graph costs
# ~10 KB a vector on disk (docs/BENCHMARKS.md "Where a store's bytes go"), plus a log row per
# write and memory until the engine reopens (docs/ENGINE-ISSUES.md #37). A KNN over a field
# without an index matches every row (#20): tests/test_migrator.py checks that every KNN of
# surql/ reads a field listed here, and that each one listed is read by one.
HNSW_FIELDS: tuple[tuple[str, str], ...] = (
    ("chunk", "embedding"),
    ("audio_chunk", "embedding"),
    ("keyword", "embedding"),
    ("entity", "embedding"),
    ("attribute", "embedding"),
    ("memory_chunk", "embedding"),
    ("passage_version", "embedding"),
)

# HNSW graph parameters (amem_db/settings.py defaults; surql/020_vector_indexes) and the
# search EF of a pool-sized KNN as a multiple of the pool: on a built graph (amem-db
# maintain, docs/ENGINE-ISSUES.md #19) EF = pool gave recall@256 ~0.95 on MiniLM vectors,
# 2 x pool >= 0.98 (docs/BENCHMARKS.md "Vector leg on the graph")
HNSW_M = 12
HNSW_EFC = 150
HNSW_EF_PER_POOL = 2

# index maintenance (amem_db/maintain.py, surql/060_maintain): rebuild an HNSW index
# once this share of its rows was written since its last build (the pending queue
# every KNN scans exactly), and never for fewer rows than MAINTAIN_MIN_ROWS
MAINTAIN_THRESHOLD = 0.2
MAINTAIN_MIN_ROWS = 200

# English stop words dropped from BM25 queries (fn::amem::query::terms) and
# from the evaluation's query-type heuristic
QUERY_STOPWORDS: tuple[str, ...] = tuple("""a about above after again against all am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more most my myself
no nor not now of off on once only or other our ours ourselves out over own s same she should so some such t than
that the their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves""".split())

# documents.query fusion defaults (surql/300_fusion; measured in docs/EVALUATION.md
# "Retrieval quality levers"): rrf | zscore | minmax, and the vectorWeight of a query
# holding an identifier token (None: no query-aware weighting)
DEFAULT_FUSION = "zscore"
DEFAULT_IDENTIFIER_VECTOR_WEIGHT: float | None = 0.1
# embed each chunk as "title / section heading / passage" (amem_db/ingest.py embedding_text);
# the stored text is the source's either way. Part of the eval database key.
EMBED_CONTEXT = False
# the vector leg's default cosine threshold per embedding model (surql/305_calibration),
# by the model name amem_setting:embedding records; others get DEFAULT_THRESHOLD
DEFAULT_THRESHOLD = 0.5
MODEL_THRESHOLDS: dict[str, float] = {"minilm-l6-int8": 0.3}
# BM25 leg pruning (surql/310_termstats): query words held by more than this share of the
# passages are dropped before the full-text query (1.0: off); measured in docs/EVALUATION.md
DEFAULT_BM25_MAX_DF = 1.0

# documents per fn::amem::ingest::batch call (one transaction; surql/255_ingest), the
# most and what the client sends (amem_db/ingest_batch.py; docs/BENCHMARKS-HISTORY.md "Ingest batching")
INGEST_BATCH_MAX = 64
INGEST_PER_TRANSACTION = 4
# round trips of one ingest batch's groups at once (amem_db/ingest_batch.py): the engine runs
# each on a core of its own (issue 25, session 15)
INGEST_LANES = 2
# memory writes per fn::amem::facts::write_many call (one transaction; surql/275_facts, at its end),
# the most and what Facts.write_many sends (docs/BENCHMARKS.md "Batched memory writes")
FACTS_BATCH_MAX = 256
FACTS_PER_TRANSACTION = 16
# what a transaction of Facts.write_many holds by default: a triple weighs 1, a passage 2
# (32 one-fact requests, 16 one-passage ones: amem_db/client/facts.py _weighed)
FACTS_GROUP_WEIGHT = 32
# groups of a client batch written at once when independent (amem_db/client/facts.py
# _Footprint): the engine runs each transaction on a core of its own; 2 gained 1.6-1.75x
# facts/s on 2 cores (issue 25, session 15)
FACTS_IN_FLIGHT = 2

# passages kept per analysed token in a BM25 champion list (surql/315_bm25_lists): N 1,000
# lost 0.005 nDCG@10 on SciFact and nothing on Cranfield / CISI against the engine's
# statement (docs/QUERY-DESIGN.md "BM25 at scale")
BM25_LIST_SIZE = 1000
# the text-only copies that have champion lists and term statistics (surql/310, 315): the
# passage copies the document query reads, and the memory copies recall reads; the BM25
# pruning of very common query words counts the passage copies only (surql/310)
BM25_PASSAGE_TABLES = ("chunk_fts", "audio_chunk_fts")
BM25_LIST_TABLES = (*BM25_PASSAGE_TABLES, "memory_chunk_fts", "attribute_fts")
# BM25 (k1, b) of each full-text index (surql/010), and of the champion lists and recent rows
# of its table (surql/315): the engine's 1.2 / 0.75 but for memory passages, whose length
# does not normalise (b 0): on LoCoMo the evidence turns are the longer ones (median 48
# analysed tokens against 33), and b 0.75 pushed exactly them down (issue 26 lever 4,
# docs/EVALUATION.md "BM25 length normalisation for memory passages")
BM25_DEFAULT_PARAMS = (1.2, 0.75)
BM25_PARAMS: dict[str, tuple[float, float]] = {"memory_chunk_fts": (1.2, 0.0), "memory_chunk_fts_recent": (1.2, 0.0)}

# recall's adjacency signal (surql/450 recall::adjacent): a strong memory passage lends
# adjacentWeight x ADJACENT_DECAY^(d - 1) of its score to the passages d <= 2 places from it in
# its session. 1.0 (the same share at distance 2 as at 1): chosen by leave-one-conversation-out
# on LoCoMo dev among 0.5 / 0.7 / 1.0, every fold picking 1.0; through the product hybrid R@10
# 78.9 -> 80.2, multi-hop 46.8 -> 45.7 (docs/EVALUATION.md "LoCoMo levers (issue 26)")
ADJACENT_DECAY = 1.0

RENDER_CONTEXT: dict[str, object] = {
    "ingest_batch_max": INGEST_BATCH_MAX,
    "facts_batch_max": FACTS_BATCH_MAX,
    "default_k": DEFAULT_K,
    "max_k": MAX_K,
    "lens_slots": LENS_SLOTS,
    "known_mimes": list(KNOWN_MIME_TYPES),
    "hnsw_fields": [list(x) for x in HNSW_FIELDS],
    "query_stopwords": list(QUERY_STOPWORDS),
    "default_fusion": DEFAULT_FUSION,
    "default_identifier_vector_weight": DEFAULT_IDENTIFIER_VECTOR_WEIGHT,
    "default_threshold": DEFAULT_THRESHOLD,
    "model_thresholds": dict(MODEL_THRESHOLDS),
    "default_bm25_max_df": DEFAULT_BM25_MAX_DF,
    "list_size": BM25_LIST_SIZE,
    "bm25_passage_tables": list(BM25_PASSAGE_TABLES),
    "bm25_list_tables": list(BM25_LIST_TABLES),
    "bm25_default_params": list(BM25_DEFAULT_PARAMS),
    "bm25_params": {t: list(p) for t, p in BM25_PARAMS.items()},
    "adjacent_decay": ADJACENT_DECAY,
}
