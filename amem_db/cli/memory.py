"""`amem-db remember`, `amem-db entities list|get|history`, `amem-db forget` and
`amem-db inspect` (typed memory, docs/MEMORY-DESIGN.md).

The fact syntax is parsed by amem_db/fact_syntax.py (shared with ``Memory.remember``
and the MCP server); everything it means (identity, types, reconciliation,
validation) is decided by ``fn::amem::facts::write`` in the database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..constants import FACTS_BATCH_MAX
from ..errors import InvalidInput, NotFound
from ..fact_syntax import FACT_SYNTAX, parse_entity, parse_fact
from .app import (
    Session,
    as_json,
    as_of_option,
    at_instant_option,
    err,
    json_option,
    lens_option,
    out,
    parse_during,
    parse_lens,
    print_json,
    valid_at_option,
    valid_during_option,
)


def _optional(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v not in (None, [], "")}


async def remember(
    session: Session,
    text: str = typer.Argument("", help="free text to keep as memory passages (an utterance, a note); may be empty with --fact"),
    fact: list[str] = typer.Option([], "--fact", help=f"a typed fact: {FACT_SYNTAX} (repeat)"),
    scope: list[str] = typer.Option([], "--scope", help="scope path the memory belongs to (repeat)"),
    category: str | None = typer.Option(None, help="identity | knowledge (default) | context"),
    confidence: float | None = typer.Option(None, help="0..1 (default 1); a new value supersedes an old one at >= 0.7 and >= the old one's"),
    observed_at: str | None = typer.Option(None, "--observed-at", help="when the source said it (ISO 8601; default now)"),
    valid_from: str | None = typer.Option(None, "--valid-from", help="when it starts to hold in the world (ISO 8601; default observed-at)"),
    valid_until: str | None = typer.Option(None, "--valid-until", help="when it stops holding (ISO 8601; default open)"),
    session_id: str | None = typer.Option(None, "--session", help="conversation/session id"),
    role: str | None = typer.Option(None, help="user | assistant | system | tool"),
    idempotency_key: str | None = typer.Option(None, "--idempotency-key", help="a repeat within 24 h returns the first answer"),
    location: str | None = typer.Option(None, "--location", metavar="LAT,LNG", help="where the facts and passages apply (recall --near / --within / --nearest)"),
    batch: Path | None = typer.Option(None, "--batch", metavar="FILE.jsonl", help="one memory write request (JSON, the shape of mem.facts.write) a line, written in order; no other option applies"),
    json_output: bool = json_option(),
) -> None:
    """Remember facts and text in one transaction (all or nothing); --batch: many requests from JSONL.

    Example: amem-db remember "Alice is our CTO now." --fact 'person:Alice role=CTO' --fact 'person:Alice works_at->organisation:Acme'

    Example: amem-db remember --batch turns.jsonl   (a line: {"text": "...", "session_id": "s1", "observed_at": "2024-05-01T09:30:00Z"})
    """
    if batch is not None:
        given = _optional(text=text.strip(), fact=fact, scope=scope, category=category, confidence=confidence, observed_at=observed_at,
                          valid_from=valid_from, valid_until=valid_until, session_id=session_id, role=role,
                          idempotency_key=idempotency_key, location=location)
        if given:
            raise InvalidInput(f"--batch takes every field from its lines; remove {', '.join(sorted(given))}")
        return await remember_batch(session, batch, json_output)
    if not text.strip() and not fact:
        raise InvalidInput("nothing to remember: give text, --fact, or both")
    request = _optional(triples=[parse_fact(f) for f in fact], text=text, scopes=list(scope), category=category,
                        confidence=confidence, observed_at=observed_at, valid_from=valid_from, valid_until=valid_until,
                        session_id=session_id, role=role, idempotency_key=idempotency_key, location=location)
    mem = await session.memory()
    result = as_json(await mem.facts.write(request))
    if json_output:
        return print_json(result)
    table = Table("#", "fact", "outcome", "id")
    for t in result["triples"]:
        table.add_row(str(t["triple"] + 1), fact[t["triple"]], t["outcome"], t.get("id") or "")
    if fact:
        out.print(table)
    out.print(f"write {result['write']}: {len(result['triples'])} facts, {len(result['passages'])} memory passages")


def read_requests(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The requests of a JSONL file as (line number, request); blank lines are skipped.
    A line that is not a JSON object fails the whole file before anything is written."""
    if not path.is_file():
        raise InvalidInput(f"--batch {path}: no such file")
    out = []
    with path.open(encoding="utf-8") as lines:
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"--batch {path} line {n}: not JSON ({exc.msg})") from None
            if not isinstance(request, dict):
                raise InvalidInput(f"--batch {path} line {n}: a request is a JSON object such as {{\"text\": \"...\"}}")
            out.append((n, request))
    if not out:
        raise InvalidInput(f"--batch {path}: no requests")
    return out


async def remember_batch(session: Session, path: Path, json_output: bool) -> None:
    """Write a JSONL file through mem.facts.write_many, FACTS_BATCH_MAX lines per call (one
    embedder call each); a failed line is reported with its line number and the rest go on."""
    lines = read_requests(path)
    mem = await session.memory()
    written = facts = passages = 0
    failures: list[dict[str, Any]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False, disable=json_output) as bar:
        task = bar.add_task("requests", total=len(lines))
        for at in range(0, len(lines), FACTS_BATCH_MAX):
            part = lines[at: at + FACTS_BATCH_MAX]
            result = await mem.facts.write_many([r for _, r in part],
                                                progress=lambda done, _total, base=at: bar.update(task, completed=base + done))
            written += sum(1 for w in result.writes if w is not None)
            facts, passages = facts + result.facts, passages + result.passages
            failures += [{"line": part[e.index][0], "code": e.code, "message": e.message} for e in result.errors]
    summary = {"requests": len(lines), "written": written, "failed": len(failures), "facts": facts, "passages": passages, "errors": failures}
    if json_output:
        print_json(summary)
    else:
        for f in failures:
            err.print(f"[red]line {f['line']}[/] {f['code']}: {f['message']}", highlight=False)
        out.print(f"{written} of {len(lines)} requests written: {facts} facts, {passages} memory passages; {len(failures)} failed")
    if failures and not written:
        raise InvalidInput(f"nothing was written: all {len(lines)} requests failed (first: line {failures[0]['line']}: {failures[0]['message']})")


async def list_entities(
    session: Session,
    type: str | None = typer.Option(None, "--type", help="only this entity type (person, organisation, project, ...)"),
    limit: int = typer.Option(50, help="page size (max 500)"),
    offset: int = typer.Option(0),
    lens: list[str] = lens_option(),
    as_of: str | None = as_of_option(),
    at_instant: str | None = at_instant_option(),
    json_output: bool = json_option(),
) -> None:
    """Entities you can see, by type (named by --as-of). Example: amem-db entities list --type person"""
    mem = await session.memory()
    page = as_json(await mem.entities.list(type=type, lens=parse_lens(lens), limit=limit, offset=offset,
                                           as_of=as_of, at_instant=at_instant))
    if json_output:
        return print_json(page)
    table = Table("type", "name", "id")
    for e in page["entities"]:
        table.add_row(e["type"], e["name"], e["id"])
    out.print(table)
    out.print(f"{len(page['entities'])} of {page['total']}")


def _validity(row: dict[str, Any]) -> str:
    return f"{row.get('valid_from') or '…'} .. {row.get('valid_until') or 'open'}"


async def get_entity(
    session: Session,
    type: str = typer.Argument(..., help="entity type, e.g. person"),
    name: str = typer.Argument(..., help="entity name or alias, any case"),
    lens: list[str] = lens_option(),
    as_of: str | None = as_of_option(),
    at_instant: str | None = at_instant_option(),
    valid_at: str | None = valid_at_option(),
    valid_during: str | None = valid_during_option(),
    json_output: bool = json_option(),
) -> None:
    """One entity with its attributes and relations: current, or at a time.

    Example: amem-db entities get organisation Acme --as-of 2024-06-01 --valid-at 2021-06-01
    (what we believed last June about who held each role in 2021)
    """
    mem = await session.memory()
    detail = await mem.entities.get(type, name, lens=parse_lens(lens), as_of=as_of, at_instant=at_instant,
                                    valid_at=valid_at, valid_during=parse_during(valid_during))
    if detail is None:
        raise NotFound(f"no {type} named {name!r} (in what you can see)")
    data = as_json(detail)
    if json_output:
        return print_json(data)
    aliases = f"  (also: {', '.join(data['aliases'])})" if data.get("aliases") else ""
    out.print(f"[bold]{data['name']}[/]  {data['type']}  {data['id']}{aliases}")
    table = Table("key", "value", "confidence", "valid")
    for row in data["attributes"] + data["relations"]:
        table.add_row(row["key"], str(row["value"] if row.get("target") is None else f"-> {row['target']}"),
                      f"{row['confidence']:.2f}", _validity(row))
    out.print(table)


async def history(
    session: Session,
    type: str = typer.Argument(..., help="entity type"),
    name: str = typer.Argument(..., help="entity name or alias"),
    fact_key: str = typer.Argument(..., metavar="KEY", help="attribute or relation key, e.g. role"),
    lens: list[str] = lens_option(),
    as_of: str | None = as_of_option(),
    at_instant: str | None = at_instant_option(),
    json_output: bool = json_option(),
) -> None:
    """Every value one key has had, newest first, with both clocks (--as-of: the history as it stood then).

    Example: amem-db entities history person Alice role
    """
    mem = await session.memory()
    data = as_json(await mem.entities.history(type, name, fact_key, lens=parse_lens(lens), as_of=as_of, at_instant=at_instant))
    if json_output:
        return print_json(data)
    table = Table("value", "current", "valid (world)", "recorded", "superseded")
    for row in data["rows"]:
        value = str(row["value"] if row.get("target") is None else f"-> {row['target']}")
        table.add_row(value, "yes" if row["current"] else "", _validity(row), str(row.get("recorded_at") or ""),
                      str(row.get("superseded_at") or ""))
    out.print(table)


def _values(rows: list[dict[str, Any]]) -> str:
    return ", ".join(str(r["value"] if r.get("target") is None else f"-> {r['target']}") for r in rows)


async def diff(
    session: Session,
    t1: str = typer.Argument(..., help="the earlier known time (ISO 8601)"),
    t2: str = typer.Argument(..., help="the later known time"),
    entity: str | None = typer.Option(None, "--entity", metavar="TYPE:NAME", help="only this entity"),
    fact_key: str | None = typer.Option(None, "--fact-key", help="only this key"),
    lens: list[str] = lens_option(),
    json_output: bool = json_option(),
) -> None:
    """Facts added, changed and closed between two known times (the current read at each, compared).

    Example: amem-db facts diff 2024-01-01 2024-07-01 --entity organisation:Acme
    """
    mem = await session.memory()
    ent = parse_entity(entity) if entity else None
    data = as_json(await mem.facts.diff(t1, t2, lens=parse_lens(lens), key=fact_key,
                                        entity=(ent["type"], ent["name"]) if ent else None))
    if json_output:
        return print_json(data)
    table = Table("change", "entity", "key", "before", "after")
    for row in data["added"]:
        table.add_row("added", row["entity"], row["key"], "", _values([row]))
    for c in data["changed"]:
        table.add_row("changed", c["entity"], c["key"], _values(c["before"]), _values(c["after"]))
    for row in data["closed"]:
        table.add_row("closed", row["entity"], row["key"], _values([row]), "")
    out.print(table)
    out.print(f"{len(data['added'])} added, {len(data['changed'])} changed, {len(data['closed'])} closed")


# --- forget and inspect ------------------------------------------------------------------
async def forget(
    session: Session,
    ids: list[str] = typer.Argument(None, help="record ids to forget (attribute:..., relation:..., memory_chunk:..., entity:...)"),
    entity: str | None = typer.Option(None, "--entity", help="forget this entity's facts and names: 'TYPE:NAME', e.g. 'person:Alice'"),
    fact_key: str | None = typer.Option(None, "--fact-key", help="with --entity: only this key's facts, e.g. role (the names stay; --key is the credential)"),
    write: str | None = typer.Option(None, "--write", help="the facts and passages of one write (its ULID)"),
    session_id: str | None = typer.Option(None, "--session", help="the facts and passages of one session"),
    label: list[str] = typer.Option([], "--label", help="rows carrying this label (repeat: all must match)"),
    scope: list[str] = typer.Option([], "--scope", help="only rows wholly inside this scope path (repeat)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="count what would be forgotten; change nothing"),
    purge: bool = typer.Option(False, "--purge", help="erase rows, history, uncertainty, edges and passages (default: soft)"),
    json_output: bool = json_option(),
) -> None:
    """Forget memory by ids or by query, in one transaction; soft by default (kept for audit).

    Example: amem-db forget --entity 'person:Alice' --fact-key role --dry-run
    """
    query = _optional(entity=parse_entity(entity) if entity else None, key=fact_key, write=write,
                      session_id=session_id, labels=list(label))
    if not ids and not query:
        raise InvalidInput("nothing to forget: give ids, --entity, --write, --session or --label")
    mem = await session.memory()
    result = as_json(await mem.forget(list(ids or []) or None, query=query or None, scopes=list(scope) or None,
                                      dry_run=dry_run, purge=purge))
    if json_output:
        return print_json(result)
    table = Table("table", "rows")
    for t, n in result["forgotten"].items():
        if n:
            table.add_row(t, str(n))
    out.print(table)
    what = "would be " + ("purged" if purge else "forgotten") if result["dryRun"] else ("purged" if result["purged"] else "forgotten (soft)")
    out.print(f"{sum(result['forgotten'].values())} rows {what}; {len(result['ids'])} matched"
              + (f", {len(result['missing'])} not found: {', '.join(result['missing'])}" if result["missing"] else ""), highlight=False)


async def inspect(
    session: Session,
    ref: str = typer.Argument(..., help="a record id (entity:..., attribute:..., relation:..., memory_chunk:..., chunk:..., retrieval_trace:...) or 'TYPE:NAME' of an entity with --entity"),
    as_entity: bool = typer.Option(False, "--entity", help="REF is 'TYPE:NAME' of an entity, e.g. 'person:Alice Smith'"),
    lens: list[str] = lens_option(),
    json_output: bool = json_option(),
) -> None:
    """One record by reference, with what explains it (history neighbours, uncertainty, mentions, document).

    Example: amem-db inspect 'person:Alice Smith' --entity
    """
    mem = await session.memory()
    found = await mem.inspect(parse_entity(ref) if as_entity else ref, lens=parse_lens(lens))
    if found is None:
        raise NotFound(f"nothing to inspect at {ref!r} (in what you can see)")
    data = as_json(found)
    if json_output:
        return print_json(data)
    record = data["record"]
    out.print(f"[bold]{data['kind']}[/] {data['id']}", highlight=False)
    for k in ("name", "type", "text", "value", "target", "key", "write", "valid_from", "valid_until", "recorded_at", "superseded_at", "source"):
        if record.get(k) not in (None, "", []):
            out.print(f"  {k}: {record[k]}", highlight=False)
    for k in ("aliases", "attributes", "relations", "incoming", "uncertainty", "mentions"):
        if data.get(k):
            out.print(f"  {k}: {len(data[k])}", highlight=False)
    for k in ("supersedes", "superseded_by"):
        if data.get(k):
            out.print(f"  {k}: {data[k]['id']} ({data[k].get('value') if data[k].get('target') is None else data[k]['target']})", highlight=False)
    if data.get("document"):
        out.print(f"  document: {data['document']['id']} {data['document'].get('title') or data['document'].get('source') or ''}", highlight=False)
