"""Bad and hostile MSMQ packets: a clean DecodeError naming structure, field
and absolute offset (or a clean lenient decode), never anything else, never a
hang or an allocation sized from the input."""
from __future__ import annotations

import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcodec import DecodeError
from mqcodec.msmq import decode_packet, encode_packet
from mqcodec.msmq.packet import _optional_class

HAVE_SECURITY = _optional_class("SecurityHeader") is not None


def err(data, **kw):
    with pytest.raises(DecodeError) as ei:
        decode_packet(data, **kw)
    e = ei.value
    return e.structure, e.field, e.offset


def base(flags=0x0003, size=0, ttrq=0xFFFFFFFF, version=0x10, sig=b"LIOR", reserved=0):
    return struct.pack("<BBH", version, reserved, flags) + sig + struct.pack("<II", size, ttrq)


def internal(pt, flags=0x000B, body=b"", size=None, extra=b""):
    ih = struct.pack("<HH", 0, pt)
    n = 16 + 4 + len(body) if size is None else size
    return base(flags, n) + ih + body + extra


CP_BODY = struct.pack("<IIHH", 1496, 120000, 0, 64)
SESSION_BODY = struct.pack("<HHIHHHH", 1, 0, 0, 0, 0, 64, 0)

# A small valid UserMessage: direct destination "OS:h\q" (Count 14 -> padding 0
# after 48 + 2 + 14 = 64), MessagePropertiesHeader with Label "hi" and body "xyz".
UH_FLAGS = (7 << 10) | (1 << 21)                       # DQ = 7, MP


def user_message(uh_flags=UH_FLAGS, name="OS:h\\q", mp=None, base_flags=0x0003, after=b"", size=None):
    raw_name = name.encode("utf-16-le") + b"\0\0"
    uh = bytes(16) + bytes(16) + struct.pack("<IIII", 0xFFFFFFFF, 0, 7, uh_flags)
    uh += struct.pack("<H", len(raw_name)) + raw_name
    uh += b"\0" * ((-len(uh)) % 4)
    if mp is None:
        mp = mp_bytes()
    body = uh + mp + after
    n = 16 + len(body) if size is None else size
    return base(base_flags, n) + body


def mp_bytes(flags=0, label="hi", body=b"xyz", label_len=None, msize=None, alloc=None, esize=0, ext=b"",
             cls=0, pad=True):
    raw_label = (label.encode("utf-16-le") + b"\0\0") if label is not None else b""
    ll = len(raw_label) // 2 if label_len is None else label_len
    ms = len(body) if msize is None else msize
    al = ms if alloc is None else alloc
    out = struct.pack("<BBH", flags, ll, cls) + bytes(20) + struct.pack("<IIIIIIII", 8, 0, ms, al, 0, 0, 0, esize)
    out += raw_label + ext + body
    if pad:
        out += b"\0" * ((-len(out)) % 4)
    return out


UH_AT, FLAGS_AT, DQ_AT = 16, 60, 64
MP_AT = 64 + 2 + 14           # 80


def test_baseline_is_valid():
    data = user_message()
    pkt = decode_packet(data)
    assert pkt.kind == "UserMessage"
    assert pkt.MessagePropertiesHeader.Label == "hi"
    assert pkt.MessagePropertiesHeader.MessageBody == b"xyz"
    assert pkt.UserHeader.DestinationQueue.DirectFormatName == "OS:h\\q"
    assert encode_packet(pkt) == data
    assert data[MP_AT + 1] == 3   # LabelLength at the offset these tests use


# ------------------------------------------------------------------ BaseHeader


def test_empty_and_short_input():
    assert err(b"")[0] == "BaseHeader"
    s, f, o = err(b"\x10\x00\x03\x00LIOR\x20\x00")
    assert s == "BaseHeader" and o <= 12


def test_wrong_version():
    assert err(base(version=0x11, size=32) + bytes(16)) == ("BaseHeader", "VersionNumber", 0)


def test_wrong_signature():
    assert err(base(sig=b"ROIL", size=32) + bytes(16)) == ("BaseHeader", "Signature", 4)


def test_wrong_signature_even_lenient():
    assert err(base(sig=b"XXXX", size=32) + bytes(16), lenient=True) == ("BaseHeader", "Signature", 4)


@pytest.mark.parametrize("size", [0, 1, 15])
def test_packet_size_below_16(size):
    assert err(base(size=size) + bytes(16)) == ("BaseHeader", "PacketSize", 8)


@pytest.mark.parametrize("size", [0x00400001, 0x7FFFFFFF, 0xFFFFFFFF])
def test_packet_size_above_4_mib(size):
    assert err(base(size=size) + bytes(64), lenient=True) == ("BaseHeader", "PacketSize", 8)


def test_packet_size_at_the_limit_is_only_past_the_data():
    data = base(size=0x00400000) + bytes(64)
    assert err(data) == ("BaseHeader", "PacketSize", 8)          # past the data
    pkt = decode_packet(data, lenient=True)                      # the limit itself is valid
    assert pkt.truncated and encode_packet(pkt) == data


def test_packet_size_past_the_data():
    data = user_message()
    assert err(data[:-4]) == ("BaseHeader", "PacketSize", 8)


def test_trailing_bytes_are_kept_with_a_warning():
    data = user_message()
    pkt = decode_packet(data + b"NEXT")
    assert pkt.trailing == b"NEXT"
    assert any(w.offset == len(data) for w in pkt.warnings)
    assert encode_packet(pkt) == data


def test_tr_without_dh_is_contradictory():
    assert err(user_message(base_flags=0x0103)) == ("BaseHeader", "Flags", 2)


# ------------------------------------------------------------------ internal packets


@pytest.mark.parametrize("pt", [0, 4, 7, 15])
def test_unknown_packet_type(pt):
    data = internal(pt, body=bytes(12))
    assert err(data) == ("InternalHeader", "Flags", 18)
    pkt = decode_packet(data, lenient=True)
    assert pkt.unparsed == bytes(12) and encode_packet(pkt) == data
    assert any(w.structure == "InternalHeader" and w.offset == 18 for w in pkt.warnings)


def test_internal_with_debug_header_flag():
    assert err(internal(3, flags=0x002B, body=CP_BODY)) == ("BaseHeader", "Flags", 2)


def test_internal_header_cut():
    assert err(base(0x000B, 18) + b"\0\0") == ("InternalHeader", "Reserved", 16)


def test_connection_parameters_wrong_size():
    assert err(internal(3, body=CP_BODY + bytes(4))) == ("BaseHeader", "PacketSize", 8)
    assert err(internal(3, body=CP_BODY[:8])) == ("BaseHeader", "PacketSize", 8)


def test_connection_parameters_lenient_keeps_extra_bytes():
    data = internal(3, body=CP_BODY + b"XXXX")
    pkt = decode_packet(data, lenient=True)
    assert pkt.unparsed == b"XXXX" and encode_packet(pkt) == data


def test_establish_connection_wrong_size():
    assert err(internal(2, body=bytes(100))) == ("BaseHeader", "PacketSize", 8)


def test_establish_connection_with_session_flag():
    assert err(internal(2, flags=0x001B, body=bytes(552))) == ("BaseHeader", "Flags", 2)


def test_session_ack_without_sh():
    assert err(internal(1, flags=0x000B, body=SESSION_BODY)) == ("BaseHeader", "Flags", 2)


def test_session_ack_wrong_size():
    assert err(internal(1, flags=0x001B, body=SESSION_BODY + bytes(4))) == ("BaseHeader", "PacketSize", 8)


def test_session_ack_session_header_missing():
    assert err(internal(1, flags=0x001B, body=b"", size=20)) == ("SessionHeader", "AckSequenceNumber", 20)


def test_session_ack_not_counted_in_packet_size():
    # [MS-MQMQ] 2.2.19.1 read literally: PacketSize excludes the SessionHeader
    data = internal(1, flags=0x001B, body=SESSION_BODY, size=20)
    pkt = decode_packet(data)
    assert pkt.session_header_counted is False
    assert pkt.SessionHeader.AckSequenceNumber == 1 and pkt.SessionHeader.WindowSize == 64
    assert encode_packet(pkt) == data


def test_time_to_reach_queue_of_internal_packet_is_a_warning():
    data = base(0x000B, 32, ttrq=5) + struct.pack("<HH", 0, 3) + CP_BODY
    pkt = decode_packet(data)
    assert any(w.field == "TimeToReachQueue" and w.offset == 12 for w in pkt.warnings)


# ------------------------------------------------------------------ UserHeader


def test_user_header_cut():
    data = base(0x0003, 40) + bytes(24)   # 24 of the 48 fixed bytes: cut inside QueueManagerAddress
    assert err(data) == ("UserHeader", "QueueManagerAddress", 32)


@pytest.mark.parametrize("dq", [1, 2, 4, 6])
def test_invalid_destination_queue_type(dq):
    data = user_message(uh_flags=(UH_FLAGS & ~(7 << 10)) | (dq << 10))
    assert err(data) == ("UserHeader", "Flags", FLAGS_AT)


@pytest.mark.parametrize("aq", [1, 4])
def test_invalid_admin_queue_type(aq):
    assert err(user_message(uh_flags=UH_FLAGS | (aq << 13))) == ("UserHeader", "Flags", FLAGS_AT)


def test_direct_count_past_the_packet():
    data = bytearray(user_message())
    struct.pack_into("<H", data, DQ_AT, 0xFFFF)
    assert err(bytes(data)) == ("UserHeader", "DestinationQueue", DQ_AT)


def test_direct_count_odd():
    data = bytearray(user_message())
    struct.pack_into("<H", data, DQ_AT, 13)
    assert err(bytes(data)) == ("UserHeader", "DestinationQueue", DQ_AT)


def test_direct_name_not_terminated():
    data = bytearray(user_message())
    data[DQ_AT + 2 + 12:DQ_AT + 2 + 14] = b"x\0"
    assert err(bytes(data)) == ("UserHeader", "DestinationQueue", DQ_AT + 2 + 12)


def test_admin_queue_announced_but_absent():
    # AQ = 5 (public, 16 bytes) announced; the MessagePropertiesHeader's bytes are
    # then read as the GUID and the header after it is cut: the packet is too short
    data = user_message(uh_flags=UH_FLAGS | (5 << 13), mp=b"")
    assert err(data) == ("UserHeader", "AdminQueue", MP_AT)


def test_connector_type_announced_but_absent():
    data = user_message(uh_flags=UH_FLAGS | (1 << 22), mp=b"")
    assert err(data) == ("UserHeader", "ConnectorType", MP_AT)


def test_mp_clear_is_an_error():
    assert err(user_message(uh_flags=UH_FLAGS & ~(1 << 21))) == ("UserHeader", "Flags", FLAGS_AT)


def test_transactional_but_express():
    assert err(user_message(uh_flags=UH_FLAGS | (1 << 20))) == ("UserHeader", "Flags", FLAGS_AT)


def test_properties_header_announced_but_absent():
    assert err(user_message(mp=b"")) == ("MessagePropertiesHeader", "", MP_AT)


@pytest.mark.parametrize("flag,name", [(1 << 20 | 1 << 5, "TransactionHeader"), (1 << 19, "SecurityHeader")])
def test_optional_header_announced_but_absent(flag, name):
    # the flags announce a header before the MessagePropertiesHeader; with no
    # bytes left for it the error names it at the offset where it had to start
    data = user_message(uh_flags=UH_FLAGS | flag, mp=b"")
    assert err(data)[0] == name and err(data)[2] == MP_AT


@pytest.mark.parametrize("uh_bit,base_flags,name", [
    (1 << 28, 0x0003, "SoapHeader"), (1 << 23, 0x0003, "MultiQueueFormatHeader"),
    (1 << 25, 0x0003, "SRMPEnvelopeHeader"), (0, 0x0023, "DebugHeader"), (0, 0x0123, "DebugHeader")])
def test_header_after_properties_announced_but_absent(uh_bit, base_flags, name):
    # the packet ends right after the MessagePropertiesHeader
    data = user_message(uh_flags=UH_FLAGS | uh_bit, base_flags=base_flags)
    s, f, o = err(data)
    assert s == name and o == len(data)
    pkt = decode_packet(data, lenient=True)
    assert pkt.MessagePropertiesHeader.Label == "hi"
    assert any(w.structure == name for w in pkt.warnings)
    assert encode_packet(pkt) == data


# ------------------------------------------------------------------ MessagePropertiesHeader


def test_label_length_above_250():
    assert err(user_message(mp=mp_bytes(label_len=251))) == ("MessagePropertiesHeader", "LabelLength", MP_AT + 1)


def test_label_past_the_packet():
    assert err(user_message(mp=mp_bytes(label_len=250))) == ("MessagePropertiesHeader", "Label", MP_AT + 56)


def test_label_not_null_terminated():
    assert err(user_message(mp=mp_bytes(label=None, label_len=2, body=b"", ext=b"ab\0c", esize=0))) == (
        "MessagePropertiesHeader", "Label", MP_AT + 56 + 2)


def test_message_size_past_the_packet():
    assert err(user_message(mp=mp_bytes(msize=4000, alloc=4000))) == (
        "MessagePropertiesHeader", "MessageSize", MP_AT + 32)


@pytest.mark.parametrize("esize", [0x40000000, 0xFFFFFFFF])
def test_extension_size_huge_is_fast(esize):
    data = user_message(mp=mp_bytes(esize=esize))
    t = time.perf_counter()
    assert err(data) == ("MessagePropertiesHeader", "ExtensionSize", MP_AT + 52)
    pkt = decode_packet(data, lenient=True)
    assert time.perf_counter() - t < 1.0
    assert encode_packet(pkt) == data


def test_allocation_smaller_than_message():
    assert err(user_message(mp=mp_bytes(alloc=1))) == ("MessagePropertiesHeader", "AllocationBodySize", MP_AT + 36)


def test_padding_missing():
    data = user_message(mp=mp_bytes(pad=False))
    assert len(data) % 4 == 1
    assert err(data) == ("MessagePropertiesHeader", "", len(data))


def test_bytes_no_flag_announces():
    data = user_message(after=b"\x11" * 8)
    assert err(data) == ("UserMessage", "", len(data) - 8)
    pkt = decode_packet(data, lenient=True)
    assert pkt.unparsed == b"\x11" * 8 and encode_packet(pkt) == data


def test_session_header_announced_after_packet_size_but_absent():
    data = user_message(base_flags=0x0013)
    assert err(data) == ("SessionHeader", "AckSequenceNumber", len(data))


def test_session_header_after_packet_size():
    data = user_message(base_flags=0x0013)
    full = data + SESSION_BODY
    pkt = decode_packet(full)
    assert pkt.SessionHeader.AckSequenceNumber == 1
    assert pkt.BaseHeader.PacketSize == len(data)       # PacketSize excludes the SessionHeader
    assert encode_packet(pkt) == full


def test_ack_flags_without_admin_queue_is_a_warning():
    pkt = decode_packet(user_message(mp=mp_bytes(flags=0x01)))
    assert any("AdminQueue" in w.reason for w in pkt.warnings)


def test_invalid_message_class_is_a_warning():
    pkt = decode_packet(user_message(mp=mp_bytes(cls=0x1E00)))
    assert pkt.MessagePropertiesHeader.to_dict()["MessageClassName"] == "invalid"
    assert any(w.field == "MessageClass" and w.offset == MP_AT + 2 for w in pkt.warnings)


# ------------------------------------------------------------------ the malformed vectors


def mal(vectors, name):
    return (vectors / "msmq" / "malformed" / name).read_bytes()


def test_v9_queuejumper_poc(vectors):
    data = mal(vectors, "V9_queuejumper_poc.bin")
    s, f, o = err(data)
    if HAVE_SECURITY:
        # SH, MP decode; UserHeader bit 26 is reserved (X3) in [MS-MQMQ]: the 16
        # bytes after the 18-byte body (0xF0) are announced by no flag
        assert (s, f, o) == ("UserMessage", "", 0xF0)
    else:
        assert (s, o) == ("SecurityHeader", 92)
    pkt = decode_packet(data, lenient=True)
    assert pkt.UserHeader.Flags.get("X3") == 1             # the reserved bit the PoC sets
    assert pkt.UserHeader.Flags.value == 0x04281C00
    assert encode_packet(pkt) == data and pkt.trailing == b""
    if HAVE_SECURITY:
        assert pkt.unparsed == data[0xF0:]
        assert pkt.MessagePropertiesHeader.MessageBody == ("a" * 9).encode("utf-16-le")


def test_v9_implementation_order(vectors):
    data = mal(vectors, "V9_queuejumper_poc.bin")
    if _optional_class("EodHeader") is None or not HAVE_SECURITY:
        pytest.skip("EodHeader not importable")
    with pytest.raises(DecodeError) as ei:
        decode_packet(data, order="implementation")
    # bit 26 announces an EodHeader at 0xF0 whose sizes (0x40000000) overflow
    assert ei.value.structure == "EodHeader" and 0xF0 <= ei.value.offset < 0x100
    pkt = decode_packet(data, lenient=True, order="implementation")
    assert encode_packet(pkt) == data


def test_v11_noisefest(vectors):
    data = mal(vectors, "V11_noisefest_fullsignature.bin")
    assert len(data) == 230
    assert err(data) == ("UserMessage", "", 0xB4)
    pkt = decode_packet(data, lenient=True)
    b, uh, mp = pkt.BaseHeader, pkt.UserHeader, pkt.MessagePropertiesHeader
    assert b.PacketSize == 0xE2 == 226 and b.TimeToReachQueue == 0x41414141
    assert uh.SourceQueueManager.bytes_le == b"B" * 16 and uh.QueueManagerAddress.bytes_le == b"C" * 16
    assert (uh.TimeToBeReceived, uh.SentTime, uh.MessageID) == (0x44444444, 0x45454545, 0x46464646)
    assert uh.Flags.value == 0x04265C00
    assert (uh.Flags.DQ, uh.Flags.AQ, uh.Flags.RQ, uh.Flags.SH, uh.Flags.MP) == (7, 2, 6, 0, 1)
    assert uh.DestinationQueue.DirectFormatName == "OS:.\\qqq"
    assert uh.AdminQueue.PrivateQueueIdentifier == 0x001C0001
    assert uh.ResponseQueue.PrivateQueueIdentifier == 0x05000000
    assert mp.Flags.value == 0x15 and mp.LabelLength == 0 and mp.ExtensionSize == 16
    assert mp.ExtensionData == data[0xA4:0xB4]
    assert pkt.unparsed == data[0xB4:226]
    assert pkt.trailing == data[226:] == b"HHHH"
    assert encode_packet(pkt) + pkt.trailing == data


def test_v12_metasploit_queuejumper(vectors):
    data = mal(vectors, "V12_msf_queuejumper_prefix240.bin")
    assert err(data) == ("BaseHeader", "PacketSize", 8)
    pkt = decode_packet(data, lenient=True)
    assert pkt.truncated and pkt.BaseHeader.PacketSize == 2404
    assert pkt.BaseHeader.Flags.get("X3") == 1
    uh = pkt.UserHeader
    assert uh.Flags.AH == 1 and uh.Flags.RC == 1 and uh.Flags.DQ == 7 and uh.MessageID == 1
    assert uh.DestinationQueue.Count == 96
    assert uh.DestinationQueue.DirectFormatName == "http://192.168.56.113/msmq/private$/queuejumper"
    assert uh.DestinationQueue.Padding == b"\0\0"
    assert pkt.MessagePropertiesHeader.Label == "poc"
    # the SRMPEnvelopeHeader at 0xE4 announces DataLength 0x21B WCHARs: past the end
    assert pkt.unparsed == data[0xE4:]
    assert any(w.offset >= 0xE4 for w in pkt.warnings)
    assert encode_packet(pkt) == data


# ------------------------------------------------------------------ fuzz: nothing but DecodeError


def _seeds(vectors):
    files = sorted((vectors / "msmq").glob("*.bin")) + sorted((vectors / "msmq" / "malformed").glob("*.bin"))
    return [f.read_bytes() for f in files] + [user_message(), user_message(base_flags=0x0013) + SESSION_BODY]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutations_never_crash(vectors, data):
    seeds = _seeds(vectors)
    raw = bytearray(data.draw(st.sampled_from(seeds)))
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.integers(0, 2))
        if op == 0 and raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        elif op == 1 and len(raw) >= 4:
            # a hostile size: overwrite 4 aligned-or-not bytes with an extreme value
            i = data.draw(st.integers(0, len(raw) - 4))
            struct.pack_into("<I", raw, i,
                             data.draw(st.sampled_from([0, 1, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x40000000])))
        else:
            del raw[data.draw(st.integers(0, len(raw))):]
    blob = bytes(raw)
    for lenient in (False, True):
        try:
            pkt = decode_packet(blob, lenient=lenient)
        except DecodeError as e:
            assert 0 <= e.offset <= max(len(blob), 16)
            continue
        if lenient:   # a lenient decode always re-encodes exactly
            assert encode_packet(pkt) + pkt.trailing == blob
        pkt.to_dict()


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_crash(blob):
    for lenient in (False, True):
        try:
            pkt = decode_packet(blob, lenient=lenient)
        except DecodeError:
            continue
        pkt.to_dict()
        if lenient:
            assert encode_packet(pkt) + pkt.trailing == blob


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=0, max_size=200), st.integers(0, 0xFFFFFFFF))
def test_random_body_behind_a_valid_base_header(body, uh_flags):
    # a valid BaseHeader and UserHeader fixed part with arbitrary flags, then noise
    blob = base(0x0003, 16 + 48 + len(body)) + bytes(40) + struct.pack("<I", uh_flags) + body
    for lenient in (False, True):
        try:
            pkt = decode_packet(blob, lenient=lenient)
        except DecodeError:
            continue
        if lenient:
            assert encode_packet(pkt) + pkt.trailing == blob
