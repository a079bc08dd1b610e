"""Server mode: the suite against a real SurrealDB server in a container, and the
deployment files of docs/DEPLOY.md (issue 15).

Where a Docker daemon answers (testcontainers; marked ``slow``, so ``make test`` and
``make test-container`` run them, ``make test-fast`` does not):

* ``test_suite_against_a_surrealdb_container``: the official image, pinned
  (``SURREALDB_IMAGE``), started by testcontainers; ``amem-db migrate`` / ``verify`` /
  ``grant`` through ws:// as root, strict mode checked as a credential, then the suite
  (``-m "not slow"``, or ``AMEM_CONTAINER_PYTEST_ARGS``) in a subprocess with
  ``AMEM_TEST_URL`` / ``AMEM_TEST_USER`` / ``AMEM_TEST_PASS`` pointing at it;
* ``test_single_server_compose`` and ``test_tikv_cluster_compose``: deploy/*.compose.yaml
  brought up by testcontainers' DockerCompose (needs the compose plugin), the same CLI
  steps through every SurrealDB node, and a server-mode subset (``SERVER_SUBSET``).

Where no daemon answers (this project's CI machine), those skip and say why. What they do
once a server is up (the operator steps, the suite in a subprocess with AMEM_TEST_URL) is
rehearsed everywhere against the in-process dev server. The rest also runs everywhere: the compose files parse (PyYAML) and pin the image the docs name, that
image is the embedded engine's version, and every ``amem-db`` command docs/DEPLOY.md
shows exists in the CLI with the options it is shown with.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml  # PyYAML: a dependency of the test extra (pyproject.toml)
from typer.testing import CliRunner

from amem_db.cli import app

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
DEPLOY_MD = ROOT / "docs" / "DEPLOY.md"
COMPOSE_FILES = {"single": "single-server.compose.yaml", "tikv": "tikv-cluster.compose.yaml"}

# The official image, pinned to the engine the embedded tests run (core 3.2.4; checked
# below against surrealdb_embedded). Not pulled from this machine (no registry access):
# docs/DEPLOY.md says so.
SURREALDB_IMAGE = "surrealdb/surrealdb:v3.2.4"
PASSWORD = "amem-container-test"
# the modules whose databases come from tests/conftest.py (they follow AMEM_TEST_URL):
# the compose runs use these; the single-container run takes the whole fast suite
SERVER_SUBSET = ["tests/test_migrator.py", "tests/test_client.py", "tests/test_query.py", "tests/test_facts.py",
                 "tests/test_recall.py", "tests/test_forget.py"]
# options every command takes (amem_db/cli: before or after the command); `VALUE` ones take a value
GLOBAL_VALUE_OPTIONS = {"--url", "--ns", "--db", "--user", "--pass", "--key", "--embedder"}


# --- where Docker is ----------------------------------------------------------------
def docker_missing() -> str | None:
    """Why the container tests cannot run here, or None when a daemon answers."""
    if os.environ.get("AMEM_TEST_URL"):
        return "AMEM_TEST_URL is set: this run already targets a server (no container inside a server run)"
    try:
        import docker

        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # docker.errors.DockerException and the transport errors under it
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        return (f"no Docker daemon answers (DOCKER_HOST or /var/run/docker.sock): {first}. "
                "The server-mode run needs Docker; elsewhere point the suite at a server with AMEM_TEST_URL (README 'Tests')")
    return None


def compose_missing() -> str | None:
    why = docker_missing()
    if why:
        return why
    try:
        done = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        return f"no docker CLI on PATH ({exc}): DockerCompose runs `docker compose`"
    if done.returncode != 0:
        return f"`docker compose` is unavailable (the compose plugin): {(done.stderr or done.stdout).strip()[:200]}"
    return None


needs_docker = pytest.mark.skipif(bool(docker_missing()), reason=docker_missing() or "")
needs_compose = pytest.mark.skipif(bool(compose_missing()), reason=compose_missing() or "")


# --- what a server run does ---------------------------------------------------------
def amem(url: str, *args: str, ns: str, password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
    """`amem-db` as a process, signed in as root on the server (the operator)."""
    cmd = [sys.executable, "-m", "amem_db", "--url", url, "--user", "root", "--pass", password, "--ns", ns, "--db", "main", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env=os.environ | {"COLUMNS": "200"})


async def credential_cannot_define_tables(url: str, ns: str, key: str, password: str) -> None:
    """Strict mode as set by migrate (docs/DEPLOY.md): a credential's CREATE into an
    unknown table is refused and defines nothing."""
    from amem_db.connection import Target, close_quietly, open_connection

    conn = await open_connection(Target(url=url, ns=ns, db="main", key=key))
    try:
        raw = await conn.query_raw("CREATE squatted_by_a_tenant SET x = 1")
        assert raw.get("error") or raw["result"][0]["status"] == "ERR", raw
    finally:
        await close_quietly(conn)
    root = await open_connection(Target(url=url, ns=ns, db="main", user="root", password=password))
    try:
        (info,) = await root.query("INFO FOR DB")
        assert "squatted_by_a_tenant" not in info["tables"]
    finally:
        await close_quietly(root)


def operator_steps(url: str, ns: str, password: str = PASSWORD) -> None:
    """The commands docs/DEPLOY.md gives an operator, against the server at `url`."""
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = amem(url, *args, ns=ns, password=password)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        return done

    run("migrate")
    again = run("migrate")
    assert "up to date" in again.stdout + again.stderr, again.stdout + again.stderr
    run("verify", "--json")
    key = json.loads(run("grant", "container-smoke", "--write", "org/smoke", "--json").stdout)["key"]
    asyncio.run(credential_cannot_define_tables(url, ns, key, password))
    run("keys", "revoke", "container-smoke")


def suite_against(url: str, pytest_args: list[str], password: str = PASSWORD) -> None:
    """The test suite in a subprocess, every conftest database on the server at `url`."""
    env = os.environ | {"AMEM_TEST_URL": url, "AMEM_TEST_USER": "root", "AMEM_TEST_PASS": password}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ignore", "tests/test_container.py", *pytest_args]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=7200)
    assert done.returncode == 0, f"{shlex.join(cmd)} against {url}:\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]  # something ran


@contextlib.contextmanager
def compose(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[object]:
    from testcontainers.compose import DockerCompose

    env = tmp_path / "compose.env"
    # empty host ports: Docker picks free ones on loopback (the files default to 8000/8001)
    env.write_text(f"SURREAL_PASS={PASSWORD}\nAMEM_HOST_PORT=127.0.0.1:\nAMEM_HOST_PORT_2=127.0.0.1:\n")
    monkeypatch.setenv("COMPOSE_PROJECT_NAME", f"amem-test-{name}-{uuid.uuid4().hex[:8]}")
    with DockerCompose(DEPLOY, compose_file_name=COMPOSE_FILES[name], env_file=str(env), pull=True, wait=True) as stack:
        yield stack


def ws_url(stack: object, service: str) -> str:
    host, port = stack.get_service_host_and_port(service, 8000)  # type: ignore[attr-defined]
    return f"ws://{host or '127.0.0.1'}:{port}"


# --- the runs (Docker) --------------------------------------------------------------
@pytest.mark.slow
@needs_docker
def test_suite_against_a_surrealdb_container():
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import HttpWaitStrategy

    container = (DockerContainer(SURREALDB_IMAGE)
                 .with_command(["start", "--log", "info", "--user", "root", "--pass", PASSWORD, "memory"])
                 .with_exposed_ports(8000)
                 .waiting_for(HttpWaitStrategy(8000, "/health").for_status_code(200)))
    with container:
        url = f"ws://{container.get_container_host_ip()}:{container.get_exposed_port(8000)}"
        operator_steps(url, ns=f"deploy_{uuid.uuid4().hex[:8]}")
        suite_against(url, shlex.split(os.environ.get("AMEM_CONTAINER_PYTEST_ARGS", '-m "not slow"')))


@pytest.mark.slow
@needs_compose
def test_single_server_compose(monkeypatch, tmp_path):
    with compose("single", monkeypatch, tmp_path) as stack:
        url = ws_url(stack, "surrealdb")
        operator_steps(url, ns="amem")
        suite_against(url, ["-m", "not slow", *SERVER_SUBSET])


@pytest.mark.slow
@needs_compose
def test_tikv_cluster_compose(monkeypatch, tmp_path):
    """Two SurrealDB nodes on one TiKV cluster: what one node migrates, the other serves."""
    with compose("tikv", monkeypatch, tmp_path) as stack:
        first, second = ws_url(stack, "surrealdb-1"), ws_url(stack, "surrealdb-2")
        operator_steps(first, ns="amem")
        verify = amem(second, "verify", "--json", ns="amem")
        assert verify.returncode == 0, verify.stderr[-3000:]
        again = amem(second, "migrate", ns="amem")  # the bookkeeping lives in TiKV, not in a node
        assert again.returncode == 0 and "up to date" in (again.stdout + again.stderr)
        suite_against(second, ["-m", "not slow", *SERVER_SUBSET])


# --- the same steps where no Docker runs: the dev server stands in for the container -------
# Everything the runs above do once their server is up, against the in-process dev server
# (the embedded engine behind ws://), so the path itself is exercised on every machine.
def test_operator_steps_rehearsed_on_the_dev_server():
    from devserver_fixture import background_dev_server

    with background_dev_server(user="root", password=PASSWORD) as server:
        operator_steps(server.ws_url, ns=f"rehearse_{uuid.uuid4().hex[:8]}")


@pytest.mark.slow  # ~1-2 min: the server-mode subset in a subprocess
def test_server_mode_subset_rehearsed_on_the_dev_server():
    from devserver_fixture import background_dev_server

    with background_dev_server(user="root", password=PASSWORD) as server:
        suite_against(server.ws_url, ["-m", "not slow", *SERVER_SUBSET])


# --- what holds everywhere ------------------------------------------------------------
def compose_file(name: str) -> dict:
    return yaml.safe_load((DEPLOY / COMPOSE_FILES[name]).read_text())


def surreal_services(spec: dict) -> dict[str, dict]:
    return {n: s for n, s in spec["services"].items() if str(s.get("image", "")).startswith("surrealdb/surrealdb:")}


@pytest.mark.parametrize("name", sorted(COMPOSE_FILES))
def test_compose_files_parse_and_pin_the_tested_image(name):
    spec = compose_file(name)
    assert isinstance(spec, dict) and spec.get("name") and isinstance(spec.get("services"), dict), spec
    nodes = surreal_services(spec)
    assert nodes, f"{name}: no SurrealDB service"
    for service, s in nodes.items():
        assert s["image"] == SURREALDB_IMAGE, (service, s["image"])
        command = s["command"]
        assert isinstance(command, list) and command[0] == "start", command
        assert any(re.fullmatch(r"(rocksdb|surrealkv|tikv)://?\S+", part) for part in command), command  # durable storage
        assert "SURREAL_PASS" in s["environment"] and "?" in s["environment"]["SURREAL_PASS"], "the password must be required"
        (port,) = s["ports"]
        assert port.endswith(":8000") and "127.0.0.1" in port, port  # loopback unless the operator says otherwise
        assert s["healthcheck"]["test"][:3] == ["CMD", "/surreal", "is-ready"]
    for service, s in spec["services"].items():  # every tag pinned (no :latest, no bare image)
        image = str(s["image"])
        assert ":" in image and not image.endswith(":latest") and not image.endswith(":nightly"), (service, image)


def test_cluster_compose_runs_surrealdb_nodes_on_pd_and_tikv():
    spec = compose_file("tikv")
    services = spec["services"]
    pd = [n for n, s in services.items() if s["image"].startswith("pingcap/pd:")]
    tikv = [n for n, s in services.items() if s["image"].startswith("pingcap/tikv:")]
    assert len(pd) == 1 and len(tikv) == 3, services.keys()
    for n in tikv:
        assert f"--pd={pd[0]}:2379" in services[n]["command"] and f"--advertise-addr={n}:20160" in services[n]["command"]
    nodes = surreal_services(spec)
    assert len(nodes) == 2
    for s in nodes.values():
        assert f"tikv://{pd[0]}:2379" in s["command"] and set(tikv) <= set(s["depends_on"])
    host_ports = [s["ports"][0].rsplit(":", 1)[0] for s in nodes.values()]
    assert len(set(host_ports)) == 2, host_ports  # two nodes cannot share a host port


def test_image_tag_is_the_embedded_engine_version():
    """The container runs the engine the rest of the suite runs embedded (bump both together)."""
    from surrealdb import AsyncSurreal

    async def version() -> str:
        conn = AsyncSurreal("mem://")
        await conn.connect()
        try:
            return str(await conn.version())
        finally:
            await conn.close()

    engine = re.search(r"\d+\.\d+\.\d+", asyncio.run(version()))
    assert engine, "no engine version"
    assert SURREALDB_IMAGE.rsplit(":v", 1)[1] == engine.group(0), (SURREALDB_IMAGE, engine.group(0))


def test_docs_name_the_pinned_image_and_say_it_is_unverified():
    text = DEPLOY_MD.read_text()
    assert SURREALDB_IMAGE in text
    assert re.search(r"could\s+not\s+be\s+(pulled|verified)", text), "DEPLOY.md must say the tag was not verified from this machine"
    for name in COMPOSE_FILES.values():
        assert f"deploy/{name}" in text, name
    readme = (ROOT / "README.md").read_text()
    assert "make test-container" in readme and "AMEM_TEST_URL" in readme and "docs/DEPLOY.md" in readme


# --- every amem-db command DEPLOY.md shows exists ---------------------------------------------
def shown_commands(text: str) -> list[list[str]]:
    """The `amem-db ...` lines of the ```sh blocks (continuations joined, comments dropped)."""
    body = "\n".join(re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)).replace("\\\n", " ")
    lines = []
    for ln in body.splitlines():
        words = shlex.split(ln, comments=True)
        # a line may set variables first (AMEM_TEST_URL=... amem-db ...)
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            words.pop(0)
        if words and words[0] == "amem-db":
            lines.append(words[1:])
    return lines


def resolve(args: list[str]) -> tuple[Any, list[str], list[str]]:
    """(the click command, its path, the options used) for one amem-db invocation (typer
    vendors click: a group is what has ``commands``)."""
    group = typer.main.get_command(app)
    path: list[str] = []
    used: list[str] = []
    command: Any = group
    words = iter(args)
    for word in words:
        if word.startswith("--"):
            option = word.split("=", 1)[0]
            used.append(option)
            if option in GLOBAL_VALUE_OPTIONS and "=" not in word:
                next(words, None)
            continue
        if hasattr(command, "commands"):
            assert word in command.commands, f"`amem-db {' '.join(path + [word])}`: no such command (shown in docs/DEPLOY.md)"
            command = command.commands[word]
            path.append(word)
        else:
            # an argument, or the value of the previous option: skip values of options that take one
            continue
    return command, path, used


def test_every_amem_db_command_in_deploy_md_exists():
    shown = shown_commands(DEPLOY_MD.read_text())
    assert len(shown) >= 8, shown  # migrate, verify, grant, keys, status ... are all shown
    listed = CliRunner().invoke(app, ["--help"], prog_name="amem-db", env={"COLUMNS": "200"}).output
    seen = set()
    for args in shown:
        command, path, used = resolve(args)
        assert path and not hasattr(command, "commands"), f"amem-db {shlex.join(args)}: no command named"
        assert re.search(rf"│ {re.escape(path[0])}\s", listed), f"`amem-db --help` does not list {path[0]}"
        options = {o for p in command.params for o in p.opts}
        unknown = [o for o in used if o not in options]
        assert not unknown, f"amem-db {shlex.join(args)}: {unknown} not options of `amem-db {' '.join(path)}`"
        seen.add(" ".join(path))
    assert {"migrate", "verify", "grant", "keys revoke"} <= seen, seen


def test_the_command_check_can_fail():
    """The checker above refuses a command and an option the CLI does not have."""
    with pytest.raises(AssertionError, match="no such command"):
        resolve(["--url", "ws://x", "backup"])
    command, path, used = resolve(["migrate", "--force-unlokc"])
    assert path == ["migrate"] and "--force-unlokc" not in {o for p in command.params for o in p.opts}
    assert shown_commands("```sh\nAMEM_URL=ws://x amem-db --url ws://y verify --json  # c\n```\n") == [["--url", "ws://y", "verify", "--json"]]
