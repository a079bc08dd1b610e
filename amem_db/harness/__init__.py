"""Tooling behind the ``eval`` and ``bench`` extras: retrieval quality
(``amem-db eval``) and speed next to peers (``amem-db bench``). Not part of the
client API; nothing here is imported by the product.

| module | what |
| --- | --- |
| ``datasets`` | BEIR-layout collections (corpus, queries, qrels) |
| ``query_types`` | the query-type heuristic and the lexical-overlap bucket |
| ``metrics`` | ranx metrics over rankings mapped back to corpus ids |
| ``database`` | the per-dataset database, cached by corpus + embedder + data-shaping SurrealQL |
| ``evaluation`` | every judged query in every mode -> the report dict[str, Any] |
| ``locomo`` | conversation collections (LoCoMo): turns written as memory passages, questions through recall, per category |
| ``report`` | report.md / report.json / report.png, deltas against an earlier report |
| ``common`` | ``percentile``, ``dir_size``, ``json_safe`` (shared with the benchmark) |
| ``bench`` | the benchmark package (``bench/__init__.py`` has its map) |
"""
