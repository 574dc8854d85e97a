"""The main job on its embedded default.

Until the capture pipeline lands this decodes every protocol test vector
shipped beside the project (``../shared/vectors``): IBM MQ PCF bodies and the
MSMQ example frames of MS-MQQB section 4.1, plus the hostile MSMQ packets,
and prints what each one is — or the one-line error it gets.
"""
from __future__ import annotations

import pathlib

from .errors import DecodeError
from .render import to_text


def _decode(kind: str, data: bytes):
    if kind == "ibmmq":
        from .ibmmq import decode_pcf

        return decode_pcf(data)
    from .msmq import decode_packet

    return decode_packet(data)


def _summary(kind: str, obj) -> str:
    d = obj.to_dict()
    if kind == "ibmmq":
        h = d.get("MQCFH") or d.get("Header") or {}
        return "PCF %s %s, %s parameters" % (
            h.get("TypeName", h.get("Type")), h.get("CommandName", h.get("Command")), h.get("ParameterCount"))
    keys = [k for k in d if isinstance(d[k], dict)]
    return "MSMQ packet: " + ", ".join(keys)


def run(shared: str, *, verbose: bool = False, out=print) -> int:
    root = pathlib.Path(shared) / "vectors"
    if not root.is_dir():
        out("mqcodec demo: no vectors at %s" % root)
        return 1
    total = errors = 0
    for kind, pattern in (("ibmmq", "ibmmq/*.dat"), ("msmq", "msmq/*.bin"), ("msmq", "msmq/malformed/*.bin")):
        for path in sorted(root.glob(pattern)):
            total += 1
            data = path.read_bytes()
            try:
                obj = _decode(kind, data)
            except DecodeError as exc:
                errors += 1
                out("%-48s %6d bytes  error: %s" % (path.relative_to(root), len(data), exc))
                continue
            out("%-48s %6d bytes  %s" % (path.relative_to(root), len(data), _summary(kind, obj)))
            if verbose:
                out(to_text(obj.to_dict(), indent=1))
    out("decoded %d of %d vectors; %d gave a clean DecodeError" % (total - errors, total, errors))
    return 0
