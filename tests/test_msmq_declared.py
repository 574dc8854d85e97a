"""The MSMQ fixed-size headers are declared once (issue 13 part 5): their
fields, defaults, decode, encode and ``to_dict`` all come from the construct
``LAYOUT`` of each class.  The values themselves are checked against the
specification's example bytes in test_msmq_vectors.py; here: the declaration
is what the class does."""
from __future__ import annotations

import random
import uuid

import pytest

from mqcodec.errors import DecodeError
from mqcodec.msmq import constants as C
from mqcodec.msmq.base import (BaseHeader, BitFlags, ConnectionParametersHeader, EstablishConnectionHeader,
                               FixedHeader, InternalHeader, PingPacket)
from mqcodec.msmq.session import SessionHeader
from mqcodec.msmq.user import PrivateQueueFormatName, PrivateQueueFormatNameId, PublicQueueFormatName

HEADERS = [BaseHeader, InternalHeader, ConnectionParametersHeader, EstablishConnectionHeader, PingPacket,
           SessionHeader, PrivateQueueFormatNameId, PublicQueueFormatName, PrivateQueueFormatName]


def test_sizes_are_the_specification_sizes():
    assert BaseHeader.SIZE == C.BASE_HEADER_SIZE == 16
    assert InternalHeader.SIZE == 4
    assert ConnectionParametersHeader.SIZE == 12
    assert EstablishConnectionHeader.SIZE == 552
    assert PingPacket.SIZE == C.PING_PACKET_SIZE == 24
    assert SessionHeader.SIZE == C.SESSION_HEADER_SIZE == 16


def _random_bytes(cls, rng) -> bytes:
    """Bytes of ``cls.SIZE`` that decode: the identity fields as the specification fixes them."""
    h = cls()
    if cls is BaseHeader:
        h.PacketSize = 0
    raw = bytearray(h.encode())
    keep = {BaseHeader: {0: 1, 4: 4}, PingPacket: {2: 2}}.get(cls, {})
    for i in range(len(raw)):
        if not any(at <= i < at + n for at, n in keep.items()):
            raw[i] = rng.randrange(256)
    return bytes(raw)


@pytest.mark.parametrize("cls", HEADERS, ids=lambda c: c.STRUCTURE)
def test_every_field_comes_from_the_declaration(cls):
    assert issubclass(cls, FixedHeader)
    names = [sc.name for sc in cls.LAYOUT.subcons]
    assert cls.FIELDS == tuple(names)
    assert list(cls().to_dict()) == names or cls is PingPacket
    if cls is PingPacket:
        assert list(cls().to_dict()["PingPacket"]) == names
    with pytest.raises(TypeError, match="no field Nonsense"):
        cls(Nonsense=1)


@pytest.mark.parametrize("cls", HEADERS, ids=lambda c: c.STRUCTURE)
def test_decode_encode_round_trip_on_random_bytes(cls):
    rng = random.Random(cls.STRUCTURE)
    for _ in range(200):
        raw = _random_bytes(cls, rng)
        h, end = cls.decode(b"\xAA" * 3 + raw, 3, lenient=True, warnings=[])
        assert end == 3 + cls.SIZE
        assert h.encode() == raw
        again = cls(**{n: getattr(h, n) for n in cls.FIELDS})
        assert again == h and again.encode() == raw


def test_the_fixed_queue_format_types_are_declared_as_the_specification_sizes_them():
    # [MS-MQMQ] 2.2.18.1.5.1, 2.2.18.1.7.1, 2.2.18.1.7.2: 4, 16 and 4 + 16 bytes; fields positional
    assert [c.SIZE for c in (PrivateQueueFormatNameId, PublicQueueFormatName, PrivateQueueFormatName)] == [4, 16, 20]
    g = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    q = PrivateQueueFormatName(str(g), 0x1F)
    assert q == PrivateQueueFormatName(SourceQueueManager=g, PrivateQueueIdentifier=0x1F)
    assert q.encode(7) == g.bytes_le + b"\x1f\0\0\0"
    assert q.to_dict() == {"SourceQueueManager": str(g), "PrivateQueueIdentifier": 0x1F}
    assert q != PrivateQueueFormatNameId(0x1F) and PublicQueueFormatName(g).encode() == g.bytes_le


def test_flags_and_guids_take_their_python_types():
    h = EstablishConnectionHeader(ClientGuid="01234567-89ab-cdef-0123-456789abcdef", OperatingSystem=0x1234)
    assert h.ClientGuid == uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    assert isinstance(h.OperatingSystem, BitFlags) and int(h.OperatingSystem) == 0x1234
    raw = h.encode()
    assert raw[:16] == h.ClientGuid.bytes_le     # [MS-DTYP] 2.3.4.2 packet representation
    d = h.to_dict()
    assert d["ClientGuid"] == "01234567-89ab-cdef-0123-456789abcdef"
    assert d["OperatingSystem"] == h.OperatingSystem.to_dict()
    assert EstablishConnectionHeader.decode(raw, 0)[0] == h


@pytest.mark.parametrize("cls", [InternalHeader, ConnectionParametersHeader, EstablishConnectionHeader,
                                 SessionHeader], ids=lambda c: c.STRUCTURE)
def test_a_cut_header_names_its_first_field(cls):
    raw = _random_bytes(cls, random.Random(1))
    with pytest.raises(DecodeError) as e:
        cls.decode(raw, 0, cls.SIZE - 1)
    assert (e.value.structure, e.value.field, e.value.offset) == (cls.STRUCTURE, cls.FIELDS[0], 0)
    assert "%d bytes needed, %d" % (cls.SIZE, cls.SIZE - 1) in e.value.reason


def test_user_header_fixed_part_is_declared_and_its_queues_are_extra():
    from mqcodec.msmq.user import DirectQueueFormatName, UserFlags, UserHeader

    assert issubclass(UserHeader, FixedHeader) and UserHeader.SIZE == 48
    assert UserHeader.FIELDS == ("SourceQueueManager", "QueueManagerAddress", "TimeToBeReceived", "SentTime",
                                 "MessageID", "Flags")
    assert UserHeader.EXTRA == ("DestinationQueue", "AdminQueue", "ResponseQueue", "ConnectorType")
    a, b = UserHeader(), UserHeader()
    assert a.Flags is not b.Flags and a.Flags.MP == 1      # a default is a fresh value, not a shared one
    uh = UserHeader(Flags=UserFlags(MP=1, DQ=7), MessageID=5, DestinationQueue=DirectQueueFormatName("OS:h\\q"))
    raw = uh.encode()
    back, end = UserHeader.decode(raw, 0)
    assert end == len(raw) and back == uh and back.encode() == raw
    assert back != UserHeader(Flags=UserFlags(MP=1, DQ=7), MessageID=5,
                              DestinationQueue=DirectQueueFormatName("OS:h\\r"))   # EXTRA fields count
    with pytest.raises(TypeError, match="no field Nonsense"):
        UserHeader(Nonsense=1)


def test_message_properties_fixed_part_is_declared():
    from mqcodec.msmq.properties import MessagePropertiesHeader

    assert issubclass(MessagePropertiesHeader, FixedHeader) and MessagePropertiesHeader.SIZE == 56
    assert MessagePropertiesHeader.FIELDS[:3] == ("Flags", "LabelLength", "MessageClass")
    h = MessagePropertiesHeader(Label="hello", MessageBody=bytearray(b"body!"), CorrelationID=b"c" * 20)
    assert h.MessageBody == b"body!" and isinstance(h.MessageBody, bytes) and h.ExtensionData == b""
    raw = h.encode()
    assert len(raw) % 4 == 0 and raw[1] == len("hello") + 1          # LabelLength in WCHARs, with the null
    back, end = MessagePropertiesHeader.decode(raw, 0)
    assert end == len(raw) and back.Label == "hello" and back.MessageBody == b"body!" and back.encode() == raw
    for cut in (0, 1, 3, 30, 55):
        with pytest.raises(DecodeError) as e:
            MessagePropertiesHeader.decode(raw, 0, cut)
        # the last field that starts within the bytes present
        starts = {0: "Flags", 1: "LabelLength", 3: "MessageClass", 30: "ApplicationTag", 55: "ExtensionSize"}
        assert e.value.field == starts[cut] and "56 fixed bytes needed, %d inside the packet" % cut in e.value.reason


def test_the_type_annotations_name_the_declared_fields():
    """Each class annotates its fields for type checkers (tests/test_typing.py):
    the annotations and the declaration name the same fields, in order."""
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.user import UserHeader

    for cls in HEADERS + [UserHeader, MessagePropertiesHeader]:
        annotated = [n for n in vars(cls).get("__annotations__", {}) if not n.isupper()]
        assert annotated == list(cls.FIELDS + cls.EXTRA), cls.STRUCTURE
