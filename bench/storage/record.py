"""The base of the typed records that make up results.json (bench.storage.document,
bench.storage.case, bench.storage.sample).

A record is a dataclass; its fields, in order, are the keys it writes. Its annotations
say which fields hold other records (one, a list of them, or a dict of them by name), so
`to_json` and `from_json` need no code per record. Every other field holds JSON values
as their producer made them (a load generator's summary, a sampler's figures, ...), and
is copied in both directions, so the JSON form never shares a list or dict with the record.

A field whose default is `ABSENT` is optional: it is written only once it holds a value
(None included). These are the keys that only some runs or samples have (a burst, a
continuation, the tail of a failed sample's log) and those that documents stored by an
older harness lack: a migration does not invent a value that was never recorded, and a
stored document reads back exactly as it was. Schema 3 lists every field as a property
and the others as `required` (tests/unit/test_document.py holds the two together).
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, ClassVar

from bench.storage.results import ResultsError


class RecordError(ResultsError):
    """A stored document does not fit its records: names the record and the key."""


class _Absent:
    """The value of an optional field that the document does not have."""
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def optional(**kw) -> Any:
    """A field written only when it holds a value (see the module's docstring)."""
    return dataclasses.field(default=ABSENT, **kw)


class Record:
    """Mixed into a dataclass: JSON in and out, by its fields and their annotations.
    `SCHEMA` points at the record's object in schema 3 ("#" for the root). Records are
    slotted dataclasses: assigning a key that is not a field fails at once, rather than
    being left out of the document without a word."""
    __slots__ = ()
    SCHEMA: ClassVar[str]

    def to_json(self) -> dict:
        return {f.name: _to_json(getattr(self, f.name)) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not ABSENT}

    @classmethod
    def from_json(cls, data: Any):
        if not isinstance(data, dict):
            raise RecordError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
        unknown = [k for k in data if k not in cls.keys()]
        if unknown:
            raise RecordError(f"{cls.__name__}: key(s) {', '.join(map(repr, unknown))} that "
                              f"schema 3 does not describe")
        missing = [k for k in cls.required_keys() if k not in data]
        if missing:
            raise RecordError(f"{cls.__name__}: missing key(s) {', '.join(map(repr, missing))}")
        kinds = _nested(cls)
        return cls(**{k: _from_json(kinds.get(k), v, f"{cls.__name__}.{k}")
                      for k, v in data.items()})

    @classmethod
    def keys(cls) -> list[str]:
        """Every key the record may write, in order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def required_keys(cls) -> list[str]:
        """The keys it always writes."""
        return [f.name for f in dataclasses.fields(cls) if f.default is not ABSENT]


def _to_json(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


# how a field holds records: ("one" | "list" | "dict", the record class)
Nested = tuple[str, type]


@functools.cache
def _nested(cls: type) -> dict[str, Nested]:
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        found = _record_in(hint)
        if found is not None:
            out[name] = found
    return out


def _is_record(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, Record)


def _record_in(hint: Any) -> Nested | None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_record(hint):
        return ("one", hint)
    if origin in (typing.Union, types.UnionType):       # X | None
        inner = [a for a in args if a is not type(None)]
        return _record_in(inner[0]) if len(inner) == 1 else None
    if origin is list and args and _is_record(args[0]):
        return ("list", args[0])
    if origin is dict and len(args) == 2 and _is_record(args[1]):
        return ("dict", args[1])
    return None


def _from_json(kind: Nested | None, value: Any, where: str) -> Any:
    if kind is None or value is None:
        return _to_json(value)                  # a plain JSON value, copied
    shape, cls = kind
    if shape == "one":
        return cls.from_json(value)
    if shape == "list":
        if not isinstance(value, list):
            raise RecordError(f"{where}: expected a list")
        return [cls.from_json(v) for v in value]
    if not isinstance(value, dict):
        raise RecordError(f"{where}: expected an object")
    return {k: cls.from_json(v) for k, v in value.items()}
