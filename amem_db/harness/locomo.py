"""LoCoMo (Maharana et al., ACL 2024) as an ``amem-db eval`` collection of the
*conversation* kind: dialog turns become memory passages, questions are
answered by recall, and evidence retrieval is scored per question category.

A conversation collection is a BEIR-like folder whose corpus lines carry
``metadata = {conversation, session, speaker, observed_at, dia_id}``
(``locomo`` in the shared datasets folder, ``../shared/datasets`` or
``$AMEM_DATASETS``; SOURCE.md there). What one run does:

1. **Write, cached.** Every turn of the split's conversations goes through the
   product's batched memory write path, ``mem.facts.write_many`` (=
   ``fn::amem::facts::prepare`` + embed + ``fn::amem::facts::write_many``, which stores
   each request exactly as ``fn::amem::facts::write``), one request per turn (``turn_request``):
   text ``"<speaker>: <turn text>"``, ``observed_at`` = the session's date,
   ``session_id`` = conversation + session, ``role`` = user, ``source`` =
   ``{kind: turn, ref: <turn _id>}``, one scope per conversation
   (``locomo/conv-26``) and ``category`` = knowledge (the default, context,
   is not current after 7 days: every 2023 turn would be expired at read time).
   Texts are embedded per batch first, so each write finds its vector in the
   embedding cache. The database is cached like a document collection's
   (``database.open_eval_database``), keyed by every request written, the
   embedder and the data-shaping SurrealQL.
2. **Recall.** Each judged question, per mode, through the unified recall with
   the question's conversation as the lens (``recall_turn_ids``); memory
   passage hits map back to their turn through ``citation.source.ref``. The
   recall's ``now`` is the conversation's last session date (``last_session``):
   the questions are asked after the conversation, and the wall clock (years
   later) would make "last year" in a question name a year no turn is in. The
   query-window options (``window``: queryWindow, strictWindow, windowWeight)
   pass through; the phrase recall read is kept per question.
3. **Score with ranx** (``metrics.evaluate``): Recall@5/10/25/50 and nDCG@10,
   overall (categories 1-4, the qrels file), overall with the adversarial
   category, and per category. Category 5 has no qrels rows; its evidence
   (the turn holding the misleading fact) comes from the adversarial file's
   ``metadata.evidence``.

Only the split's own files are read (``qrels/<split>.tsv``, its queries, the
adversarial questions of its conversations); corpus lines of other
conversations are never written.

**Observations** (issue 26 lever 6, ``amem-db eval ... --observations passages|facts``):
``observations.jsonl`` beside the corpus holds the dataset's own LLM-written observations,
each with the turns it was made from (``metadata.evidence``). They are written through the
same ``mem.facts.write_many`` beside the turns (or, ``--observations-only``, instead of them),
as a knowledge passage or as a typed fact (``observation_request``), each carrying
``source = {kind: upsert, ref: <observation id>}`` and its evidence as labels
(``observation``, ``evidence:<turn id>``). Scoring reads the evidence back from the stored
rows (``stored_evidence``) and maps every hit to turns (``hit_turns``): a turn to itself, an
observation to its evidence turns at the hit's rank. A turn already credited at a better rank
is not credited again; k counts **hits** (the reader's budget: an observation and its own
evidence turn both in the top 10 use two of the 10; ``turn_ranking(..., count="hits")`` keeps
the slot with a placeholder). The same rankings with k counted in distinct turns are reported
beside (``metrics_k_in_turns``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .common import dir_size, percentile
from .database import DEFAULT_DB_DIR, Prepared, Progress, open_eval_database, schema_checksum
from .datasets import _natural_key, load_dataset
from .evaluation import ModeRun, check_run, engine_info
from .metrics import evaluate

KIND = "conversations"
SCOPE_ROOT = "locomo"
# the integer -> name mapping of the LoCoMo code (SOURCE.md "Category mapping"),
# NOT the numbered list of the paper's section 4.1
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
PAPER_COLUMN_ORDER = (4, 1, 2, 3, 5)  # the paper's tables: single-hop first
# prefix (the default since issue 26): "Caroline: ..." and the write's speaker (a person entity
# with a mentions edge to the turn); prefix-text: the prefix alone (no entity); entity: the
# bare text with the speaker entity; none: the bare text alone
SPEAKER_MODES = ("prefix", "prefix-text", "entity", "none")
ENTITY_SPEAKER_MODES = ("prefix", "entity")  # the modes whose writes carry the speaker entity (turn_request)
RECALL_MODES = ("bm25", "vector", "hybrid", "graph")
DEFAULT_RECALL_MODES = ("bm25", "vector", "hybrid")
MAX_RECALL_K = 50  # recall refuses k over 50
# observations (issue 26 lever 6): a knowledge memory passage each, or a typed fact each
# (an attribute `observation` of the speaker, a key declared multi-valued)
OBSERVATION_KINDS = ("passages", "facts")
OBSERVATIONS_FILE = "observations.jsonl"
OBSERVATION_KEY = "observation"
OBSERVATION_LABEL = "observation"
EVIDENCE_LABEL = "evidence:"
# Paper Table 3, retriever DRAGON, unit "Dialog" (one turn), R@k in % over all
# 10 conversations, per conversation database (SOURCE.md "Published retrieval
# baselines"); "overall" there also counts category 5 and unjudged questions.
PAPER_DIALOG_RECALL: dict[int, dict[int | str, float]] = {
    5: {4: 68.0, 1: 35.4, 2: 70.4, 3: 33.1, 5: 43.9, "overall": 56.7},
    10: {4: 77.7, 1: 46.6, 2: 77.3, 3: 40.8, 5: 54.7, "overall": 66.2},
    25: {4: 87.1, 1: 62.5, 2: 83.5, 3: 52.6, 5: 66.3, "overall": 76.7},
    50: {4: 91.1, 1: 73.0, 2: 89.6, 3: 61.7, 5: 72.5, "overall": 82.7},
}


@dataclass(frozen=True)
class Turn:
    id: str  # "<conversation>:<dia_id>", the corpus _id
    conversation: str
    session: int
    speaker: str
    observed_at: str
    text: str


@dataclass(frozen=True)
class Observation:
    id: str  # "<conversation>:O<session>:<speaker>:<i>", the observations file's _id
    conversation: str
    session: int
    speaker: str
    observed_at: str
    text: str
    evidence: tuple[str, ...]  # the turn ids it was made from


@dataclass(frozen=True)
class Question:
    id: str
    conversation: str
    category: int
    text: str


@dataclass
class Conversations:
    """One split of a conversation collection: its turns, judged questions and evidence."""

    name: str
    path: Path
    split: str
    corpus_path: Path
    turns: list[Turn]
    questions: dict[str, Question]  # judged questions, categories 1-5, in id order
    qrels: dict[str, dict[str, int]]  # question -> evidence turn ids (category 5 from its metadata)
    adversarial_file: str | None = None
    adversarial_without_evidence: list[str] = field(default_factory=list)

    @property
    def conversations(self) -> list[str]:
        return sorted({q.conversation for q in self.questions.values()}, key=_natural_key)

    def last_session(self, conversation: str) -> str:
        """The observed time of the conversation's last session (ISO 8601, UTC; the
        corpus writes every date as YYYY-MM-DDTHH:MM:SSZ, so string order is time order)."""
        return max(t.observed_at for t in self.turns if t.conversation == conversation)

    def by_category(self) -> dict[int, list[str]]:
        """Question ids per category (1-5), each in id order."""
        out: dict[int, list[str]] = {c: [] for c in CATEGORY_NAMES}
        for qid, q in self.questions.items():
            out.setdefault(q.category, []).append(qid)
        return out


def is_conversation_collection(path: str | Path) -> bool:
    """True when the corpus' first line is a dialog turn (metadata with conversation, dia_id, speaker)."""
    corpus = Path(path) / "corpus.jsonl"
    if not corpus.is_file():
        return False
    with open(corpus) as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        meta = json.loads(first).get("metadata") or {}
    except (json.JSONDecodeError, AttributeError):
        return False
    return isinstance(meta, dict) and {"conversation", "dia_id", "speaker", "observed_at"} <= set(meta)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _adversarial_file(path: Path, split: str) -> Path | None:
    """``queries-adversarial-<split>.jsonl``, else the unsuffixed file (the dev split's name)."""
    for name in (f"queries-adversarial-{split}.jsonl", "queries-adversarial.jsonl"):
        if (path / name).is_file():
            return path / name
    return None


def load_conversations(path: str | Path, split: str | None = None, *, limit_queries: int | None = None) -> Conversations:
    """Read one split: qrels and query texts through ``datasets.load_dataset``,
    categories from ``queries.jsonl`` metadata, category 5 and its evidence from
    the adversarial file, and the turns of the conversations those questions
    belong to (only those). ``limit_queries`` keeps the first N questions by id."""
    path = Path(path)
    ds = load_dataset(path, split)
    meta = {str(o["_id"]): o.get("metadata") or {} for o in _read_jsonl(path / "queries.jsonl")}
    questions = {q: Question(q, str(meta[q]["conversation"]), int(meta[q]["category"]), text)
                 for q, text in ds.queries.items()}
    qrels = {q: dict(ds.qrels[q]) for q in questions}
    convs = {q.conversation for q in questions.values()}
    corpus = _read_jsonl(ds.corpus_path)
    turn_ids = {str(o["_id"]) for o in corpus if (o.get("metadata") or {}).get("conversation") in convs}
    adv_path = _adversarial_file(path, ds.split)
    no_evidence: list[str] = []
    for o in _read_jsonl(adv_path) if adv_path else []:
        m = o.get("metadata") or {}
        if m.get("conversation") not in convs:
            continue  # another split's conversation
        qid = str(o["_id"])
        evidence = [f"{m['conversation']}:{e}" for e in m.get("evidence") or []]
        evidence = [e for e in evidence if e in turn_ids]
        if not evidence:
            no_evidence.append(qid)
            continue
        questions[qid] = Question(qid, str(m["conversation"]), int(m.get("category", 5)), o["text"])
        qrels[qid] = dict.fromkeys(evidence, 1)
    order = sorted(questions, key=_natural_key)[:limit_queries]
    questions = {q: questions[q] for q in order}
    kept = {q.conversation for q in questions.values()}
    turns = [Turn(str(o["_id"]), m["conversation"], int(m["session"]), str(m["speaker"]), str(m["observed_at"]),
                  o.get("text") or "")
             for o in corpus if (m := o.get("metadata") or {}).get("conversation") in kept]
    return Conversations(name=ds.name, path=path, split=ds.split, corpus_path=ds.corpus_path, turns=turns,
                         questions=questions, qrels={q: qrels[q] for q in order},
                         adversarial_file=adv_path.name if adv_path else None, adversarial_without_evidence=no_evidence)


def load_observations(cs: Conversations) -> list[Observation]:
    """The observations of the split's loaded conversations (``observations.jsonl`` beside the
    corpus), in file order; evidence kept only where it names a loaded turn. An observation
    left without evidence is refused: it could never be scored."""
    path = cs.path / OBSERVATIONS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no observations file (--observations needs one beside corpus.jsonl)")
    convs, turns = set(cs.conversations), {t.id for t in cs.turns}
    out = []
    for o in _read_jsonl(path):
        m = o.get("metadata") or {}
        if m.get("conversation") not in convs:
            continue  # another split's conversation: never read into the database
        evidence = tuple(e for e in m.get("evidence") or [] if e in turns)
        if not evidence:
            raise ValueError(f"{path}: observation {o['_id']} names no turn of {m['conversation']} as evidence")
        out.append(Observation(str(o["_id"]), str(m["conversation"]), int(m["session"]), str(m["speaker"]),
                               str(m["observed_at"]), str(o["text"]).strip(), evidence))
    return out


# --- writing -------------------------------------------------------------------------------

def conversation_scope(conversation: str) -> str:
    return f"{SCOPE_ROOT}/{conversation}"


def lens_of(conversation: str) -> list[list[str]]:
    """The recall lens of one conversation: its scope alone (each conversation is its own memory, as in the paper)."""
    return [[conversation_scope(conversation)]]


def turn_request(turn: Turn, *, speaker: str = "prefix-text") -> dict[str, Any]:
    """The memory write of one turn. The default, ``prefix-text``, writes "Caroline: ...";
    ``prefix`` also gives the write its ``speaker`` (a person entity linked to the turn),
    because the questions name the person ("What did Caroline research?") while a turn
    rarely names its own speaker. On LoCoMo dev hybrid R@10 is 80.2 without the entities and
    79.2 with them (R@5 +1.3; recall's speakerWeight 0.2), a recall takes ~1.2x its time
    without them, and only with them does mode graph find anything (57.4 R@10;
    docs/EVALUATION.md "LoCoMo levers (issue 26)"), so the entities stay opt-in.
    ``category`` knowledge: the default, context, stops being current 7 days after
    ``observed_at``."""
    if speaker not in SPEAKER_MODES:
        raise ValueError(f"speaker must be one of {', '.join(SPEAKER_MODES)}")
    text = f"{turn.speaker}: {turn.text}" if speaker in ("prefix", "prefix-text") else turn.text
    request: dict[str, Any] = {"speaker": turn.speaker} if speaker in ENTITY_SPEAKER_MODES else {}
    return request | {
        "text": text,
        "observed_at": turn.observed_at,
        "session_id": f"{turn.conversation}:session-{turn.session}",
        "role": "user",  # both speakers are users of the agent; who spoke is in the text
        "source": {"kind": "turn", "ref": turn.id},
        "scopes": [conversation_scope(turn.conversation)],
        "category": "knowledge",
    }


def observation_request(o: Observation, *, kind: str = "passages") -> dict[str, Any]:
    """The memory write of one observation. ``passages``: its text as a knowledge memory
    passage; ``facts``: an attribute ``observation`` of the speaker (a person entity) whose
    value is the text (the key is declared multi-valued before writing, or each observation
    would supersede the speaker's previous one). Both carry ``source = {kind: upsert, ref:
    <observation id>}``, the session's date as ``observed_at``, the conversation's scope and the
    evidence as labels (``observation``, ``evidence:<turn id>``: a write has no free metadata;
    recall filters by labels only when asked to). No ``session_id``: the adjacency signal
    orders a session's passages by write order, and an observation is not a turn of it."""
    if kind not in OBSERVATION_KINDS:
        raise ValueError(f"observations must be one of {', '.join(OBSERVATION_KINDS)}")
    body: dict[str, Any] = {"text": o.text} if kind == "passages" else {
        "triples": [{"entity": {"type": "person", "name": o.speaker}, "key": OBSERVATION_KEY, "value": o.text}]}
    return body | {
        "observed_at": o.observed_at,
        "source": {"kind": "upsert", "ref": o.id},
        "scopes": [conversation_scope(o.conversation)],
        "category": "knowledge",
        "labels": [OBSERVATION_LABEL, *(EVIDENCE_LABEL + e for e in o.evidence)],
    }


def collection_key(requests: list[dict[str, Any]], embedder_name: str) -> str:
    """SHA-256 over every request written (in order), the embedder and the data-shaping SurrealQL."""
    h = hashlib.sha256()
    for r in requests:
        h.update(json.dumps(r, sort_keys=True).encode() + b"\n")
    h.update(f"embedder={embedder_name}\nschema={schema_checksum()}\n".encode())
    return h.hexdigest()


async def written_turn_ids(conn: Any) -> set[str]:
    """Turn ids already stored as memory passages (a re-run against a server skips them)."""
    (rows,) = await conn.query("SELECT VALUE source.ref FROM memory_chunk WHERE source.kind = 'turn'")
    return {str(r) for r in rows or [] if r is not None}


async def written_refs(conn: Any) -> set[str]:
    """Every source ref already stored, as a memory passage (turns, observations) or as a
    fact (observations written as facts)."""
    rows = await conn.query("SELECT VALUE source.ref FROM memory_chunk WHERE source != NONE; "
                            "SELECT VALUE source.ref FROM attribute WHERE source != NONE;")
    return {str(r) for part in rows for r in part or [] if r is not None}


async def stored_evidence(conn: Any) -> dict[str, list[str]]:
    """``{observation id: [evidence turn ids]}`` read back from the stored rows' labels (memory
    passages and facts written by ``observation_request``): what scoring maps an observation hit by."""
    rows = await conn.query(
        "SELECT source.ref AS ref, labels FROM memory_chunk WHERE labels CONTAINS $l; "
        "SELECT source.ref AS ref, labels FROM attribute WHERE labels CONTAINS $l;", {"l": OBSERVATION_LABEL})
    return {str(r["ref"]): sorted(x[len(EVIDENCE_LABEL):] for x in r["labels"] if x.startswith(EVIDENCE_LABEL))
            for part in rows for r in part or []}


async def write_turns(mem: Any, requests: list[dict[str, Any]], *, batch_size: int = 128,
                      progress: Progress | None = None) -> dict[str, Any]:
    """Write the requests through ``mem.facts.write_many`` (the product's batched write:
    per batch one prepare round trip, one embedder call, then one transaction per group
    of requests), in order. The texts are embedded first (``mem.embedder`` is a
    CachedEmbedder, so write_many's own embedding step finds them cached and the
    embedding time is reported apart). Turns already stored are skipped. Any failed
    request raises its typed error (nothing of it was stored)."""
    done = await written_refs(mem.conn)
    todo = [r for r in requests if r["source"]["ref"] not in done]
    if progress:
        progress("turns", {"total": len(todo)})
    started = time.perf_counter()
    embed_s = engine_s = 0.0
    passages = facts = 0
    for at in range(0, len(todo), batch_size):
        batch = todo[at: at + batch_size]
        t0 = time.perf_counter()
        await asyncio.to_thread(mem.embedder.embed_documents, [r["text"] for r in batch if "text" in r])
        t1 = time.perf_counter()
        written = await mem.facts.write_many(batch)
        if written.errors:
            raise written.errors[0].exception()
        passages, facts = passages + written.passages, facts + written.facts
        embed_s, engine_s = embed_s + t1 - t0, engine_s + time.perf_counter() - t1
        if progress:
            progress("turn", {"done": at + len(batch), "passages": passages})
    return {"turns": len(requests), "written": len(todo), "already_stored": len(requests) - len(todo),
            "passages": passages, "facts": facts, "seconds": round(time.perf_counter() - started, 2),
            "embed_seconds": round(embed_s, 2), "engine_seconds": round(engine_s, 2)}


async def prepare_conversations(cs: Conversations, embedder: Any, *, speaker: str = "prefix-text", url: str | None = None,
                                db_dir: Path = DEFAULT_DB_DIR, fresh: bool = False,
                                progress: Progress | None = None, observations: str | None = None,
                                observations_only: bool = False) -> Prepared:
    """Open (or build) the collection's database with every turn written, and a Memory on it.
    ``observations`` (passages | facts): the split's observations written after the turns
    (``observations_only``: instead of them), as ``observation_request`` shapes them."""
    from amem_db.client import Memory
    from amem_db.connection import close_quietly
    from amem_db.embedding import CachedEmbedder

    if observations_only and observations is None:
        raise ValueError("observations_only needs observations (passages or facts)")
    cached = embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)
    requests = [] if observations_only else [turn_request(t, speaker=speaker) for t in cs.turns]
    if observations is not None:
        requests += [observation_request(o, kind=observations) for o in load_observations(cs)]
    key = collection_key(requests, cached.name)
    opened = await open_eval_database(cs.name, key, cached, url=url, db_dir=db_dir, fresh=fresh)
    try:
        mem = Memory(opened.conn, embedder=cached, target=opened.target)
        if opened.complete and opened.marker is not None:
            return Prepared(mem, opened.target.url, key, True, json.loads(opened.marker.read_text()), opened.db_path)
        cached.reset_stats()
        if observations == "facts":  # else each observation of a speaker supersedes the one before
            await mem.facts.declare_key(OBSERVATION_KEY, multi_valued=True)
        ingest = await write_turns(mem, requests, progress=progress)
        ingest |= {"conversations": cs.conversations, "speaker": speaker, "embedder": cached.name,
                   "observations": observations, "observations_only": observations_only,
                   "embedding_cache_hits": cached.stats.hits, "embedding_cache_misses": cached.stats.misses,
                   "completed_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        if opened.marker is not None:
            opened.marker.write_text(json.dumps(ingest, indent=2))
        return Prepared(mem, opened.target.url, key, False, ingest, opened.db_path)
    except BaseException:
        await close_quietly(opened.conn)
        raise


# --- recall and scoring -----------------------------------------------------------------

def _as_json(hit: Any) -> dict[str, Any]:
    """A recall hit as its JSON shape (a client model is dumped by alias)."""
    out: dict[str, Any] = hit.model_dump(by_alias=True, mode="json") if hasattr(hit, "model_dump") else hit
    return out


def turn_id_of(hit: Any) -> str | None:
    """The turn id of a recall hit (a client model or its JSON): a memory
    passage's ``citation.source.ref`` when its source is a turn; None for any other hit."""
    hit = _as_json(hit)
    if hit.get("source") != "memory_chunk":
        return None
    src = (hit.get("citation") or {}).get("source") or {}
    return str(src["ref"]) if src.get("ref") is not None and src.get("kind", "turn") == "turn" else None


def observation_id_of(hit: Any) -> str | None:
    """The observation id of a recall hit written by ``observation_request`` (a memory
    passage or a fact whose ``citation.source`` is ``{kind: upsert, ref}``); None otherwise."""
    src = (_as_json(hit).get("citation") or {}).get("source") or {}
    return str(src["ref"]) if src.get("kind") == "upsert" and src.get("ref") is not None else None


def hit_turns(hit: Any, evidence: dict[str, list[str]] | None = None) -> list[str]:
    """The turns one hit stands for: a turn passage its turn; an observation the evidence
    turns ``evidence`` (``stored_evidence``) holds for it; any other hit none."""
    if (t := turn_id_of(hit)) is not None:
        return [t]
    o = observation_id_of(hit)
    return list((evidence or {}).get(o, [])) if o is not None else []


def turn_ranking(hits: Any, evidence: dict[str, list[str]] | None = None, *, count: str = "turns") -> list[str]:
    """Turn ids in rank order, each once, at the rank of the first hit that stands for it
    (``hit_turns``). ``count="turns"``: the distinct turns alone, so k counts turns.
    ``count="hits"``: one entry per hit, so k counts hits: a hit that credits no new turn
    (an observation whose evidence ranked above, an entity row) keeps its slot with the
    placeholder ``~<rank>``; an observation with two new evidence turns takes two entries."""
    if count not in ("turns", "hits"):
        raise ValueError("count must be turns or hits")
    seen: dict[str, None] = {}
    out: list[str] = []
    for rank, hit in enumerate(hits, 1):
        new = [t for t in dict.fromkeys(hit_turns(hit, evidence)) if t not in seen]
        seen.update(dict.fromkeys(new))
        out += new if new or count == "turns" else [f"~{rank}"]
    return out


WINDOW_OPTIONS = ("query_window", "strict_window", "window_weight", "adjacent_weight", "graph_weight", "speaker_weight")


@dataclass
class RecallRun(ModeRun):
    windows: dict[str, str] = field(default_factory=dict)  # question -> the time phrase recall read from it
    turn_rankings: dict[str, list[str]] = field(default_factory=dict)  # the same hits, k counted in distinct turns
    observations_top10: dict[str, int] = field(default_factory=dict)  # question -> observation hits in the first 10


async def recall_hits(mem: Any, question: str, mode: str, k: int, lens: list[list[str]], *,
                      vector_weight: float | None = None, window: dict[str, Any] | None = None,
                      now: str | None = None, include: tuple[str, ...] = ("passages",)) -> tuple[list[Any], str | None]:
    """The hits ``mem.recall`` (fn::amem::recall) returns for one question (within the
    lens, of the ``include`` kinds) and the query-window phrase it read (None: no time
    words, or windows off). ``window`` holds recall's window options (WINDOW_OPTIONS),
    ``now`` the instant relative time words count from."""
    opts = {key: v for key, v in (window or {}).items() if key in WINDOW_OPTIONS and v is not None}
    resp = await mem.recall(question, mode=mode, k=k, include=list(include), lens=lens, vector_weight=vector_weight,
                            now=now, **opts)
    return resp.hits, (resp.query_window.phrase if resp.query_window else None)


async def recall_question(mem: Any, question: str, mode: str, k: int, lens: list[list[str]], *,
                          vector_weight: float | None = None, window: dict[str, Any] | None = None,
                          now: str | None = None) -> tuple[list[str], str | None]:
    """The turns of ``recall_hits`` (memory passages only) and the query-window phrase."""
    hits, phrase = await recall_hits(mem, question, mode, k, lens, vector_weight=vector_weight, window=window, now=now)
    return turn_ranking(hits), phrase


async def recall_turn_ids(mem: Any, question: str, embedding: list[float] | None, mode: str, k: int,
                          lens: list[list[str]], *, vector_weight: float | None = None,
                          window: dict[str, Any] | None = None, now: str | None = None) -> list[str]:
    """The turn ids of ``recall_question``. ``embedding`` is unused: mem.recall
    embeds the question itself (through the embedding cache, so only the first
    mode pays the model)."""
    del embedding
    return (await recall_question(mem, question, mode, k, lens, vector_weight=vector_weight, window=window, now=now))[0]


async def run_recall_mode(mem: Any, cs: Conversations, mode: str, *, k: int = MAX_RECALL_K,
                          vector_weight: float | None = None, window: dict[str, Any] | None = None,
                          progress: Progress | None = None, include: tuple[str, ...] = ("passages",),
                          evidence: dict[str, list[str]] | None = None) -> RecallRun:
    """Every judged question in one mode, ``now`` = its conversation's last session;
    a mode recall does not implement is reported, not raised. ``rankings`` count k in
    hits, ``turn_rankings`` in distinct turns (the same for turns alone: one passage
    per turn); ``evidence`` maps observation hits to turns."""
    from amem_db.errors import NotImplementedMode

    run = RecallRun(mode)
    nows = {c: cs.last_session(c) for c in cs.conversations}
    started = time.perf_counter()
    for i, (qid, q) in enumerate(cs.questions.items()):
        t0 = time.perf_counter()
        try:
            hits, phrase = await recall_hits(mem, q.text, mode, k, lens_of(q.conversation), vector_weight=vector_weight,
                                             window=window, now=nows[q.conversation], include=include)
        except NotImplementedMode as exc:
            run.available, run.error = False, str(exc)
            break
        run.latency_ms.append((time.perf_counter() - t0) * 1000)
        ranking = turn_ranking(hits, evidence, count="hits")
        run.turn_rankings[qid] = turn_ranking(hits, evidence)
        run.observations_top10[qid] = sum(observation_id_of(h) is not None for h in hits[:10])
        run.rankings[qid] = ranking
        if phrase is not None:
            run.windows[qid] = phrase
        run.empty += not ranking
        if progress:
            progress("query", {"mode": mode, "done": i + 1, "total": len(cs.questions)})
    run.seconds = time.perf_counter() - started
    return run


def exact_knn_rankings(cs: Conversations, embedder: Any, *, speaker: str = "prefix-text", k: int = MAX_RECALL_K) -> ModeRun:
    """A reference outside the product: exact cosine top-k over the question's
    conversation with the same embedder and the same passage texts (numpy, the
    vectors come from the embedding cache). It separates what the model can do
    from what the engine's vector leg (threshold, index) does with it."""
    import numpy as np

    run = ModeRun("exact-knn (reference)")
    texts: dict[str, tuple[list[str], Any]] = {}
    for conv in cs.conversations:
        turns = [t for t in cs.turns if t.conversation == conv]
        m = np.asarray(embedder.embed_documents([turn_request(t, speaker=speaker)["text"] for t in turns]), dtype=float)
        texts[conv] = ([t.id for t in turns], m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12))
    for qid, q in cs.questions.items():
        ids, m = texts[q.conversation]
        v = np.asarray(embedder.embed_query(q.text), dtype=float)
        order = np.argsort(-(m @ (v / max(float(np.linalg.norm(v)), 1e-12))), kind="stable")[:k]
        run.rankings[qid] = [ids[i] for i in order]
    return run


def metric_names(k: int) -> list[str]:
    """Recall@5, Recall@10, nDCG@10, and the paper's deeper cut-offs (25, 50) that k reaches."""
    return list(dict.fromkeys(["recall@5", "recall@10", "ndcg@10"] + [f"recall@{d}" for d in (25, 50) if d <= k]))


def recall_summary(cs: Conversations, run: ModeRun, metrics: list[str]) -> dict[str, Any]:
    """Metrics overall (categories 1-4), with category 5, and per category."""
    if not run.available:
        return {"available": False, "reason": run.error}
    groups = cs.by_category()
    judged = [q for c in (1, 2, 3, 4) for q in groups.get(c, [])]
    by_category = {CATEGORY_NAMES.get(c, str(c)): {"category": c, "n": len(ids), **(evaluate(cs.qrels, run.rankings, metrics, ids) if ids else {})}
                   for c, ids in sorted(groups.items())}
    lat = run.latency_ms
    turns = getattr(run, "turn_rankings", {})
    in_turns = {"metrics": evaluate(cs.qrels, turns, metrics, judged) if judged else {},
                "by_category": {CATEGORY_NAMES.get(c, str(c)): evaluate(cs.qrels, turns, metrics, ids)
                                for c, ids in sorted(groups.items()) if ids}} if turns else None
    obs = getattr(run, "observations_top10", {})
    return {
        "available": True,
        # the same hits with k counted in distinct turns (see turn_ranking); None: not kept
        "metrics_k_in_turns": in_turns,
        # mean observation hits among a question's first 10 hits (0 without observations)
        "observations_in_top10": statistics.fmean(obs.values()) if obs else 0.0,
        "metrics": evaluate(cs.qrels, run.rankings, metrics, judged) if judged else {m: float("nan") for m in metrics},
        "metrics_with_adversarial": evaluate(cs.qrels, run.rankings, metrics, list(cs.questions)),
        "by_category": by_category,
        "queries": len(run.rankings),
        "empty_results": run.empty,
        "latency_ms": {"p50": percentile(lat, 50), "p95": percentile(lat, 95), "p99": percentile(lat, 99),
                       "mean": statistics.fmean(lat) if lat else float("nan")},
        "seconds": round(run.seconds, 2),
        "top10": {q: r[:10] for q, r in run.rankings.items()},  # per question, to see where modes differ
        # the questions recall read a time window from, per category, and the phrases
        "query_windows": {CATEGORY_NAMES.get(c, str(c)): sum(q in getattr(run, "windows", {}) for q in ids) for c, ids in sorted(groups.items())},
        "window_phrases": dict(getattr(run, "windows", {})),
    }


async def evaluate_conversations(cs: Conversations, embedder: Any, *, modes: list[str], k: int = MAX_RECALL_K,
                                 speaker: str = "prefix-text", vector_weight: float | None = None,
                                 window: dict[str, Any] | None = None, url: str | None = None,
                                 db_dir: Path = DEFAULT_DB_DIR, fresh: bool = False,
                                 progress: Progress | None = None, observations: str | None = None,
                                 observations_only: bool = False) -> dict[str, Any]:
    """Write (or reuse) the turns (and the observations, if asked), recall every judged
    question in every mode, return the report dict. Observations written as facts are
    recalled with include facts and passages (the default); otherwise include is passages."""
    from amem_db.connection import close_quietly

    check_run(k, MAX_RECALL_K, "recall", modes, RECALL_MODES)
    if observations is not None and observations not in OBSERVATION_KINDS:
        raise ValueError(f"observations must be one of {', '.join(OBSERVATION_KINDS)}")
    metrics = metric_names(k)
    include = ("facts", "passages") if observations == "facts" else ("passages",)
    started = time.perf_counter()
    prepared = await prepare_conversations(cs, embedder, speaker=speaker, url=url, db_dir=db_dir, fresh=fresh,
                                           progress=progress, observations=observations,
                                           observations_only=observations_only)
    prepare_seconds = time.perf_counter() - started
    try:
        version = await prepared.mem.conn.version()
        evidence = await stored_evidence(prepared.mem.conn) if observations is not None else {}
        summaries = {}
        for mode in modes:
            if progress:
                progress("mode", {"mode": mode, "total": len(cs.questions)})
            run = await run_recall_mode(prepared.mem, cs, mode, k=k, vector_weight=vector_weight, window=window,
                                        progress=progress, include=include, evidence=evidence)
            summaries[mode] = recall_summary(cs, run, metrics)
        embedder_name = prepared.mem.embedder.name
        reference = recall_summary(cs, exact_knn_rankings(cs, prepared.mem.embedder, speaker=speaker, k=k), metrics)
    finally:
        await close_quietly(prepared.mem.conn)
    groups = cs.by_category()
    return {
        "kind": KIND, "dataset": cs.name, "split": cs.split, "path": str(cs.path),
        "conversations": cs.conversations, "corpus_documents": len(cs.turns), "turns": len(cs.turns),
        "queries": len(cs.questions), "metrics": metrics, "k": k, "speaker": speaker, "embedder": embedder_name,
        "vector_weight": vector_weight, "window": window or {},
        "observations": None if observations is None else {
            "as": observations, "only": observations_only, "file": OBSERVATIONS_FILE, "stored": len(evidence),
            "include": list(include), "k_counts": "hits"},
        "now": {c: cs.last_session(c) for c in cs.conversations},
        "categories": {CATEGORY_NAMES.get(c, str(c)): len(ids) for c, ids in sorted(groups.items())},
        "adversarial_file": cs.adversarial_file, "adversarial_without_evidence": cs.adversarial_without_evidence,
        "database": {"url": prepared.url, "key": prepared.key, "cached": prepared.cached,
                     "size_bytes": dir_size(prepared.db_path) if prepared.db_path else None},
        "ingest": prepared.ingest,
        "timings": {"prepare_seconds": round(prepare_seconds, 2), "total_seconds": round(time.perf_counter() - started, 2),
                    "query_seconds": {m: s.get("seconds") for m, s in summaries.items()}},
        "modes": summaries,
        "reference": {"exact_knn": reference},
        "engine": {"version": version, **engine_info()},
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


# --- the report -----------------------------------------------------------------------

def _pct(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and v != v) else f"{100 * v:.1f}"


def render_markdown(report: dict[str, Any]) -> str:
    """report.md of a conversation collection: per mode, per category, beside the paper's DRAGON rows."""
    metrics, modes = report["metrics"], report["modes"]
    ing, db = report["ingest"], report["database"]
    live = [m for m, s in modes.items() if s["available"]]
    lines = [f"# Evidence retrieval: {report['dataset']} ({report['split']} split, conversations {', '.join(report['conversations'])})", "",
             ("- the turns are not written (observations only); " if (report.get("observations") or {}).get("only")
              else f"- {report['turns']} turns written as memory passages ") + f"(speaker {report['speaker']}, category knowledge, "
             f"one scope per conversation); {report['queries']} judged questions "
             + ", ".join(f"{n} {c}" for c, n in report["categories"].items())
             + f"; recall k = {report['k']}, include passages, lens = the question's conversation, vectorWeight = "
             + (f"{report['vector_weight']}" if report.get("vector_weight") is not None else "default (recall's own: 0.4)"),
             "- query windows: " + _window_line(report, live),
             *([_observations_line(report["observations"])] if report.get("observations") else []),
             f"- embedder: {report['embedder']}; engine {report['engine']['version']}",
             f"- database: {db['url']} ({'cached' if db['cached'] else 'written now'}"
             + (f", {db['size_bytes'] / 1e6:.1f} MB on disk" if db.get("size_bytes") else "") + ")",
             f"- write: {ing.get('written')} of {ing.get('turns')} {'requests' if report.get('observations') else 'turns'} -> "
             f"{ing.get('passages')} passages" + (f", {ing.get('facts')} facts" if ing.get("facts") else "") + " in "
             f"{ing.get('seconds')} s (embedding {ing.get('embed_seconds')} s, engine {ing.get('engine_seconds')} s)",
             f"- this run: {report['timings']['total_seconds']} s (database ready after {report['timings']['prepare_seconds']} s)"]
    if report.get("adversarial_without_evidence"):
        lines.append(f"- adversarial questions left out (no evidence turn): {', '.join(report['adversarial_without_evidence'])}")
    lines += ["", "## Overall (categories 1-4; in %)", "",
              "| mode | " + " | ".join(metrics) + " | with category 5: " + " / ".join(metrics[:2]) + " | empty | p50 ms | p95 ms |",
              "|---|" + "---|" * (len(metrics) + 4)]
    for m, s in modes.items():
        if not s["available"]:
            lines.append(f"| {m} | " + " | ".join("n/a" for _ in metrics) + " | - | - | - | - |")
            continue
        lines.append(f"| {m} | " + " | ".join(_pct(s["metrics"][x]) for x in metrics)
                     + " | " + " / ".join(_pct(s["metrics_with_adversarial"][x]) for x in metrics[:2])
                     + f" | {s['empty_results']} | {s['latency_ms']['p50']:.1f} | {s['latency_ms']['p95']:.1f} |")
    ref = (report.get("reference") or {}).get("exact_knn")
    if ref:
        lines.append("| *exact kNN, same model (reference, not the product)* | " + " | ".join(_pct(ref["metrics"][x]) for x in metrics)
                     + " | " + " / ".join(_pct(ref["metrics_with_adversarial"][x]) for x in metrics[:2]) + " | - | - | - |")
    lines += [f"- {m}: not available ({s['reason']})" for m, s in modes.items() if not s["available"]]
    if "graph" in live and report["speaker"] not in ENTITY_SPEAKER_MODES:
        lines.append(f"- graph: the turns were written without speaker entities (speaker {report['speaker']}), so no question "
                     "names an entity and the graph leg has nothing to walk; `--speaker prefix` writes them")
    lines += ["", "## Per category (in %; the paper's column order)", ""]
    for metric in metrics:
        head = ["category", "n", *live] + (["exact kNN (ref.)"] if ref else []) + (["paper DRAGON (all 10 conv.)"] if _paper_k(metric) else [])
        lines += [f"### {metric}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for c in PAPER_COLUMN_ORDER:
            name = CATEGORY_NAMES[c]
            n = report["categories"].get(name, 0)
            cells = [_pct(modes[m]["by_category"].get(name, {}).get(metric)) if n else "-" for m in live]
            cells += [_pct(ref["by_category"].get(name, {}).get(metric)) if n else "-"] if ref else []
            paper = [f"{PAPER_DIALOG_RECALL[k][c]:.1f}"] if (k := _paper_k(metric)) else []
            lines.append(f"| {c} {name} | {n} | " + " | ".join(cells + paper) + " |")
        lines.append("")
    lines += ["Paper: Maharana et al. 2024, Table 3, retriever DRAGON, unit Dialog, R@k over all 10 conversations "
              "(this run: one split). Recall@k here is the paper's definition (evidence turns in the top k / evidence "
              "turns, averaged over questions); docs/EVALUATION.md says what is and is not comparable."]
    return "\n".join(lines) + "\n"


def _observations_line(obs: dict[str, Any]) -> str:
    return (f"- observations: {obs['stored']} written as {obs['as']} "
            + ("instead of the turns" if obs["only"] else "beside the turns")
            + f" (recall include {', '.join(obs['include'])}); an observation hit credits its evidence turns at its rank, "
              "each turn once at its best rank; k counts hits (metrics_k_in_turns in report.json: k counts distinct turns)")


def _window_line(report: dict[str, Any], live: list[str]) -> str:
    """The window options of the run, recall's now, and how many questions had a window (first mode)."""
    w = report.get("window") or {}
    opts = ", ".join(f"{k} {v}" for k, v in w.items() if v is not None) or "recall's defaults"
    counts = report["modes"][live[0]].get("query_windows", {}) if live else {}
    read = ", ".join(f"{n} {c}" for c, n in counts.items() if n)
    return (f"{opts}; now = each conversation's last session ("
            + ", ".join(f"{c} {t[:10]}" for c, t in (report.get("now") or {}).items()) + ")"
            + (f"; questions with a window: {read}" if read else "; no question had a window"))


def _paper_k(metric: str) -> int | None:
    if metric.startswith("recall@"):
        k = int(metric.split("@")[1])
        return k if k in PAPER_DIALOG_RECALL else None
    return None
