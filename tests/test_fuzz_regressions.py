"""Replay the fuzz corpus (tests/fuzz/corpus/<target>/) through the harnesses,
and check bounded work (invariant 4) on inputs that CLAIM huge sizes.

Invariants: docs/ROBUSTNESS.md.  Expected values here are facts from the
specifications (field positions, limits), not our decoder's output.
"""
from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

import pytest

from fuzz import harnesses, seeds
from mqcodec import DecodeError

pytestmark = pytest.mark.fuzz

CORPUS = Path(__file__).parent / "fuzz" / "corpus"

#: corpus files whose finding is not fixed yet: {(target, file name): reason}
XFAIL: dict = {}


def _corpus():
    out = []
    if CORPUS.is_dir():
        for d in sorted(CORPUS.iterdir()):
            if d.is_dir() and d.name in harnesses.TARGETS:
                for f in sorted(d.iterdir()):
                    if f.is_file():
                        marks = ()
                        if (d.name, f.name) in XFAIL:
                            marks = (pytest.mark.xfail(strict=True, reason=XFAIL[(d.name, f.name)]),)
                        out.append(pytest.param(d.name, f, id="%s/%s" % (d.name, f.name), marks=marks))
    return out


@pytest.mark.parametrize("target,path", _corpus())
def test_corpus_replay(target, path):
    # the target's invariants, and invariant 4 (linear peak allocation and CPU time) on this input
    harnesses.bounded(target, path.read_bytes())


def test_corpus_present():
    # every target has a committed corpus directory (seeds or findings)
    missing = [t for t in harnesses.TARGETS if not (CORPUS / t).is_dir() or not any((CORPUS / t).iterdir())]
    assert missing == []


@pytest.mark.parametrize("target", sorted(harnesses.TARGETS))
def test_seeds_satisfy_invariants(target):
    ss = seeds.seeds(target)
    assert ss, target
    for i, s in enumerate(ss):
        # the conversion targets under tracemalloc cost ~1 s a seed: every seed is
        # checked for their invariants, every third for invariant 4 (their committed
        # corpus is, file by file, in test_corpus_replay)
        if target in harnesses.SLOW_TARGETS and i % 3:
            harnesses.TARGETS[target](s)
        else:
            harnesses.bounded(target, s)


def test_bounded_catches_an_allocation_out_of_proportion(monkeypatch):
    # the per-input check itself must be able to fail: a "decoder" that trusts a claimed length
    def trusting(data):
        claimed = int.from_bytes(data[:4], "big")
        buf = bytearray(claimed)  # what a decoder must never do before checking the bytes present
        return len(buf)

    monkeypatch.setitem(harnesses.TARGETS, "trusting", trusting)
    harnesses.bounded("trusting", (1000).to_bytes(4, "big") + bytes(60))   # 1,000 bytes: within
    with pytest.raises(harnesses.InvariantViolation, match="allocated a peak"):
        harnesses.bounded("trusting", (64 << 20).to_bytes(4, "big") + bytes(60))


def test_inflated_length_counts_every_member_and_stops_at_damage():
    import gzip
    a, b = bytes(range(256)) * 300, b"mqcodec" * 5000
    assert harnesses.inflated_length(gzip.compress(a)) == len(a)
    assert harnesses.inflated_length(gzip.compress(a) + gzip.compress(b)) == len(a) + len(b)
    cut = gzip.compress(a)[:-12]               # trailer and some deflate data gone
    assert 0 < harnesses.inflated_length(cut) < len(a)
    assert harnesses.inflated_length(b"\x1f\x8b garbage") == 0
    assert harnesses.inflated_length(gzip.compress(a), cap=1000) <= len(a)
    # a bad trailer (CRC-32, ISIZE): the readers hand the member's bytes on before they
    # check it, so they are work done (the campaign of 2026-11-26 07:23 reported a
    # 2,809-byte capture inflating to 710,819 bytes, with a bad CRC, as 0 bytes of work)
    good = gzip.compress(a)
    assert harnesses.inflated_length(good[:-8] + bytes(8)) == len(a)
    assert harnesses.inflated_length(good[:-8] + bytes(8) + gzip.compress(b)) == len(a) + len(b)
    # header fields (RFC 1952 2.3): FEXTRA, FNAME, FCOMMENT, FHCRC skipped
    import io
    named = io.BytesIO()
    with gzip.GzipFile(filename="capture.pcap", fileobj=named, mode="wb") as f:
        f.write(b)
    assert harnesses.inflated_length(named.getvalue()) == len(b)
    body = good[10:]
    extra = good[:3] + bytes([good[3] | 0x04 | 0x10 | 0x02]) + good[4:10] + b"\x03\x00xyz" + b"note\0" + b"cc"
    assert harnesses.inflated_length(extra + body) == len(a)
    assert harnesses.inflated_length(extra[:12]) == 0          # header cut short


def test_bounded_gzip_capture_measured_against_what_it_inflates(monkeypatch):
    # a gzip capture is parsed a piece at a time: its memory may reach a piece's
    # frames (a constant), its time grows with the inflated bytes; a target that
    # holds every inflated byte at once still fails the check
    import gzip
    hdr = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    bomb = gzip.compress(hdr + bytes(48 << 10))      # 48 KiB of zero-length records: ~100:1
    assert len(bomb) < 1024
    harnesses.bounded("capture", bomb)

    def hoarding(data):
        import zlib
        return zlib.decompressobj(31).decompress(data)    # the whole inflated input at once

    monkeypatch.setitem(harnesses.TARGETS, "hoarding", hoarding)
    monkeypatch.setattr(harnesses, "CAPTURE_FILE_TARGETS", harnesses.CAPTURE_FILE_TARGETS | {"hoarding"})
    with pytest.raises(harnesses.InvariantViolation, match="allocated a peak"):
        harnesses.bounded("hoarding", gzip.compress(bytes(64 << 20)))


# ---------------------------------------------------------------- bounded work
def _peak(fn, *args):
    """(result or exception, tracemalloc peak bytes, seconds)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        try:
            res = fn(*args)
        except DecodeError as exc:
            res = exc
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return res, peak, time.perf_counter() - t0


MiB = 1 << 20


def _pcf_header(count: int, order: str = ">") -> bytes:
    # MQCFH (IBM MQ docs, "MQCFH - PCF header"): Type, StrucLength 36, Version, Command,
    # MsgSeqNumber, Control, CompCode, Reason, ParameterCount
    return struct.pack(order + "9i", 1, 36, 1, 13, 1, 1, 0, 0, count)


def test_mqcfsl_huge_count_is_bounded():
    # MQCFSL: Type 6, StrucLength, Parameter, CodedCharSetId, Count, StringLength, Strings
    for strlen in (0, 1, 48):
        cfsl = struct.pack(">6i", 6, 24, 3001, 0, 0x7FFFFFFF, strlen)
        data = _pcf_header(1) + cfsl + b"A" * 64
        res, peak, secs = _peak(lambda d: __import__("mqcodec").ibmmq.decode_pcf(d), data)
        assert isinstance(res, DecodeError), res
        assert res.structure == "MQCFSL"
        assert peak < 64 * len(data) + 2 * MiB and secs < 2


def test_mqcfil_and_group_huge_counts_are_bounded():
    from mqcodec.ibmmq import decode_pcf
    # MQCFIL: Type 5, StrucLength, Parameter, Count, Values; MQCFGR: Type 20, StrucLength 16, Parameter, ParameterCount
    for body in (struct.pack(">4i", 5, 16, 1, 0x7FFFFFFF), struct.pack(">4i", 25, 16, 1, 0x7FFFFFFF),
                 struct.pack(">4i", 20, 16, 1, 0x7FFFFFFF)):
        for count in (1, 0x7FFFFFFF):
            data = _pcf_header(count) + body + b"\0" * 32
            res, peak, secs = _peak(decode_pcf, data)
            assert isinstance(res, DecodeError), res
            assert peak < 64 * len(data) + 2 * MiB and secs < 2


def test_deeply_nested_groups_decode_or_fail_cleanly():
    from mqcodec.ibmmq import decode_pcf
    depth = 20000
    group = struct.pack(">4i", 20, 16, 8000, 1)          # MQCFGR with one child
    leaf = struct.pack(">4i", 3, 16, 1, 7)               # MQCFIN
    data = _pcf_header(1) + group * depth + leaf
    res, peak, secs = _peak(decode_pcf, data)
    assert secs < 10
    if isinstance(res, DecodeError):
        assert res.structure in ("MQCFGR", "MQCFH", "PCF")
    # and the pure batch path agrees with the compiled one on it
    harnesses.fuzz_batch_pcf(bytes([0]) + data)


def test_msmq_packetsize_ffffffff_is_bounded():
    from mqcodec.msmq import decode_packet
    # [MS-MQMQ] 2.2.19.1 BaseHeader: VersionNumber 0x10, Reserved, Flags, Signature "LIOR", PacketSize, TTRQ
    data = struct.pack("<BBHIII", 0x10, 0, 0x0300, 0x524F494C, 0xFFFFFFFF, 0xFFFFFFFF) + b"\0" * 100
    res, peak, secs = _peak(decode_packet, data)
    assert isinstance(res, DecodeError) and res.structure == "BaseHeader" and res.field == "PacketSize"
    assert res.offset == 8
    assert peak < MiB and secs < 1
    # the framer must not wait for (or buffer) four gigabytes either
    events = harnesses.run_msmq_framer(data, 1)
    assert any(isinstance(e, __import__("mqcodec").msmq.framing.FramingError) for e in events)


def _big_mqf_packet(nbytes: int) -> bytes:
    """A UserMessage whose MultiQueueFormatHeader Destination holds as many
    minimal elements (direct format name "\\0": FormatType 3 + one NUL
    WCHAR, [MS-MQMQ] 2.2.18.1.4) as fit in ``nbytes``."""
    from mqcodec.msmq import BaseFlags, BaseHeader, MultiQueueFormatHeader, encode_packet
    from mqcodec.msmq.packet import Packet
    from mqcodec.msmq.user import DirectQueueFormatName, UserFlags, UserHeader
    from mqcodec.msmq.properties import MessagePropertiesHeader

    mqf = MultiQueueFormatHeader.create()
    uh = UserHeader(SourceQueueManager=__import__("uuid").UUID(int=1), QueueManagerAddress=__import__("uuid").UUID(int=2),
                    SentTime=1, MessageID=1, Flags=UserFlags(DQ=7, MP=1, MQ=1),
                    DestinationQueue=DirectQueueFormatName("TCP:10.0.0.1\\PRIVATE$\\q"))
    pkt = Packet("UserMessage", BaseHeader(Flags=BaseFlags(PR=3)), UserHeader=uh,
                 MessagePropertiesHeader=MessagePropertiesHeader(Label="x", BodyType=0x11, MessageBody=b"b"),
                 MultiQueueFormatHeader=mqf)
    raw = encode_packet(pkt)
    tail = mqf.encode()
    assert raw.endswith(tail)
    prefix = raw[: len(raw) - len(tail)]
    n = (nbytes - len(prefix) - len(tail)) // 4
    element = struct.pack("<HH", 3, 0)
    dest = struct.pack("<IHHI", 12 + 4 * n, 0x0064, 0, n) + element * n    # MQFAddressHeader
    out = bytearray(prefix + dest + tail[mqf.Destination.HeaderSize:])
    struct.pack_into("<I", out, 8, len(out))                                  # PacketSize
    return bytes(out)


def _cpu(fn, data) -> float:
    """CPU seconds of fn(data) (process time: independent of other jobs on a shared machine)."""
    t0 = time.process_time()
    try:
        fn(data)
    except DecodeError:
        pass
    return time.process_time() - t0


def test_4mib_packet_of_minimal_mqf_elements_is_linear():
    from mqcodec.msmq import decode_packet
    small = _big_mqf_packet(64 * 1024)
    big = _big_mqf_packet(0x00400000 - 64)                   # PacketSize at most 0x00400000
    assert len(big) <= 0x00400000
    t_small = _cpu(decode_packet, small)
    t0 = time.process_time()
    pkt = decode_packet(big)
    t_big = time.process_time() - t0
    # 4 bytes per element: every element of the builder is found
    n_small = len(decode_packet(small).MultiQueueFormatHeader.Destination.FormatNameList)
    assert len(pkt.MultiQueueFormatHeader.Destination.FormatNameList) == n_small + (len(big) - len(small)) // 4
    # ~1 M elements: about 4 s of CPU here; 2.5 us per byte of CPU is the bound (a quadratic walk
    # would take hours), and the growth from 64 KiB to 4 MiB must stay linear (generous factor 4)
    assert t_big < 2.5e-6 * len(big), t_big
    assert t_big < 64 * 4 * max(t_small, 0.01), (t_small, t_big)


def test_tsh_segment_length_7fffffff_is_bounded():
    from mqcodec.ibmmq.framing import FramingError, MQStreamFramer
    # TSHM: StructId "TSHM", MQSegmLen (big-endian) = 0x7FFFFFFF, then header bytes
    data = b"TSHM" + struct.pack(">I", 0x7FFFFFFF) + b"\0" * 40
    tracemalloc.start()
    try:
        f = MQStreamFramer()
        f.feed(data)
        f.feed(b"\0" * 4096)
        f.close()
        events = f.events()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert any(isinstance(e, FramingError) for e in events)
    assert peak < 2 * MiB


def test_pcapng_block_length_2gb_is_bounded():
    # pcapng SHB: Block Type 0x0A0D0D0A, Block Total Length, Byte-Order Magic 0x1A2B3C4D, v1.0, Section Length -1
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    epb = struct.pack("<II", 6, 0x80000000) + b"\0" * 64       # Enhanced Packet Block claiming 2 GiB
    idb = struct.pack("<IIHHI", 1, 20, 1, 0, 65535) + struct.pack("<I", 20)
    data = shb + idb + epb
    res, peak, secs = _peak(lambda d: harnesses._drain_capture(d), data)
    assert isinstance(res, DecodeError) and res.field == "Block Total Length"
    assert res.offset == len(shb) + len(idb) + 4
    assert peak < 2 * MiB and secs < 1


def test_pcap_record_length_huge_is_bounded():
    # pcap record header: ts_sec, ts_usec, incl_len, orig_len
    data = harnesses.PCAP_HEADER + struct.pack("<IIII", 1, 0, 0xFFFFFFF0, 0xFFFFFFF0) + b"\0" * 64
    res, peak, secs = _peak(lambda d: harnesses._drain_capture(d), data)
    assert isinstance(res, DecodeError)
    assert peak < 2 * MiB and secs < 1


# --------------------------------------------------------------- open findings of the `report` target
#: Found by the `report` campaign (issue #8).  Kept here, not in tests/fuzz/corpus/report/, while open:
#: the atheris passes seed from the committed corpus and would stop on them.  When fixed, the xfail
#: turns into an XPASS failure (strict): then move the inputs into tests/fuzz/corpus/report/.
#: Cause: FormatName.parse accepts ANY character in an HTTP(S) Host (formatname.py _parse_direct:
#: r"//([^/\\:]+)(:[0-9]*)?/MSMQ" has no visible-ASCII check; OS:/TCP: addresses have one, _VCHARS).
REPORT_FINDINGS = [
    # found by the `report` campaign: FormatName.parse accepted any character in an HTTP(S)
    # host; a NUL then did not round-trip through MQFFormatNameElement (read back as "HTTP://h"),
    # a lone surrogate made from_format_name raise UnicodeEncodeError.  Host is "a computer name
    # ... or an IP address" ([MS-MQMQ] 2.1.2): visible ASCII, as for OS: names.
    pytest.param("DIRECT=HTTP://h\x00/msmq/q", id="http-host-nul"),
    pytest.param("DIRECT=HTTP://h\ud800/msmq/q", id="http-host-lone-surrogate"),
    pytest.param("DIRECT=HTTPS://h h/msmq/q", id="https-host-space"),
]


@pytest.mark.parametrize("text", REPORT_FINDINGS)
def test_report_finding_http_host(text):
    from mqcodec.msmq.formatname import FormatName, FormatNameError

    harnesses.fuzz_report(text.encode("utf-16-le", "surrogatepass"))
    with pytest.raises(FormatNameError) as ei:
        FormatName.parse(text)
    assert ei.value.field == "ProtocolAddressSpecification" and ei.value.offset == len("DIRECT=HTTP:") + (
        text.startswith("DIRECT=HTTPS")) + 2
