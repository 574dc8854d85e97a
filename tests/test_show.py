"""``mqcodec show`` and :mod:`mqcodec.show`: the units of a capture's frames.

Outside facts: tshark's IBM MQ dissection of the shared real capture (segment
type, conversation and request ids, reason code, object names, per frame),
tshark's TCP/UDP payload bytes of the simulator's MSMQ frames, and the
compiled capture engine's rows (an independent implementation of framing)
for the same capture.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from conftest import CAPTURES

from mqcodec import show
from mqcodec.show import FilterError, compile_filter, iter_units

JMS = CAPTURES / "ibmmq_jms_client_1414.pcap"


def run(*args):
    return subprocess.run([sys.executable, "-m", "mqcodec", *args], capture_output=True)


def tshark_fields(tshark, cap, display_filter, *fields):
    """{frame number: [per-field lists of values]} (values of several PDUs in a
    frame in order, as tshark's occurrence=a with a separator gives them)."""
    cmd = [tshark, "-r", str(cap), "-Y", display_filter, "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=|", "-e", "frame.number"]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        cols = line.split("\t")
        out[int(cols[0])] = [c.split("|") if c != "" else [] for c in cols[1:]]
    return out


def pcap2parquet_rows(outdir):
    """pcap2parquet's rows as dicts with ``protocol`` and ``msmq_label``: from
    ``messages.parquet``, or from the per-protocol datasets (``mq_messages/``,
    ``msmq_packets/``, whose MSMQ label column is ``label``)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if (outdir / "messages.parquet").is_file():
        return pq.read_table(outdir / "messages.parquet").to_pylist()
    rows = []
    for table, protocol in (("mq_messages", "mq"), ("msmq_packets", "msmq")):
        if (outdir / table).is_dir():
            for r in ds.dataset(outdir / table, partitioning="hive").to_table().to_pylist():
                r["protocol"] = protocol
                if protocol == "msmq":
                    r.setdefault("msmq_label", r.get("label"))
                rows.append(r)
    assert rows, "no pcap2parquet output in %s" % outdir
    return rows


@pytest.fixture(scope="module")
def jms_units():
    return list(iter_units(str(JMS)))


# ---------------------------------------------------------------------------
# IBM MQ against tshark
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jms_json():
    """What ``mqcodec show CAPTURE --format json`` prints: the headers."""
    r = run("show", str(JMS), "--format", "json")
    assert r.returncode == 0, r.stderr
    return [u["header"] for u in json.loads(r.stdout)]


@pytest.mark.tshark
def test_mq_segments_per_frame_equal_tshark(tshark, jms_json):
    ts = tshark_fields(tshark, JMS, "mq", "mq.tsh.type", "mq.tsh.convid", "mq.tsh.requestid",
                       "mq.api.reasoncode", "mq.tsh.seglength")
    assert len(ts) > 100
    ours = defaultdict(list)
    for f in jms_json:
        if f["unit"] == "segment":
            # tshark shows a segment in the frame that completes it: its last frame
            ours[f["last_frame"]].append(f)
    assert set(ours) == set(ts)
    compared = 0
    for frame, (types, convs, reqs, reasons, lengths) in ts.items():
        mine = ours[frame]
        assert [int(t, 16) for t in types] == [f["segment_type"] for f in mine], frame
        assert [int(x) for x in lengths] == [f["length"] for f in mine], frame
        # TSH (not TSHM) segments have no ids; tshark then lists none
        assert [int(x) for x in convs] == [f["conversation_id"] for f in mine if "conversation_id" in f], frame
        assert [int(x) for x in reqs] == [f["request_id"] for f in mine if "request_id" in f], frame
        assert [int(x) for x in reasons] == [f["reason"] for f in mine if "reason" in f], frame
        compared += len(mine)
    assert compared == sum(len(v[0]) for v in ts.values())


@pytest.mark.tshark
def test_cli_show_frames_equal_tshark_per_frame(tshark):
    """``--frame N`` for some frames: exactly the segments tshark dissects in them."""
    ts = tshark_fields(tshark, JMS, "mq", "mq.tsh.type", "mq.tsh.convid")
    chosen = sorted(ts)[::9]
    args = [a for n in chosen for a in ("--frame", str(n))]
    r = run("show", str(JMS), "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    got = defaultdict(list)
    for u in json.loads(r.stdout):
        assert set(u["header"]["frames"]) & set(chosen)
        if u["header"]["unit"] == "segment":
            got[u["header"]["frame"]].append((u["header"]["segment_type"], u["header"].get("conversation_id")))
    assert got == {n: [(int(t, 16), int(c) if i < len(ts[n][1]) else None)
                       for i, (t, c) in enumerate(zip(ts[n][0], ts[n][1] + [None] * len(ts[n][0])))]
                   for n in chosen}


@pytest.mark.tshark
def test_mq_object_names_equal_tshark(tshark, jms_units):
    # MQOPEN / MQOPEN_REPLY / MQPUT1: the MQOD's ObjectName (tshark mq.od.objname)
    ts = tshark_fields(tshark, JMS, "mq.tsh.type == 0x83 || mq.tsh.type == 0x93 || mq.tsh.type == 0x87",
                       "mq.od.objname", "mq.od.objqmgrname")
    assert ts
    by_frame = defaultdict(list)
    for u in jms_units:
        if u.unit == "segment" and u.extra.get("segment_type") in (0x83, 0x93, 0x87):
            by_frame[u.frame].append(u.decode()["MQOD"])
    assert set(by_frame) == set(ts)
    for frame, (names, qmgrs) in ts.items():
        assert [n.rstrip(" ") for n in names] == [od["ObjectName"] for od in by_frame[frame]]
        assert [q.rstrip(" ") for q in qmgrs] == [od["ObjectQMgrName"] for od in by_frame[frame]]


@pytest.mark.tshark
def test_mq_messages_equal_tshark_md(tshark, jms_units):
    ts = tshark_fields(tshark, JMS, "mq.md.structid", "mq.md.format", "mq.md.correlid", "mq.md.persistence")
    msgs = defaultdict(list)
    for u in jms_units:
        if u.unit == "message":
            msgs[u.frames[-1]].append(u.decode()["MQ message"])
    assert msgs, "the JMS capture has MQPUT/MQGET messages"
    assert set(msgs) <= set(ts)
    for frame, decoded in msgs.items():
        formats, correlids, persistence = ts[frame]
        # tshark lists every MQMD of the frame (an MQGET request carries one too: take the last ones)
        md = decoded  # the MQMD fields are the top level of decode_message's dict
        assert [m["Format"] for m in md] == [f.rstrip(" ") for f in formats[-len(md):]], frame
        assert [bytes(m["CorrelId"]).hex() for m in md] == [x.replace(":", "") for x in correlids[-len(md):]], frame
        assert [m["Persistence"] for m in md] == [int(x) for x in persistence[-len(md):]], frame


@pytest.mark.tshark
def test_cli_show_frame_text_and_json(tshark):
    ts = tshark_fields(tshark, JMS, "frame.number == 27 || frame.number == 213",
                       "mq.tsh.type", "mq.api.reasoncode")
    r = run("show", str(JMS), "--frame", "27", "--frame", "213", "--format", "json")
    assert r.returncode == 0, r.stderr
    units = json.loads(r.stdout)
    segs = [u for u in units if u["header"]["unit"] == "segment"]
    assert [(u["header"]["frame"], u["header"]["segment_type"], u["header"]["reason"]) for u in segs] == \
        [(f, int(ts[f][0][0], 16), int(ts[f][1][0])) for f in (27, 213)]
    assert units[0]["header"]["kind"] == "MQCONN_REPLY" and units[0]["header"]["reason"] == 2035
    assert units[0]["decoded"]["API"]["Reason"] == 2035
    r = run("show", str(JMS), "--frame", "27")
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    head = text.splitlines()[0]
    assert head.startswith("Frame 27, ") and "10.10.10.12:1414 -> 10.10.10.2:36421" in head
    assert "tcp.stream 0" in head and "IBM MQ segment MQCONN_REPLY" in head and "reason 2035" in head
    assert "    API" in text and "Reason: 2035" in text
    assert r.stderr == b""


def test_cli_show_filter(jms_units):
    r = run("show", str(JMS), "--filter", 'kind == "MQPUT" and tcp_stream == 3', "--format", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = [u for u in jms_units if u.kind == "MQPUT" and u.tcp_stream == 3]
    assert want and [(g["header"]["unit"], g["header"]["frame"]) for g in got] == \
        [(u.unit, u.frame) for u in want]
    r = run("show", str(JMS), "--filter", "kind == MQPUT")
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert b'"MQPUT"' in r.stderr and len(r.stderr.splitlines()) == 1
    r = run("show", str(JMS), "--frame", "1")  # a SYN: nothing to show
    assert r.returncode == 0 and r.stdout == b"" and b"no IBM MQ or MSMQ unit in frame 1" in r.stderr


def test_frame_selection_stops_early_and_matches_full_run(jms_units):
    want = {u.frame for u in jms_units if u.unit == "message"}
    first = min(want)
    sel = list(iter_units(str(JMS), frames=[first]))
    assert sel and all(first in u.frames for u in sel)
    assert [(u.unit, u.offset, u.tcp_stream) for u in sel] == \
        [(u.unit, u.offset, u.tcp_stream) for u in jms_units if first in u.frames]


def test_unit_spanning_frames_belongs_to_each(tmp_path):
    """A message cut by TCP into several frames is shown for each of them."""
    from mqcodec.capture.writer import PcapWriter, TcpConversation
    from mqcodec.ibmmq import encode_put
    from mqcodec.ibmmq.headers import MQMD
    from mqcodec.ibmmq.message import MQMessage

    conv = TcpConversation(("10.0.0.1", 40000), ("10.0.0.2", 1414), isn_client=1, isn_server=2,
                           start_ns=10**18, step_ns=1000, mss=200)
    msg = MQMessage(MQMD(Version=1, Format="MQSTR"), [], "x" * 600)
    packets = conv.handshake() + conv.send(0, encode_put(msg, conversation_id=1, request_id=1)) + conv.close()
    path = tmp_path / "split.pcap"
    with open(path, "wb") as f:
        w = PcapWriter(f, nanosecond=True)
        for p in packets:
            w.write(p.ts_ns, p.frame)
    units = list(iter_units(str(path)))
    message = [u for u in units if u.unit == "message"]
    assert len(message) == 1 and len(message[0].frames) >= 4
    assert message[0].decode()["MQ message"]["Format"] == "MQSTR"
    for n in message[0].frames:
        assert message[0].offset in [u.offset for u in iter_units(str(path), frames=[n]) if u.unit == "message"]


# ---------------------------------------------------------------------------
# MSMQ (tshark has no MSMQ dissector: its payload bytes, and the compiled engine)
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def synth_capture(tmp_path_factory):
    from mqcodec.synth import write_capture

    path = tmp_path_factory.mktemp("synth") / "synth.pcap"
    write_capture(str(path), seed=3, messages=60)
    return path


@pytest.mark.tshark
def test_msmq_packets_are_the_frames_bytes(tshark, synth_capture):
    from mqcodec.msmq import decode_packet, decode_ping

    units = list(iter_units(str(synth_capture)))
    packets = [u for u in units if u.protocol == "msmq" and u.unit == "packet"]
    pings = [u for u in units if u.unit == "ping"]
    assert len(packets) > 20 and len(pings) == 6
    payload = {}
    r = subprocess.run([tshark, "-r", str(synth_capture), "-Y", "tcp.port == 1801 || udp.port == 3527",
                        "-T", "fields", "-e", "frame.number", "-e", "tcp.payload", "-e", "udp.payload"],
                       capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        n, tcp, udp = line.split("\t")
        payload[int(n)] = bytes.fromhex(tcp or udp)
    checked = 0
    for u in packets + pings:
        joined = b"".join(payload[n] for n in u.frames)
        assert u.data in joined, (u.frame, u.kind)
        tree = u.decode()
        if u.unit == "ping":
            assert tree == {"MSMQ ping": decode_ping(payload[u.frame]).to_dict()}
        elif len(u.frames) == 1 and payload[u.frame] == u.data:
            assert tree["MSMQ packet"] == decode_packet(payload[u.frame]).to_dict()
            checked += 1
    assert checked > 10


@pytest.mark.parametrize("capture_impl", ["c", "py"])
def test_units_equal_pcap2parquet_rows(synth_capture, tmp_path, capture_impl):
    """The messages, packets and pings show finds are the rows pcap2parquet
    writes (frame of the first byte, stream, offset, kind); MSMQ packets decode
    as the batch decoder decodes them."""
    from mqcodec.convert import ConvertOptions, convert

    if capture_impl == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    convert([str(synth_capture)], str(tmp_path), ConvertOptions(capture_impl=capture_impl, raw=True))
    rows = pcap2parquet_rows(tmp_path)
    units = [u for u in iter_units(str(synth_capture)) if u.unit in ("message", "packet", "ping")]
    key = lambda r: (r["frame"], r["tcp_stream"] if r["tcp_stream"] is not None else -1,  # noqa: E731
                     r["stream_offset"] if r["stream_offset"] is not None else -1, r["protocol"], r["kind"])
    assert sorted(key(r) for r in rows) == sorted(
        key({"frame": u.frame, "tcp_stream": u.tcp_stream, "stream_offset": u.offset if u.unit != "message"
             else u.offset, "protocol": u.protocol, "kind": u.kind}) for u in units)
    by_key = {key(r): r for r in rows}
    n = 0
    for u in units:
        if u.unit != "packet":
            continue
        r = by_key[key({"frame": u.frame, "tcp_stream": u.tcp_stream, "stream_offset": u.offset,
                        "protocol": "msmq", "kind": u.kind})]
        assert r["raw"] == u.data
        props = u.decode()["MSMQ packet"]
        if r["msmq_label"] is not None:
            assert props["MessagePropertiesHeader"]["Label"] == r["msmq_label"]
            n += 1
    assert n > 5


# ---------------------------------------------------------------------------
# the filter language
# ---------------------------------------------------------------------------
class _U:
    def __init__(self, **f):
        self.f = f

    def fields(self):
        return self.f

    def decode(self):
        return {}


@pytest.mark.parametrize("expr, fields, want", [
    ('kind == "MQPUT"', {"kind": "MQPUT"}, True),
    ('kind == "MQPUT"', {"kind": "MQGET"}, False),
    ("kind != 'MQPUT'", {"kind": "MQGET"}, True),
    ("tcp_stream == 3 and frame > 10", {"tcp_stream": 3, "frame": 11}, True),
    ("tcp_stream == 3 and frame > 10", {"tcp_stream": 3, "frame": 10}, False),
    ("tcp_stream == 3 && frame >= 10", {"tcp_stream": 3, "frame": 10}, True),
    ("frame < 5 or frame > 8", {"frame": 6}, False),
    ("frame <= 5 || frame > 8", {"frame": 9}, True),
    ("not (frame < 5 or frame > 8)", {"frame": 6}, True),
    ("!(frame < 5)", {"frame": 6}, True),
    ("reason == 0x7F3", {"reason": 2035}, True),
    ("reason != 0", {}, False),            # a missing field: every comparison is false
    ("reason == 0", {}, False),
    ("not reason == 0", {}, True),
    ("error", {"error": "truncated"}, True),
    ("error", {}, False),
    ("port == 1414", {"port": (36421, 1414)}, True),
    ("port == 1801", {"port": (36421, 1414)}, False),
    ("frames == 8", {"frames": (7, 8, 9)}, True),
    ('a == "b" or src == "10.0.0.1"'.replace("a ==", "dst =="), {"src": "10.0.0.1", "dst": "x"}, True),
    ('kind == "say \\"hi\\""', {"kind": 'say "hi"'}, True),
    ("tcp_stream == 1 or tcp_stream == 2 and frame == 3", {"tcp_stream": 1, "frame": 9}, True),  # and binds tighter
    ("(tcp_stream == 1 or tcp_stream == 2) and frame == 3", {"tcp_stream": 1, "frame": 9}, False),
])
def test_filter_semantics(expr, fields, want):
    assert compile_filter(expr)(_U(**fields)) is want


@pytest.mark.parametrize("expr, message", [
    ("", "empty filter"),
    ("kind == MQPUT", 'a string value is quoted: "MQPUT"'),
    ("knd == 'x'", "unknown field 'knd'"),
    ("frame == '3'", "frame is a number field"),
    ('kind == 3', "kind is a text field"),
    ("frame ==", "expected a value after '=='"),
    ("(frame == 3", "expected ')'"),
    ("frame == 3)", "unexpected ')'"),
    ("frame == 3 ; import os", "unexpected character ';'"),
    ("__import__('os')", "unknown field '__import__'"),
    ("frame == 3 frame == 4", "unexpected 'frame'"),
])
def test_filter_errors(expr, message):
    with pytest.raises(FilterError) as info:
        compile_filter(expr)
    assert message in str(info.value)
    assert "(at character" in str(info.value)


def test_every_field_is_documented_in_the_help():
    r = run("show", "--help")
    assert r.returncode == 0
    for name in show.FIELDS:
        assert name.encode() in r.stdout, name


def test_show_missing_and_non_capture_files(tmp_path):
    r = run("show", str(tmp_path / "nope.pcap"))
    assert r.returncode == 3 and len(r.stderr.splitlines()) == 1 and b"Traceback" not in r.stderr
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"MD  " + bytes(100))
    r = run("show", str(bad))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and b"Traceback" not in r.stderr


def _write(path, packets):
    from mqcodec.capture.writer import PcapWriter

    with open(path, "wb") as f:
        w = PcapWriter(f, nanosecond=True)
        for p in packets:
            w.write(p.ts_ns, p.frame)


@pytest.fixture()
def damaged_capture(tmp_path):
    """An IBM MQ connection: a message, 300 bytes of garbage, another message."""
    from mqcodec.capture.writer import TcpConversation
    from mqcodec.ibmmq import encode_put
    from mqcodec.ibmmq.headers import MQMD
    from mqcodec.ibmmq.message import MQMessage

    conv = TcpConversation(("10.0.0.1", 40000), ("10.0.0.2", 1414), isn_client=7, isn_server=9,
                           start_ns=10**18, step_ns=1000)
    msg = MQMessage(MQMD(Version=1, Format="MQSTR"), [], "hello")
    packets = conv.handshake() + conv.send(0, encode_put(msg, conversation_id=1, request_id=1))
    packets += conv.send(0, b"garbage!" * 40)
    packets += conv.send(0, encode_put(msg, conversation_id=1, request_id=2)) + conv.close()
    path = tmp_path / "damaged.pcap"
    _write(path, packets)
    return path


@pytest.mark.parametrize("capture_impl", ["c", "py"])
def test_error_units_equal_pcap2parquet_error_rows(damaged_capture, tmp_path, capture_impl):
    from mqcodec.convert import ConvertOptions, convert

    if capture_impl == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    units = list(iter_units(str(damaged_capture)))
    errors = [u for u in units if u.unit == "error"]
    assert len(errors) == 1 and errors[0].fields()["error"]
    convert([str(damaged_capture)], str(tmp_path / "out"), ConvertOptions(capture_impl=capture_impl))
    rows = pcap2parquet_rows(tmp_path / "out")
    bad = [r for r in rows if r["error"] is not None]
    assert [(r["frame"], r["stream_offset"], r["length"]) for r in bad] == \
        [(u.frame, u.offset, u.length) for u in errors]
    assert len([u for u in units if u.unit == "message"]) == len(rows) - len(bad) == 2
    # --filter error selects it, from the command line too
    r = run("show", str(damaged_capture), "--filter", "error", "--format", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert [(g["header"]["unit"], g["header"]["frame"]) for g in got] == [("error", errors[0].frame)]


def test_show_reads_standard_input(damaged_capture):
    by_path = run("show", str(damaged_capture))
    by_stdin = subprocess.run([sys.executable, "-m", "mqcodec", "show", "-"], input=damaged_capture.read_bytes(),
                              capture_output=True)
    assert by_path.returncode == by_stdin.returncode == 0
    assert by_stdin.stdout == by_path.stdout and b"IBM MQ message MQPUT" in by_path.stdout
