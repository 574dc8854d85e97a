"""Presentation helpers shared by the CLI and the decoded objects: JSON-safe
values and an indented text tree in the manner of ``tshark -V``.

The JSON-ready form (``jsonable``, ``to_json``, ``x.to_dict(json_safe=True)``):

* bytes (and bytearray, memoryview) -> lower-case hex string, ``b"\x01\xff"`` -> ``"01ff"``;
* uuid.UUID (GUIDs) -> canonical string ``"12345678-1234-1234-1234-123456789abc"``;
* enum members -> ``{"name": ..., "value": ...}``;
* objects with ``to_dict()`` -> their dict, converted the same way;
* dict keys -> strings; tuples -> lists; str, int, float, bool, None unchanged;
* anything else -> ``str(value)``.

Integers that name a constant stay integers (their names sit beside them in
``to_dict()`` as ``...Name`` keys, as the decoders give them).
"""
from __future__ import annotations

import enum
import functools
import json
import uuid
from typing import Any, Callable, Generic, Protocol, TypeVar, overload

__all__ = ["jsonable", "to_json", "to_text", "json_ready", "ToDict"]

_T = TypeVar("_T")


def jsonable(value: Any) -> Any:
    """Make ``value`` JSON-serialisable (the rules in the module docstring):
    bytes become lower-case hex strings, UUIDs their canonical form, enum
    members ``{"name", "value"}``, containers recurse."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return {"name": value.name, "value": jsonable(value.value)}
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def to_json(value: Any, *, indent: int | None = 2) -> str:
    """``value`` (a decoded message, packet, header, PCF parameter, a list or
    dict of them, or plain data) as JSON text, in the JSON-ready form of
    :func:`jsonable`.  ``mqcodec.to_json`` is this function."""
    return json.dumps(jsonable(value), indent=indent, ensure_ascii=False)


class ToDict(Protocol):
    """A bound ``to_dict`` method: ``obj.to_dict()`` gives the decoded
    values as Python objects (bytes, UUIDs, ...); ``obj.to_dict(json_safe=True)``
    the same keys with JSON-ready values (see :func:`jsonable`)."""

    def __call__(self, *, json_safe: bool = False) -> dict[str, Any]: ...


class json_ready(Generic[_T]):
    """Decorator of the decoded classes' ``to_dict(self) -> dict`` methods:
    adds the keyword ``json_safe`` (False: the dict as the method builds it;
    True: :func:`jsonable` of it, which ``json.dumps`` accepts).  Also callable
    on the class: ``Cls.to_dict(obj, json_safe=True)``."""

    def __init__(self, method: Callable[[_T], dict[str, Any]]) -> None:
        self._method = method
        functools.update_wrapper(self, method)  # (copies __doc__, __name__)

    def __call__(self, obj: _T, *, json_safe: bool = False) -> dict[str, Any]:
        d = self._method(obj)
        return jsonable(d) if json_safe else d

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> json_ready[_T]: ...
    @overload
    def __get__(self, obj: _T, owner: type | None = None) -> ToDict: ...

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)


def _label(d: dict) -> str | None:
    # PCF parameters and groups read best as "Name (Type): Value"
    if "Name" in d and "Type" in d:
        return "%s (%s)" % (d.get("Name"), d.get("Type"))
    return None


def to_text(value: Any, indent: int = 0) -> str:
    """An indented tree a person can read."""
    lines: list[str] = []
    _walk(jsonable(value), indent, lines, None)
    return "\n".join(lines)


def _walk(v: Any, depth: int, out: list[str], key: str | None) -> None:
    pad = "    " * depth
    if isinstance(v, dict):
        label = _label(v)
        if label is not None:
            head = label
            if "Value" in v and not isinstance(v["Value"], (dict, list)):
                head += ": %s" % (v["Value"],)
            out.append(pad + head)
            for k, item in v.items():
                if k in ("Name", "Type") or (k == "Value" and not isinstance(item, (dict, list))):
                    continue
                _walk(item, depth + 1, out, k)
            return
        if key is not None:
            out.append(pad + key)
            depth += 1
        for k, item in v.items():
            _walk(item, depth, out, k)
    elif isinstance(v, list):
        if key is not None:
            out.append(pad + "%s [%d]" % (key, len(v)))
        for i, item in enumerate(v):
            if isinstance(item, (dict, list)):
                _walk(item, depth + 1, out, None if isinstance(item, dict) and _label(item) else "[%d]" % i)
            else:
                out.append(pad + "    " + str(item))
    else:
        out.append(pad + ("%s: %s" % (key, v) if key is not None else str(v)))
