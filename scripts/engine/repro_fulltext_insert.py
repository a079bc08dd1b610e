"""What a full-text entry costs on insert (docs/ENGINE-ISSUES.md #36): 16 rows of 20 random words
a statement into a table with a FULLTEXT index and into one without, ms a row (median of 6) at
0 .. N rows already indexed. URL: the store (default mem://; try surrealkv:///tmp/x, removed first).

    PYTHONPATH=. python scripts/engine/repro_fulltext_insert.py 10000
    URL=surrealkv:///tmp/ftkv PYTHONPATH=. python scripts/engine/repro_fulltext_insert.py 10000
"""
import asyncio, os, random, statistics, sys, time
from amem_db.connection import Target, open_connection
async def main():
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    conn = await open_connection(Target(url=os.environ.get("URL", "mem://"), ns="p", db="ft"))
    await conn.query("""
    DEFINE ANALYZER a TOKENIZERS class FILTERS lowercase, snowball(english);
    DEFINE TABLE f SCHEMAFULL; DEFINE FIELD t ON f TYPE string; DEFINE INDEX ft ON f FIELDS t FULLTEXT ANALYZER a BM25(1.2,0.75);
    DEFINE TABLE p SCHEMAFULL; DEFINE FIELD t ON p TYPE string;""")
    rng = random.Random(1)
    words = [f"w{i}" for i in range(3000)]
    def rows(k): return [{"t": " ".join(rng.choice(words) for _ in range(20))} for _ in range(k)]
    done = 0
    marks = [0, 1000, 2500, 5000, 10000, 20000]
    for m in [x for x in marks if x <= N]:
        while done < m:
            r = rows(256); await conn.query("INSERT INTO f $r RETURN NONE; INSERT INTO p $r RETURN NONE", {"r": r}); done += 256
        res = {"f": [], "p": []}
        for _ in range(6):
            for tb in ("f", "p"):
                r = rows(16); t = time.perf_counter(); await conn.query(f"INSERT INTO {tb} $r RETURN NONE", {"r": r}); res[tb].append((time.perf_counter() - t) * 1000 / 16)
                done += 8
        print(f"{done:6d} rows indexed: full-text {statistics.median(res['f']):.3f} ms a row, plain {statistics.median(res['p']):.3f} (load {os.getloadavg()[0]:.1f})", flush=True)
    os._exit(0)
asyncio.run(main())
