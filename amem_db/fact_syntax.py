"""The one-line fact syntax shared by ``amem-db remember --fact``, ``Memory.remember(facts=...)``
and the MCP ``remember`` tool: ``TYPE:NAME KEY=VALUE`` (an attribute) or
``TYPE:NAME KEY->TYPE:NAME`` (a relation), and ``TYPE:NAME`` for an entity reference.

Parsing is input syntax only; everything a fact means (identity, types, reconciliation,
validation) is decided by ``fn::amem::facts::write`` in the database.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidInput

__all__ = ["FACT_SYNTAX", "parse_entity", "parse_fact"]

# TYPE:NAME KEY=VALUE (an attribute) or TYPE:NAME KEY->TYPE:NAME (a relation); NAME may hold spaces
_FACT = re.compile(r"^\s*(?P<type>[^:\s]+):(?P<name>.+?)\s+(?P<key>[^\s=]+?)\s*(?:=(?P<value>.*)|->\s*(?P<ttype>[^:\s]+):(?P<tname>.+))$")
FACT_SYNTAX = "'TYPE:NAME KEY=VALUE' (an attribute) or 'TYPE:NAME KEY->TYPE:NAME' (a relation), e.g. 'person:Alice Smith role=CTO'"


def parse_fact(text: str, *, what: str = "--fact") -> dict[str, Any]:
    """One fact string as a write triple; the value stays a string (the database types
    nothing by guessing). ``what`` names the input in the error (the CLI's ``--fact``)."""
    m = _FACT.match(text)
    if not m:
        raise InvalidInput(f"{what} {text!r}: expected {FACT_SYNTAX}")
    triple: dict[str, Any] = {"entity": {"type": m["type"], "name": m["name"].strip()}, "key": m["key"]}
    if m["value"] is not None:
        triple["value"] = m["value"].strip()
    else:
        triple["target"] = {"type": m["ttype"], "name": m["tname"].strip()}
    return triple


def parse_entity(text: str, *, what: str = "--entity") -> dict[str, str]:
    """``'person:Alice Smith'`` as an entity reference {type, name}."""
    kind, sep, entity_name = text.partition(":")
    if not sep or not kind.strip() or not entity_name.strip():
        raise InvalidInput(f"{what} {text!r}: expected 'TYPE:NAME', e.g. 'person:Alice Smith'")
    return {"type": kind.strip(), "name": entity_name.strip()}
