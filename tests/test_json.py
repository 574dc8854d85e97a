"""JSON-ready output: ``to_dict(json_safe=True)`` and ``mqcodec.to_json``.

Every shared vector (../shared/vectors) is decoded through the public API
(``mqcodec.ibmmq.decode_pcf`` / ``decode_message``, ``mqcodec.msmq.decode_packet``)
and every object with a ``to_dict`` in it is checked against its plain
``to_dict()``: json.dumps accepts the JSON-ready dict, and each value in it is
the plain value in the documented form (bytes -> lower-case hex, UUID ->
canonical string, enum -> name and value), so nothing is lost or invented.
"""
from __future__ import annotations

import enum
import json
import pathlib
import uuid
from typing import Any, Iterator

import pytest

import mqcodec
from mqcodec import ibmmq, msmq
from mqcodec.ibmmq.headers import MQMD

from conftest import VECTORS


def _files(sub: str, suffix: str) -> list[pathlib.Path]:
    return sorted((VECTORS / sub).rglob("*" + suffix))


IBMMQ = _files("ibmmq", ".dat")
MSMQ = _files("msmq", ".bin")


def test_the_vectors_are_there() -> None:
    # the parametrized tests below would silently run zero cases without them
    assert len(IBMMQ) >= 2 and len(MSMQ) >= 11, (IBMMQ, MSMQ)


def _same(plain: Any, safe: Any, path: str = "$") -> None:
    """``safe`` is ``plain`` in the JSON-ready form (render module docstring)."""
    if isinstance(plain, (bytes, bytearray, memoryview)):
        assert isinstance(safe, str) and bytes.fromhex(safe) == bytes(plain), path
        assert safe == safe.lower(), path
    elif isinstance(plain, uuid.UUID):
        assert isinstance(safe, str) and uuid.UUID(safe) == plain and str(plain) == safe, path
    elif isinstance(plain, enum.Enum):
        assert safe == {"name": plain.name, "value": plain.value}, path
    elif isinstance(plain, dict):
        assert isinstance(safe, dict) and list(safe) == [str(k) for k in plain], path
        for k, v in plain.items():
            _same(v, safe[str(k)], "%s.%s" % (path, k))
    elif isinstance(plain, (list, tuple)):
        assert isinstance(safe, list) and len(safe) == len(plain), path
        for i, (a, b) in enumerate(zip(plain, safe)):
            _same(a, b, "%s[%d]" % (path, i))
    elif isinstance(plain, (str, int, float)) or plain is None:
        assert safe == plain and type(safe) is type(plain), path
    elif hasattr(plain, "to_dict"):
        _same(plain.to_dict(), safe, path)
    else:
        assert safe == str(plain), path


def _check(obj: Any) -> dict[str, Any]:
    plain = obj.to_dict()
    safe = obj.to_dict(json_safe=True)
    text = json.dumps(safe)                     # the point: this does not raise
    assert json.loads(text) == safe
    _same(plain, safe)
    assert json.loads(mqcodec.to_json(obj)) == safe
    # the class-level spelling too
    assert type(obj).to_dict(obj, json_safe=True) == safe
    return safe


def _pcf_objects(pcf: ibmmq.PcfMessage) -> Iterator[Any]:
    yield pcf
    for _depth, p in pcf.walk():
        yield p


@pytest.mark.parametrize("path", IBMMQ, ids=lambda p: p.name)
def test_pcf_vectors(path: pathlib.Path) -> None:
    pcf = ibmmq.decode_pcf(path.read_bytes())
    n = 0
    for obj in _pcf_objects(pcf):
        _check(obj)
        n += 1
    assert n > 1


@pytest.mark.parametrize("path", IBMMQ, ids=lambda p: p.name)
def test_mq_message_around_the_pcf_vectors(path: pathlib.Path) -> None:
    # the PCF body under an MQMD with Format MQADMIN (the vectors are little-endian
    # bodies: MQENC 546), decoded back as a whole message
    body = path.read_bytes()
    raw = ibmmq.encode_message(ibmmq.MQMessage(MQMD(Format="MQADMIN", Encoding=546, CodedCharSetId=1208,
                                                    MsgId=bytes(range(24))), body=body))
    msg = ibmmq.decode_message(raw)
    safe = _check(msg)
    _check(msg.md)
    assert safe["MsgId"] == bytes(range(24)).hex()        # the MQMD's fields lead the message's dict
    assert isinstance(msg.body, ibmmq.PcfMessage)
    for obj in _pcf_objects(msg.body):
        _check(obj)


@pytest.mark.parametrize("path", MSMQ, ids=lambda p: p.name)
def test_msmq_vectors(path: pathlib.Path) -> None:
    data = path.read_bytes()
    try:
        pkt = msmq.decode_packet(data)
    except mqcodec.DecodeError:
        # only the hostile packets and the example cut after 222 bytes fail strictly
        assert "malformed" in path.parts or "first_222_bytes" in path.name
        pkt = msmq.decode_packet(data, lenient=True)
    safe = _check(pkt)
    if isinstance(pkt, msmq.PingPacket):
        # [MS-MQQB] 2.2.7: the QueueManagerGuid is the 16 bytes at offset 8
        assert safe["PingPacket"]["QMGuid"] == str(uuid.UUID(bytes_le=data[8:24]))
        return
    assert safe["packet"] == pkt.kind
    names = [name for name, _h in pkt.headers()]
    assert names and names[0] == "BaseHeader"
    for name, header in pkt.headers():
        assert _check(header) == safe[name]


def test_msmq_guid_is_the_spec_bytes() -> None:
    # [MS-MQQB] 2.2.3 EstablishConnection Header: ClientGuid is the first field after the
    # BaseHeader (16 bytes) and InternalHeader (4 bytes), a GUID in its little-endian layout
    data = (VECTORS / "msmq" / "4.1.3_establish_connection_request.bin").read_bytes()
    safe = msmq.decode_packet(data).to_dict(json_safe=True)
    assert safe["EstablishConnectionHeader"]["ClientGuid"] == str(uuid.UUID(bytes_le=data[20:36]))


def test_bytes_become_hex() -> None:
    data = (VECTORS / "msmq" / "4.1.3_establish_connection_request.bin").read_bytes()
    pkt = msmq.decode_packet(data)
    plain = pkt.to_dict()["EstablishConnectionHeader"]["Padding"]
    assert isinstance(plain, bytes) and plain
    with pytest.raises(TypeError):
        json.dumps(pkt.to_dict())               # why json_safe exists
    assert pkt.to_dict(json_safe=True)["EstablishConnectionHeader"]["Padding"] == plain.hex()


def test_jsonable_enum_and_fallbacks() -> None:
    from mqcodec.render import jsonable

    class Colour(enum.IntEnum):
        RED = 1

    assert jsonable({1: Colour.RED, "b": (b"\x00\xff", None)}) == {"1": {"name": "RED", "value": 1},
                                                                    "b": ["00ff", None]}
    assert jsonable(uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"

    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert jsonable([Odd()]) == ["odd"]         # anything else: its str()


def test_format_name_private_flag_is_a_bool() -> None:
    # FormatName.private is both a field (DIRECT names: \PRIVATE$\) and a constructor; the
    # dataclass used to take the constructor as the field's default, so every name made
    # without private= (a PUBLIC one here) said "private": True in its dict
    from mqcodec.msmq import FormatName

    public = FormatName.parse("PUBLIC=12345678-1234-1234-1234-123456789012")
    assert public.private is False and "private" not in public.to_dict(json_safe=True)
    direct = FormatName.parse("DIRECT=TCP:10.1.2.3\\PRIVATE$\\orders")
    assert direct.private is True and direct.to_dict(json_safe=True)["private"] is True
    assert str(FormatName.private(uuid.UUID(int=1), 0x1A)).startswith("PRIVATE=")  # the constructor still works
