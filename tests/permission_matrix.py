"""The permission matrix: who may do what to which table, as plain data.

tests/test_permission_matrix.py executes every cell as raw SurrealQL over ws, signed in
as each principal below, against rows the operator seeded in ``org/a`` (the scope under
test), and fails on any table of the migrated database (``INFO FOR DB``) that has no
entry here, on an entry for a table that no longer exists, and on a field it cannot
give a new value to. A new table or edge joins this file the day it is created; the
rules it checks are surql/050_permissions (and migrations/0002, 0006).

Principals (record users of the ``amem`` access):

* ``owner``: read, write and forget ``org/a`` (the most a credential can hold on a scope);
* ``writer``: writes ``org/a`` (so reads it), no forget grant;
* ``reader``: reads ``org/a`` only;
* ``other``: writes ``org/b``, a different scope;
* ``revoked``: held what ``owner`` holds, signed in, then revoked (the live session stays open).

Verbs, per table (the value is the set of principals for which the statement must take
effect; for everybody else it must be refused or do nothing):

* ``select``: ``SELECT * FROM <row>``; allowed = the row comes back (``hidden`` fields
  never do), denied = nothing comes back;
* ``select_scan`` / ``delete_scan``: the same through a table scan (``... FROM <table> WHERE
  record::id(id) = ...``), with the expectation of ``select`` / ``delete``;
* ``select_own`` (rows keyed by the principal): each principal selects its own row;
* ``create``: ``CREATE <table>:<new id> CONTENT <seed>`` with ``$S = ['org/a']``;
  ``create_unscoped``: the same with ``$S = []``; allowed = the operator finds the row;
* ``relate`` (edges): ``RELATE <ends>`` with the seed; ``relate_foreign``: the same once per
  pair of ``foreign_ends`` (one end is a row of ``org/b``: a writer of org/a may not link
  to what it cannot read, whichever end it is);
* ``update``: ``UPDATE <row> SET <field> = <new value>``, once per writable field (every
  field of the table that is neither computed (``VALUE``) nor ``READONLY``; the new value
  is derived from the field's type, or given in ``values``); ``fields`` overrides the
  expectation of single fields; allowed = the operator reads the new value, denied = the
  operator reads the old one and the statement returned nothing the principal may not select;
* ``move_out``: ``UPDATE <row> SET scopes = ['org/b']`` (out of the writer's region);
* ``delete``: ``DELETE <row>``; ``delete_unscoped``: the same on a row with no scopes.

Rows: ``seed`` is the SurrealQL object the operator creates rows from (``$S``: scopes,
``$me``: a principal's record id as a string, ``$vec``: a vector of the recorded
embedding dimension). Rows keyed by a caller (``rows: "writer"``) all belong to ``writer``: each
principal tries them, only ``writer`` owns them. ``target`` names one fixed row for
select, update and move instead of the seeded ones.
"""

from __future__ import annotations

PRINCIPALS: dict[str, dict] = {
    "owner": {"read": ["org/a"], "write": ["org/a"], "forget": ["org/a"]},
    "writer": {"read": [], "write": ["org/a"]},
    "reader": {"read": ["org/a"], "write": []},
    "other": {"read": [], "write": ["org/b"]},
    "revoked": {"read": [], "write": ["org/a"], "forget": ["org/a"]},
}
REVOKED = "revoked"

NOBODY: frozenset[str] = frozenset()
READERS = frozenset({"owner", "writer", "reader"})  # every live principal whose grants cover org/a
WRITERS = frozenset({"owner", "writer"})  # write org/a
FORGETTERS = frozenset({"owner"})  # write and forget org/a
LIVE_WRITERS = frozenset({"owner", "writer", "other"})  # any live principal with a write grant
LIVE = frozenset({"owner", "writer", "reader", "other"})
ONLY_WRITER = frozenset({"writer"})  # rows keyed by a caller all belong to `writer`

_DOC = "{text: 'seed text', mime_type: 'text/plain', content_hash: 'h0', scopes: $S}"
_SCOPED = {"select": READERS, "create": WRITERS, "update": WRITERS, "move_out": NOBODY, "delete": WRITERS}
# typed memory: written like the others, erased only by a forget (purge); the soft-forget
# field only by a forgetter
_MEMORY = {**_SCOPED, "delete": FORGETTERS}
_FORGOTTEN = {"forgotten_at": FORGETTERS}
# full-text copies: read like their source rows, written only by the sync events
_COPY = {"select": READERS, "create": NOBODY, "update": NOBODY, "move_out": NOBODY, "delete": NOBODY}
# an edge's ends never change (the engine ignores the change, for everybody)
_ENDS = {"in": NOBODY, "out": NOBODY}
_EDGE = {"select": READERS, "relate": WRITERS, "relate_foreign": NOBODY, "update": WRITERS, "move_out": NOBODY,
         "delete": WRITERS}
# shared nodes (keyword, entity): created without scopes by any writer, never changed by a
# credential (the events keep their scopes), scopes never readable
_NODE = {"select": READERS, "create": NOBODY, "create_unscoped": LIVE_WRITERS, "update": NOBODY, "move_out": NOBODY,
         "hidden": ["scopes", "scope_keys"]}
_NOTHING = {"select": NOBODY, "create": NOBODY, "update": NOBODY, "delete": NOBODY}

MATRIX: dict[str, dict] = {
    # --- content (migrations/0001) ------------------------------------------------------
    "document": {**_SCOPED, "seed": _DOC},
    "section": {**_SCOPED, "seed": "{document: document:document_spare, heading: 'h', char_start: 0, char_end: 4, position: 0, "
                                   "level: 1, scopes: $S}"},
    "chunk": {**_SCOPED, "seed": "{document: document:document_spare, text: 'seed text', char_start: 0, char_end: 4, position: 0, "
                                 "mime_type: 'text/plain', scopes: $S}"},
    "audio_chunk": {**_SCOPED, "seed": "{document: document:document_spare, text: 'seed text', char_start: 0, char_end: 4, "
                                       "position: 0, start_s: 0.0, end_s: 1.0, mime_type: 'audio/wav', scopes: $S}"},
    # --- passage history (migrations/0011): ingest copies a replaced version's passages
    # with the caller's rights, so a writer of the region writes them like chunks
    "passage_version": {**_SCOPED, "seed": "{document: document:document_spare, kind: 'chunk', text: 'seed text', char_start: 0, "
                                           "char_end: 4, position: 0, mime_type: 'text/plain', content_hash: 'h0', "
                                           "recorded_at: d'2024-01-01T00:00:00Z', replaced_at: d'2024-02-01T00:00:00Z', scopes: $S}"},
    "keyword": {**_NODE, "seed": "{text: 'Seed Phrase', normalised: rand::string(16), scopes: $S}",
                "delete": NOBODY, "delete_unscoped": LIVE_WRITERS},  # orphans only (ingest drops them)
    "entity": {**_NODE, "seed": "{name: 'Seed Node', name_norm: 'seed node', type: 'person', scopes: $S}",
               "delete": NOBODY, "delete_unscoped": NOBODY},  # only the entity_scope_sync event deletes a node
    # --- full-text copies (migrations/0004) ---------------------------------------------
    "chunk_fts": {**_COPY, "seed": "{document: document:document_spare, text: 'seed text', mime_type: 'text/plain', scopes: $S}"},
    "audio_chunk_fts": {**_COPY, "seed": "{document: document:document_spare, text: 'seed text', mime_type: 'audio/wav', "
                                         "scopes: $S}"},
    "memory_chunk_fts": {**_COPY, "seed": "{text: 'seed text', scopes: $S}"},
    "attribute_fts": {**_COPY, "seed": "{entity: entity:entity_spare, text: 'seed text', scopes: $S}"},
    # --- BM25 champion lists and the rows written since their build (migrations/0018): read
    # like the passages they list, written only by the operator's build and the sync events
    "chunk_fts_recent": {**_COPY, "seed": "{document: document:document_spare, text: 'seed text', mime_type: 'text/plain', scopes: $S}"},
    "audio_chunk_fts_recent": {**_COPY, "seed": "{document: document:document_spare, text: 'seed text', mime_type: 'audio/wav', "
                                                "scopes: $S}"},
    "chunk_fts_gone": {**_COPY, "seed": "{scopes: $S}"},
    "audio_chunk_fts_gone": {**_COPY, "seed": "{scopes: $S}"},
    "bm25_list": {**_COPY, "values": {"top": "[{c: 'k9', s: 2.5}]"}, "seed": "{top: [{c: 'k1', s: 1.5}], scopes: $S}"},
    # the memory copies' (migrations/0021)
    "memory_chunk_fts_recent": {**_COPY, "seed": "{text: 'seed text', scopes: $S}"},
    "attribute_fts_recent": {**_COPY, "seed": "{entity: entity:entity_spare, text: 'seed text', scopes: $S}"},
    "memory_chunk_fts_gone": {**_COPY, "seed": "{scopes: $S}"},
    "attribute_fts_gone": {**_COPY, "seed": "{scopes: $S}"},
    # --- typed memory (migrations/0005, 0007) --------------------------------------------
    "attribute": {**_MEMORY, "fields": _FORGOTTEN,
                  "seed": "{entity: entity:entity_spare, key: 'role', key_norm: 'role', value: 'v0', text: 'Seed: role = v0', "
                          "scopes: $S}"},
    "memory_chunk": {**_MEMORY, "fields": _FORGOTTEN,
                     "seed": "{text: 'seed text', write: 'w0', char_start: 0, char_end: 4, position: 0, scopes: $S}"},
    "entity_name": {**_MEMORY, "fields": _FORGOTTEN,
                    "seed": "{entity: entity:entity_spare, name: 'Seed Node', name_norm: 'seed node', scopes: $S}"},
    "uncertainty": {**_MEMORY, "seed": "{entity: entity:entity_spare, key_norm: 'role', a: attribute:attribute_spare, "
                                       "b: attribute:attribute_spare, scopes: $S}"},
    "fact_key": {**_SCOPED, "seed": "{key: 'role', multi_valued: false, scopes: $S}"},
    # recall's reinforcement rows (migrations/0008): written only by the recall_reinforce event
    "reinforcement": {**_COPY, "seed": "{record: attribute:attribute_spare, importance: 0.5, last_reinforced_at: "
                                       "d'2020-01-01T00:00:00Z', times: 1, scopes: $S}"},
    # recall's stored answers (migrations/0013): read only under the maker's exact read
    # grants (`reader`, computed from $auth for a credential), never changed by a credential
    "answer": {**_SCOPED, "update": NOBODY, "values": {"cited": "[attribute:attribute_spare]", "docs": "[{document: 'x'}]",
                                                     "embedding": "array::repeat(0.5, array::len(embedding))"},
               "seed": "{query: 'q0', embedding: $vec, answer: 'a0', cited: [], reader: crypto::sha256('org/a'), scopes: $S}"},
    # --- edges ---------------------------------------------------------------------------
    # the keyword end is not tested (its id is its text): foreign = a document of org/b
    "knowledge_has_keyword": {**_EDGE, "fields": _ENDS, "seed": "{score: 0.5, scopes: $S}",
                              "ends": ("document:document_spare", "keyword:keyword_spare"),
                              "foreign_ends": [("document:document_bspare", "keyword:keyword_spare")]},
    "document_link": {**_EDGE, "fields": _ENDS, "seed": "{href: 'seed.md', scopes: $S}",
                      "ends": ("document:document_spare", "document:document_alt"),
                      "foreign_ends": [("document:document_bspare", "document:document_spare"),
                                       ("document:document_spare", "document:document_bspare")]},
    # a relation is a fact: erased only by a forget
    "relation": {**_EDGE, "delete": FORGETTERS, "fields": {**_ENDS, **_FORGOTTEN},
                 "seed": "{kind: 'knows', key_norm: 'knows', text: 'Seed knows Seed', scopes: $S}",
                 "ends": ("entity:entity_spare", "entity:entity_alt"),
                 "foreign_ends": [("entity:entity_bspare", "entity:entity_spare"), ("entity:entity_spare", "entity:entity_bspare")]},
    # mentions are derived links the mention matcher rebuilds: the write region suffices
    "mentions": {**_EDGE, "fields": _ENDS, "seed": "{char_start: 0, char_end: 4, scopes: $S}",
                 "ends": ("memory_chunk:memory_chunk_spare", "entity:entity_spare"),
                 "foreign_ends": [("memory_chunk:memory_chunk_bspare", "entity:entity_spare"),
                                  ("memory_chunk:memory_chunk_spare", "entity:entity_bspare")]},
    # --- rows of a caller, not of a scope: they all belong to `writer` ----------------------
    # idempotency rows: a principal reads and writes its own (any principal may record its
    # own write, a reader included); it cannot hand a row to another caller; no delete
    "memory_write": {"rows": "writer", "select": ONLY_WRITER, "create": LIVE, "update": ONLY_WRITER, "delete": NOBODY,
                     "fields": {"caller": NOBODY},
                     "seed": "{key: 'k0', caller: $me, body_hash: 'h0', write: 'w0', response: {}}"},
    # traces: read and create only one's own; never changed or deleted
    "retrieval_trace": {"rows": "writer", "select": ONLY_WRITER, "create": LIVE, "update": NOBODY, "delete": NOBODY,
                        "values": {"tier": "4", "tiers": "{changed: true}", "escalated": "true"},  # the ladder's fields (0013)
                        "seed": "{query: 'q0', mode: 'query', options: {}, legs: {}, hits: [], timings: {}, caller: $me, "
                                "scopes: $S}"},
    # trace feedback (migrations/0012): like traces, a principal reads and writes its own
    # verdicts (a reader included: judging a hit is part of reading); it cannot hand one to
    # another caller; no delete
    "trace_feedback": {"rows": "writer", "select": ONLY_WRITER, "create": LIVE, "update": ONLY_WRITER, "delete": NOBODY,
                       "fields": {"caller": NOBODY}, "values": {"hit": "chunk:chunk_alt", "verdict": "'wrong'"},
                       "seed": "{trace: 'retrieval_trace:t0', hit: chunk:chunk_spare, verdict: 'useful', query: 'q0', "
                               "query_norm: 'q0', caller: $me, scopes: $S}"},
    # --- bookkeeping -----------------------------------------------------------------------
    # a principal reads its own row (never key_hash) while it is not revoked; changes nothing,
    # above all not its own grants
    "amem_principal": {"rows": "writer", "target": "amem_principal:writer", "select": ONLY_WRITER, "select_own": LIVE,
                       "create": NOBODY, "update": NOBODY, "delete": NOBODY, "hidden": ["key_hash"],
                       "values": {"read": "['org']", "write": "['org']", "forget": "['org']"},
                       "seed": "{name: rand::string(16), key_hash: 'x', read: ['org'], write: ['org']}"},
    # the schema and embedding settings are readable (the functions need them), nothing writable
    "amem_setting": {"target": "amem_setting:schema", "select": LIVE, "create": NOBODY, "update": NOBODY,
                     "delete": NOBODY, "values": {"matrix_note": "'changed'"}, "seed": "{matrix_note: 'seed'}"},
    "amem_migration": {**_NOTHING, "values": {"checksum": "'changed'"}, "seed": "{checksum: 'seed'}"},
    "amem_lock": {**_NOTHING, "values": {"holder": "'changed'"}, "seed": "{holder: 'seed'}"},
    # index maintenance (migrations/0014): operator bookkeeping; the write log is filled by
    # events with owner rights, so a tenant's vector writes need no permission on it
    "amem_index_write": {**_NOTHING, "values": {"index": "'changed'"}, "seed": "{index: 'seed'}"},
    "amem_index_state": {**_NOTHING, "values": {"tb": "'changed'", "field": "'changed'"},
                         "seed": "{tb: 'chunk', field: 'embedding'}"},
    # BM25 pruning's document frequencies (migrations/0016): every live principal reads them
    # (the legs run with its rights; keys are token hashes, docs/SECURITY.md finding 10),
    # only the operator's maintain writes them
    "term_stat": {"select": LIVE, "create": NOBODY, "update": NOBODY, "delete": NOBODY, "values": {"df": "7"},
                  "seed": "{df: 3}"},
}

# new values for fields whose type alone does not give a good one
VALUES: dict[str, str] = {
    "scopes": "['org/a/matrix']",  # still inside the writer's region: `move_out` tests leaving it
}
