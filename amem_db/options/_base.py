"""The base of every read-option model: camelCase aliases (the stored function's
keys), one ``dump()`` to the JSON the stored function takes, and the metadata the
CLI / fuzzer / SurrealQL tests read (``wire_keys``, ``public_fields``, ``cli_flags``).

Values are judged by the stored functions (typed ``amem:invalid_input`` errors with
the same messages for every language), so a field's type documents what it takes
while the value goes through as given (``Wire``); only the argument shapes the
client refuses before a round trip (a str where a list belongs: ``TypeError``) are
checked here, with the client's messages (amem_db/_args.py)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator
from pydantic.alias_generators import to_camel

from .. import _args

__all__ = ["ReadOptionsBase", "option"]

_T = TypeVar("_T")
_O = TypeVar("_O", bound="ReadOptionsBase")


def _as_given(value: Any) -> Any:
    return value


#: a field whose value the stored function checks: annotated with the type it takes, passed as given
Wire = Annotated[_T, PlainValidator(_as_given)]
#: a lens (DNF scope selector), shape-checked as the client always did
LensValue = Annotated[list[list[str]] | None, PlainValidator(_args.lens)]


def strs_of(name: str) -> Any:
    """A list-of-str field named ``name`` in errors (a str is a TypeError)."""
    return PlainValidator(lambda v: _args.strs(name, v))


def option(doc: str = "", *, cli: str | bool = True, internal: bool = False, alias: str | None = None) -> Any:
    """A read option (default None = not sent). ``cli``: its ``amem-db`` flag (True:
    ``--kebab-name``; False: API only; a string: the flag); ``internal``: set by the
    client itself, not a caller's argument (``embeddingModel``, the rewrite results);
    ``alias``: the wire key when it is not the camelCase of the name."""
    return Field(default=None, description=doc, alias=alias,
                 json_schema_extra={"cli": False if internal else cli, "internal": internal})


class ReadOptionsBase(BaseModel):
    """One read's options. ``Model(**kwargs)`` by the Python names, ``dump()`` the
    stored function's object (only the options given)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid",
                              arbitrary_types_allowed=True, validate_default=False)

    #: the stored function these options are for (its known-keys check renders wire_keys())
    function: ClassVar[str] = ""
    #: fields the stored function accepts that the client method does not take (say why)
    not_arguments: ClassVar[frozenset[str]] = frozenset()

    def dump(self) -> dict[str, Any]:
        """The stored function's options object: camelCase keys, the options given
        (None = not given), values as given (datetimes stay datetimes for the SDK)."""
        out: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None:
                continue
            out[field.alias or name] = value.dump() if isinstance(value, ReadOptionsBase) else value
        return out

    @classmethod
    def pick(cls: type[_O], values: dict[str, Any]) -> _O:
        """The options of a client method's arguments (its ``locals()``): every field by
        its Python name; arguments that are not options (the query, the reranker ...) are
        left out. tests/test_options.py checks that each public field is an argument."""
        return cls(**{name: values[name] for name in cls.model_fields if name in values})

    @classmethod
    def wire_keys(cls) -> list[str]:
        """Every key the stored function accepts, camelCase, in field order."""
        return [f.alias or n for n, f in cls.model_fields.items()]

    @classmethod
    def public_fields(cls) -> list[str]:
        """The fields a caller passes (the client method's keyword arguments)."""
        return [n for n, f in cls.model_fields.items()
                if not (f.json_schema_extra or {}).get("internal") and n not in cls.not_arguments]  # type: ignore[union-attr]

    @classmethod
    def cli_flags(cls) -> dict[str, str | None]:
        """field -> its ``amem-db`` flag, None for the API-only options."""
        out: dict[str, str | None] = {}
        for n, f in cls.model_fields.items():
            extra: dict[str, Any] = f.json_schema_extra or {}  # type: ignore[assignment]
            if extra.get("internal") or n in cls.not_arguments:
                continue
            cli = extra.get("cli", True)
            out[n] = ("--" + n.replace("_", "-")) if cli is True else (cli or None)
        return out
