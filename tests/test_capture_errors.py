"""Bad input: truncated files, absurd lengths, unknown link types, garbage.

File-structure problems raise mqcodec.DecodeError naming the structure, the
field (as the format specifications name them) and the absolute offset;
frame-content problems become Skipped/Malformed events and never raise.
"""
from __future__ import annotations

import gzip
import io
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mqcodec import DecodeError
from mqcodec.capture.frame import Frame
from mqcodec.capture.ipfrag import IPv4Fragment
from mqcodec.capture.packet import Malformed, Skipped, TCPSegment, UDPDatagram, decode_frame
from mqcodec.capture.reader import CaptureParser, open_capture
from mqcodec.capture.stream import CaptureProcessor, iter_capture_events
from mqcodec.capture.writer import TcpConversation, ethernet, ipv4, ipv6, tcp, write_pcap

# pcap File Header fields and their offsets (draft-ietf-opsawg-pcap, Figure 1)
PCAP_FIELDS = [(0, "magic_number"), (4, "version_major"), (6, "version_minor"), (8, "thiszone"),
               (12, "sigfigs"), (16, "snaplen"), (20, "network")]
# pcapng SHB fixed fields (draft-ietf-opsawg-pcapng, Figure 9)
SHB_FIELDS = [(0, "Block Type"), (4, "Block Total Length"), (8, "Byte-Order Magic"), (12, "Major Version"),
              (14, "Minor Version"), (16, "Section Length")]


def field_at(table, k):
    return [name for off, name in table if off <= k][-1]


def sample_pcap(**kw) -> bytes:
    c = TcpConversation()
    c.handshake()
    c.send(0, b"payload!" * 10)
    buf = io.BytesIO()
    write_pcap(buf, c.packets, c.linktype, **kw)
    return buf.getvalue()


def sample_pcapng() -> bytes:
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", btype, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))
    c = TcpConversation()
    c.handshake()
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", 1, 0, 0))
    for p in c.packets:
        out += block(6, struct.pack("<IIIII", 0, (p.ts_ns // 1000) >> 32, (p.ts_ns // 1000) & 0xFFFFFFFF, len(p.frame), len(p.frame)) + p.frame)
    return out


def parse_all(data: bytes, chunk: int = 1 << 16):
    p = CaptureParser()
    frames = []
    for i in range(0, len(data), chunk):
        frames += p.feed(data[i:i + chunk])
    return frames, p.close()


# --- truncated files -----------------------------------------------------------------

@pytest.mark.parametrize("k", range(24))
def test_pcap_header_truncated_at_every_byte(k):
    raw = sample_pcap()[:k]
    with pytest.raises(DecodeError) as ei:
        parse_all(raw)
    e = ei.value
    assert e.structure == "pcap global header"
    if k >= 4:  # the magic is known: the first field cut is named
        assert (e.field, e.offset) == (field_at(PCAP_FIELDS, k), dict((n, o) for o, n in PCAP_FIELDS)[field_at(PCAP_FIELDS, k)])
    else:
        assert (e.field, e.offset) == ("magic_number", 0)
    with pytest.raises(DecodeError):
        list(open_capture(raw))


def test_pcap_record_truncated_at_every_byte():
    raw = sample_pcap()
    first_len = struct.unpack_from("<I", raw, 24 + 8)[0]
    end1 = 24 + 16 + first_len
    end2 = end1 + 16 + struct.unpack_from("<I", raw, end1 + 8)[0]
    for cut in range(end1, end2):
        frames, trunc = parse_all(raw[:cut], chunk=37)
        assert len(frames) == 1
        if cut == end1:
            assert trunc is None
            continue
        rel = cut - end1
        if rel < 16:
            assert trunc.structure == "pcap record header"
            assert trunc.field == ["ts_sec", "ts_usec", "incl_len", "orig_len"][rel // 4]
        else:
            assert (trunc.structure, trunc.field, trunc.offset) == ("pcap record", "data", end1 + 16)
            assert trunc.present == rel - 16 and trunc.needed == end2 - end1 - 16
        reader = open_capture(raw[:cut])
        assert len(list(reader)) == 1 and reader.truncation == trunc
        with pytest.raises(DecodeError) as ei:
            list(open_capture(raw[:cut], strict=True))
        assert ei.value.offset == trunc.offset


@pytest.mark.parametrize("k", range(1, 28))
def test_pcapng_shb_truncated_at_every_byte(k):
    raw = sample_pcapng()[:k]
    with pytest.raises(DecodeError) as ei:
        parse_all(raw)
    e = ei.value
    if k < 4:
        assert (e.structure, e.field, e.offset) == ("pcap global header", "magic_number", 0)
    else:
        assert e.structure == "pcapng SHB"
        if k < 24:
            assert e.field == field_at(SHB_FIELDS, k)


def test_pcapng_block_truncated_at_every_byte():
    raw = sample_pcapng()
    shb_idb = 28 + 20
    epb_len = struct.unpack_from("<I", raw, shb_idb + 4)[0]
    for cut in range(shb_idb + 1, shb_idb + epb_len):
        frames, trunc = parse_all(raw[:cut], chunk=13)
        assert frames == []
        assert trunc.structure == "pcapng block"
        assert trunc.offset in (shb_idb, shb_idb + 4, shb_idb + 8)


def test_gzip_truncated_or_corrupt():
    gz = gzip.compress(sample_pcap())
    with pytest.raises(DecodeError) as ei:
        list(open_capture(gz[:len(gz) // 2]))
    assert ei.value.structure == "gzip stream"
    bad = gz[:12] + bytes(b ^ 0xFF for b in gz[12:40]) + gz[40:]
    with pytest.raises(DecodeError) as ei:
        list(open_capture(bad))
    assert ei.value.structure == "gzip stream"


# --- absurd lengths ------------------------------------------------------------------

def _no_big_allocation(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 8 << 20, peak


def test_pcap_record_claiming_2gb():
    raw = bytearray(sample_pcap())
    struct.pack_into("<I", raw, 24 + 8, 0x7FFFFFF0)

    def go():
        with pytest.raises(DecodeError) as ei:
            list(open_capture(bytes(raw) + b"\0" * 100))
        assert (ei.value.structure, ei.value.field, ei.value.offset) == ("pcap record header", "incl_len", 32)
    _no_big_allocation(go)


@pytest.mark.parametrize("where,value,structure,field", [
    (48 + 4, 0x7FFFFFF0, "pcapng block", "Block Total Length"),   # 2 GB EPB
    (48 + 4, 0x0000002E, "pcapng block", "Block Total Length"),   # not a multiple of 4
    (48 + 4, 8, "pcapng block", "Block Total Length"),            # below 12
    (48 + 20, 0x00FFFFFF, "pcapng EPB", "Captured Packet Length"),  # caplen beyond the block
    (48 + 8, 7, "pcapng EPB", "Interface ID"),                    # no such interface
    (4, 0x7FFFFFF0, "pcapng block", "Block Total Length"),        # 2 GB SHB
    (8, 0x11223344, "pcapng SHB", "Byte-Order Magic"),
    (12, 2, "pcapng SHB", "Major Version"),
])
def test_pcapng_bad_lengths(where, value, structure, field):
    raw = bytearray(sample_pcapng())
    if field == "Major Version":
        struct.pack_into("<H", raw, where, value)
    else:
        struct.pack_into("<I", raw, where, value)

    def go():
        with pytest.raises(DecodeError) as ei:
            parse_all(bytes(raw))
        assert (ei.value.structure, ei.value.field) == (structure, field)
        assert ei.value.offset == where
    _no_big_allocation(go)


def test_pcapng_trailing_length_mismatch():
    raw = bytearray(sample_pcapng())
    epb_len = struct.unpack_from("<I", raw, 48 + 4)[0]
    struct.pack_into("<I", raw, 48 + epb_len - 4, epb_len + 4)
    with pytest.raises(DecodeError) as ei:
        parse_all(bytes(raw))
    assert (ei.value.field, ei.value.offset) == ("Block Total Length", 48 + epb_len - 4)


def test_garbage_and_empty():
    for junk in (b"", b"GET / HTTP/1.1\r\n\r\n", bytes(100), b"\xd4\xc3"):
        with pytest.raises(DecodeError) as ei:
            list(open_capture(junk))
        assert (ei.value.structure, ei.value.field, ei.value.offset) == ("pcap global header", "magic_number", 0)
    raw = bytearray(sample_pcap())
    struct.pack_into("<H", raw, 4, 3)
    with pytest.raises(DecodeError) as ei:
        list(open_capture(bytes(raw)))
    assert (ei.value.field, ei.value.offset) == ("version_major", 4)


# --- frames that are skipped or malformed ----------------------------------------------

def test_unknown_link_type_is_skipped_and_counted():
    raw = bytearray(sample_pcap())
    struct.pack_into("<I", raw, 20, 147)  # LINKTYPE_USER0
    proc = CaptureProcessor()
    events = list(iter_capture_events(bytes(raw), processor=proc))
    assert all(isinstance(e, Skipped) for e in events) and len(events) == 5
    assert proc.skipped == {"link type 147": 5}


def _frame(data, linktype=1, caplen=None, origlen=None):
    return Frame(1, 0, linktype, len(data) if caplen is None else caplen,
                 len(data) if origlen is None else origlen, data)


SEG = tcp("10.0.0.1", "10.0.0.2", 1, 1414, 1, 0, 0x02)


def test_non_ip_and_other_protocols_are_skipped():
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + bytes(28)
    assert decode_frame(_frame(arp)) == Skipped(1, "ethertype 0x0806")
    icmp = ethernet(ipv4("10.0.0.1", "10.0.0.2", 1, b"\x08\0\0\0\0\0\0\0"))
    assert decode_frame(_frame(icmp)) == Skipped(1, "IP protocol 1")
    llc = b"\xff" * 12 + b"\x00\x26" + bytes(38)
    assert decode_frame(_frame(llc)).reason.startswith("IEEE 802.3")


def test_ip_fragments_are_flagged():
    frag4 = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, SEG, flags_frag=0x2000, ident=77))  # MF set
    f = decode_frame(_frame(frag4))
    assert isinstance(f, IPv4Fragment) and (f.ident, f.offset, f.more, f.data) == (77, 0, True, SEG)
    later = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, SEG, flags_frag=0x0010))  # offset 16 x 8
    f = decode_frame(_frame(later))
    assert isinstance(f, IPv4Fragment) and (f.offset, f.more) == (128, False)
    too_far = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, SEG, flags_frag=0x1FFF))  # 65528 + 20 > 65535
    assert decode_frame(_frame(too_far))[1:4] == ("IPv4", "Fragment Offset", 20)
    cut = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, SEG, flags_frag=0x2000))
    assert decode_frame(_frame(cut[:40], origlen=len(cut))) == Skipped(1, "IP fragment cut by the snap length")
    seg6 = tcp("2001:db8::1", "2001:db8::2", 1, 1414, 1, 0, 0x02)
    frag6 = ethernet(ipv6("2001:db8::1", "2001:db8::2", 6, seg6, ext_headers=((44, b"\x00\x01" + bytes(4)),)))
    assert decode_frame(_frame(frag6)) == Skipped(1, "IP fragment")
    whole6 = ethernet(ipv6("2001:db8::1", "2001:db8::2", 6, seg6, ext_headers=((44, bytes(6)),)))
    assert isinstance(decode_frame(_frame(whole6)), TCPSegment)  # atomic fragment (RFC 6946)


def test_malformed_headers_name_field_and_offset():
    good = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, SEG))
    bad_ihl = bytearray(good)
    bad_ihl[14] = 0x44
    assert decode_frame(_frame(bytes(bad_ihl)))[1:4] == ("IPv4", "IHL", 14)
    bad_ver = bytearray(good)
    bad_ver[14] = 0x55
    assert decode_frame(_frame(bytes(bad_ver)))[1:4] == ("IPv4", "Version", 14)
    bad_total = bytearray(good)
    struct.pack_into("!H", bad_total, 16, 10)
    assert decode_frame(_frame(bytes(bad_total)))[1:4] == ("IPv4", "Total Length", 16)
    bad_doff = bytearray(good)
    bad_doff[14 + 20 + 12] = 0x30
    assert decode_frame(_frame(bytes(bad_doff)))[1:4] == ("TCP", "Data Offset", 46)
    long_doff = bytearray(good)
    long_doff[14 + 20 + 12] = 0xF0
    assert decode_frame(_frame(bytes(long_doff)))[1:3] == ("TCP", "Options")
    # an IPv6 extension header longer than the payload length allows
    seg6 = tcp("2001:db8::1", "2001:db8::2", 1, 1414, 1, 0, 0x02)
    v6 = bytearray(ethernet(ipv6("2001:db8::1", "2001:db8::2", 6, seg6, ext_headers=((60, bytes(6)),))))
    v6[14 + 40 + 1] = 200
    m = decode_frame(_frame(bytes(v6)))
    assert isinstance(m, Malformed) and (m.structure, m.field, m.offset) == ("IPv6 extension header", "Hdr Ext Len", 55)
    assert decode_frame(_frame(b"\x00" * 10))[1:3] == ("Ethernet", "Destination")


def test_headers_cut_by_snaplen_are_skipped_not_malformed():
    good = ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, SEG))
    assert decode_frame(_frame(good[:40], origlen=len(good))) == Skipped(1, "headers cut by the snap length")
    assert isinstance(decode_frame(_frame(good[:40])), Malformed)  # no snap cut: really malformed


def test_vlan_tag_limit():
    frame = b"\x02" * 12 + b"\x81\x00\x00\x01" * 9 + b"\x08\x00" + bytes(40)
    m = decode_frame(_frame(frame))
    assert isinstance(m, Malformed) and m.structure == "802.1Q"


# --- nothing but DecodeError escapes, and frames never raise ------------------------------

LINKTYPES = [0, 1, 12, 14, 101, 108, 113, 228, 229, 276, 147]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(LINKTYPES), st.binary(max_size=120))
def test_garbage_frames_never_raise(linktype, data):
    r = decode_frame(Frame(1, 0, linktype, len(data), len(data) + 5, data))
    assert type(r) in (TCPSegment, UDPDatagram, IPv4Fragment, Skipped, Malformed)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["pcap", "pcapng", "gzip"]),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=8),
       st.integers(0, 400))
def test_corrupted_files_raise_only_decode_error(kind, flips, cut):
    raw = sample_pcapng() if kind == "pcapng" else sample_pcap()
    raw = bytearray(raw)
    for pos, val in flips:
        raw[pos % len(raw)] = val
    data = bytes(raw)
    if kind == "gzip":
        data = gzip.compress(data)
    data = data[:len(data) - cut] if cut < len(data) else data
    try:
        for _ in iter_capture_events(data):
            pass
    except DecodeError:
        pass
