"""The performance benchmark (``amem-db bench``): ingest throughput, query latency,
vector recall, size on disk and peak memory at 1k / 10k / 100k chunks, next
to the raw engine floor and peers on the same data and embeddings.

Systems (each size runs each system in its own subprocess, so peak RSS is
that system's alone):

* ``amem``: the product's query (``fn::amem::documents::query``, one round
  trip, precomputed query vector) per mode, AND the raw engine floor in the
  same database: a bare BM25 SELECT, a bare KNN SELECT, both in one round
  trip, with the same candidate depth as the product (``candidate_pool``,
  256) and also at depth 50 (the probe's floor). The corpus is bulk-loaded
  with plain ``INSERT INTO document/chunk`` batches (same schema, both
  indexes): loading 100k chunks through ``prepare``/``ingest`` (RAKE,
  keywords, edges) would not fit the time budget.
* ``amem-ingest``: the product ingestion path (``prepare`` -> embed ->
  ``ingest``) on whole documents until N chunks are stored: chunks/s with and
  without embedding time. Default sizes 1k and 10k (~120 chunks/s on 2 cores).
  At 1k and 10k chunks it also writes as many memory passages and facts
  through ``fn::amem::facts::write_many`` (batched, real vectors) and times
  ``fn::amem::recall`` (hybrid, facts + passages) beside
  ``documents.query`` in that database (``recall``).
* ``lancedb``: LanceDB, its native FTS index + exact (flat) vector search +
  ``RRFReranker`` hybrid (LanceDB's behaviour until a vector index is created).
* ``lancedb-ann``: the same with an IVF_HNSW_SQ vector index (cosine, LanceDB's
  default parameters): the peer a LanceDB user would run at 100k rows.
* ``python``: the pure-compute floor: bm25s (BM25), numpy exact cosine,
  hnswlib (HNSW with our M / EFC / EF), and their RRF in Python.

Data: passages cut by the product's own chunker (``fn::amem::chunk::split``,
800 / 120 characters) from the shared collections (SciFact, Cranfield, CISI
bodies), embedded with the configured embedder through the disk cache, so a
run after ``amem-db eval`` embeds nothing. Sizes beyond the real passages
repeat real text with fresh ids and copy real vectors plus a small random
perturbation (norm 0.1, cosine ~0.995 to the original), so every point is
distinct and exact ground truth is well defined.

Modules: ``run`` (the orchestrator behind ``amem-db bench`` and the worker
entry ``python -m amem_db.harness.bench worker '{json}'``), ``data`` (passages,
vectors, queries), ``measure`` (latency, recall, memory, the machine),
``amem`` (the product's workers), ``recall`` (memory writes and recall beside
documents.query), ``peers`` (LanceDB, bm25s / numpy / hnswlib)
and ``report`` (bench.json -> report.md, latency.png).
"""
