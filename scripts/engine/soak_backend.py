#!/usr/bin/env python3
"""Soak-test an embedded SurrealDB storage backend (core 3.2.4 via surrealdb-embedded).

For each backend URL scheme this script, in a fresh directory under ROOT ($AMEM_SOAK_DIR, else the temp dir):

1. defines the amem-db chunk schema (BM25 full-text index + HNSW index),
2. bulk-inserts N chunks (default 150,000) with ``INSERT INTO chunk $rows RETURN NONE``
   in batches, logging rows, rows/s, elapsed and data-dir size every 5k rows,
   under a watchdog: no progress for 120 s -> "HUNG at N rows", thread stacks are
   dumped (py-spy --native if available, else gdb, plus /proc/PID/task/*/stat)
   and the worker is killed,
3. runs one BM25 query and one KNN query, and the time-travel queries,
4. while the worker still holds the database open, starts a *second process*
   that opens the same path and records the exact exception class/message,
5. closes, then reopens the path in a new process and counts rows (durability).

Every database-touching step runs in its own subprocess and ends with
``await db.close()`` followed by ``os._exit(code)``: the native extension
aborts at interpreter exit in 20-30 % of runs otherwise.

Text is real: 80-word windows of ../shared/datasets/*/corpus.jsonl ($AMEM_DATASETS), cycled
with fresh ids as often as needed. Embeddings are random unit vectors rounded
to float32 precision (not a real embedding model: fine for storage/index
load, meaningless for retrieval quality).

Usage (from the repository root with the venv active):

    python scripts/engine/soak_backend.py batch-probe --rows 8000 --batches 10,100,500
    python scripts/engine/soak_backend.py run --backend surrealkv --backend surrealkv+versioned --backend file \
        --rows 150000 --batch 100 --max-insert-s 1150
    # experiment: close + reopen the DB inside the worker every 40k rows
    python scripts/engine/soak_backend.py run --backend surrealkv --tag reopen40k --reopen-every 40000
    # short functional pass (second opener, time travel, BM25/KNN) on every URL form
    python scripts/engine/soak_backend.py run --backend surrealkv --backend surrealkv+versioned \
        --backend 'surrealkv?versioned' --backend file --tag fn10k --rows 10000

Environment overrides: SOAK_WATCHDOG_S (default 120), SOAK_PROGRESS_EVERY (default 5000).
Findings are in docs/BACKENDS.md.

Backends (``--backend`` name -> URL):
    surrealkv            surrealkv://DIR
    surrealkv+versioned  surrealkv+versioned://DIR
    surrealkv?versioned  surrealkv://DIR?versioned=true
    file                 file://DIR
    rocksdb              rocksdb://DIR   (refused by this SDK/build, kept to prove it)
    mem                  mem://          (no dir; for comparison only)

Results go to ROOT/results/<backend>.json, progress logs to
ROOT/logs/<backend>.log.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import math
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from amem_db.harness.paths import datasets_root

# scratch space: $AMEM_SOAK_DIR, else amem-soak in the system temp directory
ROOT = Path(os.environ.get("AMEM_SOAK_DIR") or Path(tempfile.gettempdir()) / "amem-soak")
DATASETS = str(datasets_root() / "*" / "corpus.jsonl")
NS, DB = "soak", "soak"
DIM = 384
WINDOW_WORDS = 80
PROGRESS_EVERY = int(os.environ.get("SOAK_PROGRESS_EVERY", "5000"))
WATCHDOG_S = float(os.environ.get("SOAK_WATCHDOG_S", "120"))  # no-progress limit during the insert
QUERY_PHASE_S = 600.0  # limit for the post-insert query phase / reopen
SECOND_OPENER_TIMEOUT_S = 60.0
TT_LITERAL = "d'2026-01-01T00:00:00Z'"

SCHEMA = """
DEFINE ANALYZER knowledge_text TOKENIZERS blank, class, camel, punct FILTERS lowercase, snowball(english);
DEFINE TABLE chunk SCHEMAFULL;
DEFINE FIELD document ON chunk TYPE string;
DEFINE FIELD text ON chunk TYPE string;
DEFINE FIELD position ON chunk TYPE int;
DEFINE FIELD embedding ON chunk TYPE option<array>;
DEFINE FIELD scopes ON chunk TYPE array<string> DEFAULT [];
DEFINE INDEX chunk_text ON chunk FIELDS text FULLTEXT ANALYZER knowledge_text BM25(1.2,0.75) HIGHLIGHTS;
DEFINE INDEX chunk_embedding ON chunk FIELDS embedding HNSW DIMENSION 384 DIST COSINE TYPE F32 EFC 150 M 12;
"""

BACKENDS = {
    "surrealkv": "surrealkv://{dir}",
    "surrealkv+versioned": "surrealkv+versioned://{dir}",
    "surrealkv?versioned": "surrealkv://{dir}?versioned=true",
    "file": "file://{dir}",
    "rocksdb": "rocksdb://{dir}",
    "mem": "mem://",
}


def safe_name(backend: str) -> str:
    return backend.replace("+", "_plus_").replace("?", "_q_")


def dir_size(path: Path) -> tuple[int, int]:
    """(bytes on disk, apparent bytes) of a directory tree."""
    used = apparent = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except FileNotFoundError:
                continue
            used += st.st_blocks * 512
            apparent += st.st_size
    return used, apparent


def loadavg() -> str:
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


# --------------------------------------------------------------------------- data


def load_windows() -> list[tuple[str, int, str]]:
    """(document, position, text) 80-word windows over every corpus, stable order."""
    out: list[tuple[str, int, str]] = []
    for path in sorted(glob.glob(DATASETS)):
        ds = Path(path).parent.name
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                words = f"{d.get('title', '')} {d.get('text', '')}".split()
                if not words:
                    continue
                for pos, start in enumerate(range(0, len(words), WINDOW_WORDS)):
                    chunk = words[start : start + WINDOW_WORDS]
                    if pos > 0 and len(chunk) < 20:  # fold tiny tails away
                        break
                    out.append((f"{ds}/{d['_id']}", pos, " ".join(chunk)))
    return out


_F32 = struct.Struct(f"<{DIM}f")


def unit_vector(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    # round-trip through float32 so every value is exactly an f32
    return list(_F32.unpack(_F32.pack(*(x / n for x in v))))


def make_row(i: int, windows, rng: random.Random) -> dict:
    from surrealdb import RecordID

    doc, pos, text = windows[i % len(windows)]
    rep = i // len(windows)
    return {
        "id": RecordID("chunk", i),
        "document": doc if rep == 0 else f"{doc}#r{rep}",
        "position": pos,
        "text": text,
        "embedding": unit_vector(rng),
    }


# --------------------------------------------------------------------------- worker helpers


def exc_info(e: BaseException) -> dict:
    return {
        "class": f"{type(e).__module__}.{type(e).__qualname__}",
        "message": str(e),
        "repr": repr(e),
        "cause": (
            f"{type(e.__cause__).__module__}.{type(e.__cause__).__qualname__}: {e.__cause__}"
            if e.__cause__ is not None
            else None
        ),
    }


class Beat:
    """Heartbeat + status files the supervisor watches."""

    def __init__(self, run_dir: Path):
        self.hb = run_dir / "heartbeat"
        self.status = run_dir / "status.json"
        self.state: dict = {}

    def beat(self, rows: int, phase: str) -> None:
        tmp = self.hb.with_suffix(".tmp")
        tmp.write_text(json.dumps({"rows": rows, "phase": phase, "t": time.time()}))
        os.replace(tmp, self.hb)

    def save(self, **kw) -> None:
        self.state.update(kw)
        tmp = self.status.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1, default=str))
        os.replace(tmp, self.status)


def log_line(log_path: Path, msg: str) -> None:
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    with open(log_path, "a") as fh:
        fh.write(line + "\n")
    print(line, flush=True)


async def open_db(url: str):
    from surrealdb import AsyncSurreal

    db = AsyncSurreal(url)
    await db.connect()
    await db.use(NS, DB)
    return db


async def timed(coro):
    t = time.perf_counter()
    r = await coro
    return r, time.perf_counter() - t


async def q(db, sql: str, vars: dict | None = None):
    """Result of the last statement (3.x ``db.query`` returns one result per statement)."""
    r = await db.query(sql, vars) if vars is not None else await db.query(sql)
    return r[-1] if isinstance(r, list) and r else r


# --------------------------------------------------------------------------- worker: insert


async def worker_insert(a) -> int:
    run_dir = Path(a.run_dir)
    log_path = Path(a.log)
    data_dir = Path(a.data_dir) if a.data_dir else None
    beat = Beat(run_dir)
    beat.beat(0, "open")
    rng = random.Random(a.seed)
    windows = load_windows()
    beat.save(windows=len(windows), pid=os.getpid())
    log_line(log_path, f"worker pid={os.getpid()} url={a.url} windows={len(windows)} batch={a.batch}")

    db = await open_db(a.url)
    beat.save(version=await db.version())
    await db.query(SCHEMA)
    beat.beat(0, "insert")

    t0 = time.perf_counter()
    last_t, last_n = t0, 0
    checkpoints = []  # (rows, elapsed)
    db_time = 0.0
    tt_mark = None
    probe_vec, probe_id = None, None
    n = 0
    stopped_by_budget = False
    while n < a.rows:
        k = min(a.batch, a.rows - n)
        rows = [make_row(n + j, windows, rng) for j in range(k)]
        if probe_vec is None:
            probe_vec, probe_id = rows[0]["embedding"], n
        q0 = time.perf_counter()
        await db.query("INSERT INTO chunk $rows RETURN NONE", {"rows": rows})
        db_time += time.perf_counter() - q0
        n += k
        beat.beat(n, "insert")
        if n % PROGRESS_EVERY == 0 or n == a.rows:
            now = time.perf_counter()
            el = now - t0
            rate_win = (n - last_n) / (now - last_t)
            used, app = dir_size(data_dir) if data_dir else (0, 0)
            checkpoints.append({"rows": n, "elapsed": round(el, 2), "used": used, "apparent": app,
                                "load": loadavg()})
            log_line(
                log_path,
                f"rows={n} rate_window={rate_win:.1f}/s rate_overall={n / el:.1f}/s "
                f"elapsed={el:.1f}s db_time={db_time:.1f}s size={mb(used)} (apparent {mb(app)}) "
                f"load={loadavg()}",
            )
            beat.save(rows=n, checkpoints=checkpoints, db_time=db_time)
            last_t, last_n = now, n
            if n == PROGRESS_EVERY and a.tt_mark:
                # timestamp after the first 5k rows, for a time-travel count later
                tt_mark = await q(db, "RETURN <string> time::now()")
                beat.save(tt_mark=tt_mark, tt_mark_rows=n)
            if a.reopen_every and n % a.reopen_every == 0 and n < a.rows:
                # experiment: does closing (which flushes the memtable) avoid the stall?
                beat.beat(n, "reopen-cycle")
                _, c_s = await timed(db.close())
                files = sorted(os.path.relpath(os.path.join(d, f), data_dir)
                               for d, _, fs in os.walk(data_dir) for f in fs) if data_dir else []
                db, o_s = await timed(open_db(a.url))
                used2, _ = dir_size(data_dir) if data_dir else (0, 0)
                log_line(log_path, f"reopen-cycle at {n}: close {c_s:.1f}s open {o_s:.1f}s "
                                   f"size={mb(used2)} files={files}")
                beat.beat(n, "insert")
                last_t = time.perf_counter()
            if a.max_insert_s and el > a.max_insert_s and n < a.rows:
                stopped_by_budget = True
                log_line(log_path, f"STOPPED BY TIME BUDGET at {n} rows ({el:.0f}s > {a.max_insert_s}s)")
                break
    insert_s = time.perf_counter() - t0
    beat.save(rows=n, insert_s=insert_s, db_time=db_time, stopped_by_budget=stopped_by_budget,
              checkpoints=checkpoints)
    log_line(log_path, f"insert done rows={n} in {insert_s:.1f}s ({n / insert_s:.1f}/s)")

    # ---- queries
    beat.beat(n, "queries")
    res: dict = {}
    try:
        r, dt = await timed(q(db,
            "SELECT id, document, search::score(1) AS s FROM chunk "
            "WHERE text @1@ 'anisotropy' ORDER BY s DESC LIMIT 10"))
        res["bm25"] = {"rows": len(r), "s": round(dt, 3), "top": [str(x["id"]) for x in r[:3]],
                       "score0": r[0]["s"] if r else None}
    except Exception as e:
        res["bm25"] = {"error": exc_info(e)}
    log_line(log_path, f"BM25: {res['bm25']}")
    beat.beat(n, "queries")
    try:
        r, dt = await timed(q(db, "SELECT id FROM chunk WHERE embedding <|10,40|> $v", {"v": probe_vec}))
        ids = [str(x["id"]) for x in r]
        res["knn"] = {"rows": len(r), "s": round(dt, 3), "probe": f"chunk:{probe_id}",
                      "probe_found_first": bool(ids) and ids[0] == f"chunk:{probe_id}", "top": ids[:3]}
    except Exception as e:
        res["knn"] = {"error": exc_info(e)}
    log_line(log_path, f"KNN: {res['knn']}")
    beat.beat(n, "queries")
    # time travel: the literal query from the brief, and a count as of the 5k mark
    try:
        r, dt = await timed(q(db, f"SELECT * FROM chunk LIMIT 5 VERSION {TT_LITERAL}"))
        res["tt_literal"] = {"ok": True, "rows": len(r), "s": round(dt, 3)}
    except Exception as e:
        res["tt_literal"] = {"ok": False, "error": exc_info(e)}
    if tt_mark:
        try:
            ts = tt_mark
            r, dt = await timed(q(db, f"SELECT count() FROM chunk GROUP ALL VERSION d'{ts}'"))
            res["tt_mark"] = {"ok": True, "at": ts, "count": r[0]["count"] if r else 0, "s": round(dt, 3)}
        except Exception as e:
            res["tt_mark"] = {"ok": False, "error": exc_info(e)}
    log_line(log_path, f"time travel: {res.get('tt_literal')} mark: {res.get('tt_mark')}")
    beat.save(queries=res)

    # ---- hold the database open while the supervisor runs a second opener
    beat.beat(n, "holding")
    release = run_dir / "release"
    deadline = time.time() + SECOND_OPENER_TIMEOUT_S + 60
    while not release.exists() and time.time() < deadline:
        await asyncio.sleep(0.2)
        beat.beat(n, "holding")
    # still alive and usable after someone else tried to open the path?
    try:
        r = await db.query("SELECT count() FROM chunk WHERE id = chunk:0 GROUP ALL")
        beat.save(after_second_opener_ok=True)
    except Exception as e:
        beat.save(after_second_opener_ok=False, after_second_opener_error=exc_info(e))
    beat.beat(n, "closing")
    _, close_s = await timed(db.close())
    beat.save(close_s=close_s, done=True)
    log_line(log_path, f"closed in {close_s:.1f}s")
    return 0


# --------------------------------------------------------------------------- worker: second opener / reopen


async def worker_second(a) -> int:
    out: dict = {}
    t = time.perf_counter()
    try:
        db = await open_db(a.url)
        r = await db.query("SELECT count() FROM chunk WHERE id = chunk:0 GROUP ALL")
        out = {"opened": True, "result": str(r)}
        await db.close()
    except BaseException as e:
        out = {"opened": False, "sdk": exc_info(e), "traceback_tail": traceback.format_exc().splitlines()[-3:]}
    out["s"] = round(time.perf_counter() - t, 3)
    # and the raw extension, below the SDK's error mapping
    try:
        import surrealdb_embedded

        raw = surrealdb_embedded.AsyncEmbeddedDB(a.url)
        await raw.connect()
        out["raw_opened"] = True
        await raw.close()
    except BaseException as e:
        out["raw"] = exc_info(e)
    Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


async def worker_reopen(a) -> int:
    out: dict = {}
    try:
        db, open_s = await timed(open_db(a.url))
        out["open_s"] = round(open_s, 3)
        r, dt = await timed(q(db, "SELECT count() FROM chunk GROUP ALL"))
        out["count"] = r[0]["count"] if r else 0
        out["count_s"] = round(dt, 3)
        r, dt = await timed(q(db,
            "SELECT id, search::score(1) AS s FROM chunk WHERE text @1@ 'anisotropy' ORDER BY s DESC LIMIT 10"))
        out["bm25_rows"], out["bm25_s"] = len(r), round(dt, 3)
        rng = random.Random(a.seed)
        v = unit_vector(rng)  # == the embedding of chunk:0 (first vector drawn from the same seed)
        r, dt = await timed(q(db, "SELECT id FROM chunk WHERE embedding <|10,40|> $v", {"v": v}))
        ids = [str(x["id"]) for x in r]
        out["knn_rows"], out["knn_s"] = len(r), round(dt, 3)
        out["knn_probe_first"] = bool(ids) and ids[0] == "chunk:0"
        _, out["close_s"] = await timed(db.close())
    except BaseException as e:
        out["error"] = exc_info(e)
    Path(a.out).write_text(json.dumps(out, indent=1, default=str))
    return 0


# --------------------------------------------------------------------------- supervisor


def dump_stacks(pid: int, dest: Path) -> str:
    parts = []
    pyspy = shutil.which("py-spy")  # pip install py-spy (in any venv on PATH)
    if pyspy:
        try:
            p = subprocess.run([pyspy, "dump", "--native", "--pid", str(pid)], capture_output=True,
                               text=True, timeout=90)
            parts.append("## py-spy dump --native\n" + p.stdout + p.stderr)
        except Exception as e:
            parts.append(f"py-spy failed: {e!r}")
    if shutil.which("gdb"):
        try:
            p = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 25"],
                               capture_output=True, text=True, timeout=120)
            parts.append("## gdb thread apply all bt\n" + p.stdout[-60000:])
        except Exception as e:
            parts.append(f"gdb failed: {e!r}")
    lines = []
    for stat in sorted(glob.glob(f"/proc/{pid}/task/*/stat")):
        try:
            s = open(stat).read()
            tid = stat.split("/")[4]
            wchan = open(f"/proc/{pid}/task/{tid}/wchan").read()
            comm = s[s.index("(") + 1 : s.rindex(")")]
            state = s[s.rindex(")") + 2]
            lines.append(f"tid={tid} comm={comm} state={state} wchan={wchan}")
        except Exception:
            pass
    parts.append("## /proc task states\n" + "\n".join(lines))
    text = "\n\n".join(parts)
    dest.write_text(text)
    return text


def run_sub(args: list[str], timeout: float) -> tuple[int | None, str]:
    try:
        p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout)
        return p.returncode, (p.stdout + p.stderr)[-4000:]
    except subprocess.TimeoutExpired as e:
        return None, f"TIMEOUT after {timeout}s: {(e.stdout or b'')[-2000:]!r}"


def run_backend(backend: str, a) -> dict:
    name = safe_name(backend) + (f"_{a.tag}" if getattr(a, "tag", "") else "")
    run_dir = ROOT / name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    (ROOT / "logs").mkdir(exist_ok=True)
    (ROOT / "results").mkdir(exist_ok=True)
    log_path = ROOT / "logs" / f"{name}.log"
    log_path.write_text("")
    data_dir = run_dir / "db"
    url = BACKENDS[backend].format(dir=data_dir) if backend in BACKENDS else backend.format(dir=data_dir)
    result: dict = {"backend": backend, "url": url, "rows_target": a.rows, "batch": a.batch}
    log_line(log_path, f"=== backend {backend} url={url} rows={a.rows} batch={a.batch}")

    wargs = ["_insert", "--url", url, "--run-dir", str(run_dir), "--log", str(log_path),
             "--rows", str(a.rows), "--batch", str(a.batch), "--seed", str(a.seed),
             "--max-insert-s", str(a.max_insert_s)]
    if not url.startswith("mem:"):
        wargs += ["--data-dir", str(data_dir)]
    if a.tt_mark:
        wargs.append("--tt-mark")
    if getattr(a, "reopen_every", 0):
        wargs += ["--reopen-every", str(a.reopen_every)]
    t_start = time.time()
    proc = subprocess.Popen([sys.executable, __file__, *wargs], stdout=open(run_dir / "worker.out", "w"),
                            stderr=subprocess.STDOUT)
    hb = run_dir / "heartbeat"
    last_rows, last_change = -1, time.time()
    hung = False
    second: dict | None = None
    while True:
        rc = proc.poll()
        if rc is not None:
            break
        time.sleep(1.0)
        try:
            b = json.loads(hb.read_text())
        except Exception:
            b = {"rows": 0, "phase": "start", "t": t_start}
        phase = b["phase"]
        if phase != "insert":
            last_change = time.time()
        if phase == "insert" and b["rows"] != last_rows:
            last_rows, last_change = b["rows"], time.time()
        limit = WATCHDOG_S if phase in ("insert", "open") else QUERY_PHASE_S
        if phase in ("insert", "open"):
            stale = time.time() - last_change if last_rows >= 0 else time.time() - t_start
        else:
            stale = time.time() - b["t"]
        if phase == "holding" and second is None and not url.startswith("mem:"):
            log_line(log_path, "worker holds the DB: starting a second opener process")
            out = run_dir / "second.json"
            rc2, tail = run_sub(["_second", "--url", url, "--out", str(out)], SECOND_OPENER_TIMEOUT_S)
            second = json.loads(out.read_text()) if out.exists() else {"rc": rc2, "tail": tail}
            if rc2 is None:
                second["hung"] = True
            log_line(log_path, f"second opener: {json.dumps(second)}")
            (run_dir / "release").write_text("x")
        elif phase == "holding" and second is None:
            (run_dir / "release").write_text("x")
            second = {"skipped": "mem:// has no path"}
        if stale > limit:
            hung = True
            log_line(log_path, f"HUNG at {b['rows']} rows (phase {phase}, no progress for {stale:.0f}s)")
            stacks = dump_stacks(proc.pid, ROOT / "logs" / f"{name}.stacks.txt")
            log_line(log_path, "stacks dumped to " + str(ROOT / "logs" / f"{name}.stacks.txt")
                     + "\n" + stacks[-3000:])
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            result["hung"] = {"rows": b["rows"], "phase": phase}
            break
    result["worker_rc"] = proc.returncode
    result["wall_s"] = round(time.time() - t_start, 1)
    try:
        result["worker"] = json.loads((run_dir / "status.json").read_text())
    except Exception:
        result["worker"] = {}
    result["hang"] = hung
    result["second_opener"] = second
    if not url.startswith("mem:"):
        used, app = dir_size(data_dir)
        result["size_used"], result["size_apparent"] = used, app
        result["files"] = sorted(
            f"{os.path.relpath(os.path.join(d, f), data_dir)} {os.path.getsize(os.path.join(d, f))}"
            for d, _, fs in os.walk(data_dir) for f in fs)
        log_line(log_path, f"size on disk after close: {mb(used)} (apparent {mb(app)})")
        # durability: reopen in a fresh process
        out = run_dir / "reopen.json"
        rc3, tail = run_sub(["_reopen", "--url", url, "--out", str(out), "--seed", str(a.seed)], QUERY_PHASE_S)
        result["reopen"] = json.loads(out.read_text()) if out.exists() else {"rc": rc3, "tail": tail}
        result["reopen"]["rc"] = rc3
        log_line(log_path, f"reopen: {json.dumps(result['reopen'])}")
        used2, app2 = dir_size(data_dir)
        result["size_used_after_reopen"], result["size_apparent_after_reopen"] = used2, app2
    (ROOT / "results" / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))
    if not a.keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result


def summarize(r: dict) -> str:
    w = r.get("worker", {})
    cps = w.get("checkpoints", [])
    rows = w.get("rows", cps[-1]["rows"] if cps else 0)
    if r.get("hang"):
        rows = r["hung"]["rows"]
    overall = rows / w["insert_s"] if w.get("insert_s") else (rows / cps[-1]["elapsed"] if cps else 0)

    def window(lo, hi):
        a_ = next((c for c in cps if c["rows"] == lo), {"rows": 0, "elapsed": 0.0} if lo == 0 else None)
        b_ = next((c for c in cps if c["rows"] == hi), None)
        if a_ is None or b_ is None:
            return "-"
        return f"{(hi - lo) / (b_['elapsed'] - a_['elapsed']):.0f}"

    q = w.get("queries", {})
    return (f"| {r['backend']} | {rows} | {overall:.0f} | {window(0, 10000)} | {window(140000, 150000)} | "
            f"{'HUNG at ' + str(r['hung']['rows']) if r.get('hang') else 'no'} | "
            f"{mb(r.get('size_used', 0))} | {q.get('bm25', {}).get('rows', '-')}/{q.get('knn', {}).get('rows', '-')} | "
            f"{r.get('reopen', {}).get('count', '-')} |")


def cmd_run(a) -> int:
    ROOT.mkdir(exist_ok=True)
    results = []
    for b in a.backend:
        r = run_backend(b, a)
        results.append(r)
        print(summarize(r), flush=True)
    print("\n| backend | rows | rows/s | 0-10k | 140-150k | hang | size | bm25/knn rows | reopen count |")
    for r in results:
        print(summarize(r))
    return 0


def cmd_batch_probe(a) -> int:
    """Short insert runs at several batch sizes on a fresh DB each; prints rows/s."""
    ROOT.mkdir(exist_ok=True)
    for bs in [int(x) for x in a.batches.split(",")]:
        d = ROOT / f"batchprobe_{bs}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        url = BACKENDS[a.backend].format(dir=d / "db")
        out = d / "out.json"
        rc, tail = run_sub(["_probe", "--url", url, "--rows", str(a.rows), "--batch", str(bs),
                            "--out", str(out)], 900)
        res = json.loads(out.read_text()) if out.exists() else {"rc": rc, "tail": tail}
        print(f"batch={bs}: {json.dumps(res)}", flush=True)
        shutil.rmtree(d, ignore_errors=True)
    return 0


async def worker_probe(a) -> int:
    rng = random.Random(1)
    windows = load_windows()
    db = await open_db(a.url)
    await db.query(SCHEMA)
    rows_all = [make_row(i, windows, rng) for i in range(a.rows)]
    t0 = time.perf_counter()
    marks = []
    for s in range(0, a.rows, a.batch):
        await db.query("INSERT INTO chunk $rows RETURN NONE", {"rows": rows_all[s : s + a.batch]})
        if (s + a.batch) % 1000 == 0:
            marks.append(round(time.perf_counter() - t0, 2))
    el = time.perf_counter() - t0
    await db.close()
    Path(a.out).write_text(json.dumps({"rows": a.rows, "s": round(el, 2), "rows_per_s": round(a.rows / el, 1),
                                       "elapsed_per_1000": marks}))
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--backend", action="append", required=True,
                   help="backend name (" + ", ".join(BACKENDS) + ") or a URL template with {dir}")
    r.add_argument("--rows", type=int, default=150_000)
    r.add_argument("--batch", type=int, default=100,
                   help="rows per INSERT (batch-probe on this machine: 10 ~ 100 > 500)")
    r.add_argument("--seed", type=int, default=7)
    r.add_argument("--max-insert-s", type=float, default=0, help="stop inserting after this many seconds (0=never)")
    r.add_argument("--tt-mark", action="store_true", default=True)
    r.add_argument("--keep", action="store_true", help="keep the DB directory")
    r.add_argument("--reopen-every", type=int, default=0,
                   help="experiment: close and reopen the DB in the worker every N rows (0=never)")
    r.add_argument("--tag", default="", help="suffix for the run/log/result names")
    bp = sub.add_parser("batch-probe")
    bp.add_argument("--backend", default="surrealkv")
    bp.add_argument("--rows", type=int, default=2000)
    bp.add_argument("--batches", default="10,50,200,500")
    # internal workers
    w = sub.add_parser("_insert")
    w.add_argument("--url", required=True)
    w.add_argument("--run-dir", required=True)
    w.add_argument("--log", required=True)
    w.add_argument("--data-dir")
    w.add_argument("--rows", type=int, required=True)
    w.add_argument("--batch", type=int, required=True)
    w.add_argument("--seed", type=int, default=7)
    w.add_argument("--max-insert-s", type=float, default=0)
    w.add_argument("--tt-mark", action="store_true")
    w.add_argument("--reopen-every", type=int, default=0)
    for nm in ("_second", "_reopen", "_probe"):
        s = sub.add_parser(nm)
        s.add_argument("--url", required=True)
        s.add_argument("--out", required=True)
        s.add_argument("--seed", type=int, default=7)
        s.add_argument("--rows", type=int, default=0)
        s.add_argument("--batch", type=int, default=10)
    a = p.parse_args()
    if a.cmd == "run":
        sys.exit(cmd_run(a))
    if a.cmd == "batch-probe":
        sys.exit(cmd_batch_probe(a))
    fn = {"_insert": worker_insert, "_second": worker_second, "_reopen": worker_reopen, "_probe": worker_probe}[a.cmd]
    code = 1
    try:
        code = asyncio.run(fn(a))
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # never let the native extension run its exit-time teardown


if __name__ == "__main__":
    main()
