"""Where the database is: options > environment > embedded default; engine version range."""


import pytest

from amem_db.connection import check_engine_version, engine_url, resolve_target
from amem_db.errors import EngineTooOld, UnknownUrlScheme


def test_default_is_a_project_local_embedded_database(tmp_path):
    t = resolve_target(env={}, cwd=tmp_path)
    assert t.embedded
    assert t.url == f"surrealkv://{(tmp_path / '.amem' / 'data').resolve()}"
    assert (t.ns, t.db, t.user) == ("amem", "main", None)


def test_an_on_disk_store_syncs_as_the_engine_does_unless_told_otherwise():
    """The engine's own sync (every commit) by default; AMEM_SYNC sets another for surrealkv /
    file stores, a sync in the URL wins over it; memory and servers are left alone."""
    assert engine_url("surrealkv:///d/db", env={}) == "surrealkv:///d/db"
    assert engine_url("surrealkv:///d/db", env={"AMEM_SYNC": "1s"}) == "surrealkv:///d/db?sync=1s"
    assert engine_url("surrealkv+versioned:///d/db?versioned=true", env={"AMEM_SYNC": "never"}) == "surrealkv+versioned:///d/db?versioned=true&sync=never"
    assert engine_url("file:///d/db", env={"AMEM_SYNC": "every"}) == "file:///d/db?sync=every"
    assert engine_url("surrealkv:///d/db?sync=every", env={"AMEM_SYNC": "never"}) == "surrealkv:///d/db?sync=every"
    for url in ("mem://", "ws://db:8000", "https://db"):
        assert engine_url(url, env={"AMEM_SYNC": "1s"}) == url


def test_environment_beats_default_and_options_beat_environment():
    env = {"AMEM_URL": "ws://db:8000", "AMEM_NS": "n", "AMEM_DB": "d", "AMEM_USER": "u", "AMEM_PASS": "p"}
    t = resolve_target(env=env)
    assert (t.url, t.ns, t.db, t.user, t.password) == ("ws://db:8000", "n", "d", "u", "p")
    assert not t.embedded
    t = resolve_target(url="mem://", ns="n2", env=env)
    assert (t.url, t.ns, t.db) == ("mem://", "n2", "d")


@pytest.mark.parametrize("url", ["mem://", "surrealkv:///x", "surrealkv+versioned:///x", "file:///x",
                                 "ws://h:1", "wss://h", "http://h:8000", "https://h"])
def test_supported_schemes(url):
    assert resolve_target(url=url, env={}).url == url


def test_unknown_scheme_says_what_is_supported():
    with pytest.raises(UnknownUrlScheme, match="ws://"):
        resolve_target(url="redis://x", env={})


@pytest.mark.parametrize("version", ["surrealdb-2.3.10", "1.5.0"])
def test_old_engines_are_refused(version):
    with pytest.raises(EngineTooOld, match="older than the supported range"):
        check_engine_version(version)


def test_supported_engine_passes():
    assert check_engine_version("surrealdb-3.2.4") == (3, 2, 4)


async def test_embedded_engine_is_in_range(db):
    assert check_engine_version(await db.version()) >= (3, 0, 0)



def test_wal_reopen_size_is_700_mb_unless_the_operator_lowers_it():
    # AMEM_WAL_REOPEN_MB bounds the memory a bulk load holds (docs/ENGINE-ISSUES.md #37); it is
    # read when the module loads, so each value gets a fresh interpreter
    import os
    import subprocess
    import sys

    def size(env: dict[str, str]) -> int:
        base = {k: v for k, v in os.environ.items() if k != "AMEM_WAL_REOPEN_MB"}
        out = subprocess.run([sys.executable, "-c", "import amem_db.connection as c; print(c.WAL_REOPEN_BYTES)"],
                             env=base | env, capture_output=True, text=True, check=True)
        return int(out.stdout)

    assert size({}) == 700 * 1024 * 1024
    assert size({"AMEM_WAL_REOPEN_MB": "128"}) == 128 * 1024 * 1024


def test_freed_memory_goes_back_to_the_os_where_glibc_is():
    # close_quietly trims glibc's arenas after a close (the engine's freed memtable would
    # otherwise keep the process at its high-water mark: docs/BENCHMARKS.md "Peak RSS")
    import platform

    from amem_db.connection import release_freed_memory

    assert release_freed_memory() is (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
