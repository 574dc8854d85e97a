"""Presentation helpers shared by the CLI: JSON-safe values and an indented
text tree in the manner of ``tshark -V``."""
from __future__ import annotations

import base64
import json
import uuid
from typing import Any

__all__ = ["jsonable", "to_json", "to_text"]


def jsonable(value: Any) -> Any:
    """Make ``value`` JSON-serialisable: bytes become lower-case hex strings,
    UUIDs their canonical form, containers recurse."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def to_json(value: Any, *, indent: int | None = 2) -> str:
    return json.dumps(jsonable(value), indent=indent, ensure_ascii=False)


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
