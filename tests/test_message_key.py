"""``message_key`` depends on the input only (docs/tables.md "Keys").

``capture index << 49 | frame << 17 | rank``: the same key for the same row
whichever capture engine converts it (the compiled core, the pure
pipeline), however the job is chunked (rows and bytes
per chunk, byte budget, writer threads), and at whatever position of the job
its capture comes (only the capture bits change).  The key holds the frame of
the row's first byte; ``pcf_parameters`` joins ``mq_messages`` on it.  Checked
on the shared real capture, simulator captures and a simulator capture with
lost, duplicated and reordered segments (gaps: error rows whose first byte was
never captured).
"""
from __future__ import annotations

import io
import random

import pytest

from mqcodec import synth
from mqcodec.capture.writer import PcapWriter
from mqcodec.convert import ConvertOptions, Converter, convert
from mqcodec.convert.keys import (KEY_CAPTURE_SHIFT, KEY_FALLBACK_RANK, KEY_FRAME_SHIFT, KEY_MARKS_KEPT, KEY_MAX_CAPTURE,
                                  KEY_MAX_FRAME, KEY_MAX_RANK, KeyOverflow, MessageKeys, key_base, key_capture, key_frame,
                                  key_rank, make_key, make_keys, marks_to_drop)
from mqcodec.convert.sinks import TableCollector, read_table

from conftest import CAPTURES

pytest.importorskip("mqcodec._ext.capture_core", reason="the compiled capture core is not built")

REAL = CAPTURES / "ibmmq_jms_client_1414.pcap"
LOW = (1 << KEY_CAPTURE_SHIFT) - 1
WHERE = ("capture", "tcp_stream", "src_ip", "src_port", "stream_offset", "frame", "kind", "error", "length")


def _pcap(packets) -> bytes:
    f = io.BytesIO()
    w = PcapWriter(f, nanosecond=True)
    for ts, data in packets:
        w.write(ts, data)
    return f.getvalue()


def _damaged(seed: int) -> bytes:
    """A simulator capture with segments lost, duplicated and swapped (the
    capture core follows those), and a connection with more open IBM MQ
    units than a framer keeps (the oldest dropped: error rows)."""
    pk = [(p.ts_ns, p.frame) for p in synth.generate(4, 40)]
    rnd = random.Random(seed)
    order = [i for i in range(len(pk)) if rnd.random() > 0.03]
    for i in range(len(order)):
        r = rnd.random()
        if r < 0.05 and i + 1 < len(order):
            order[i], order[i + 1] = order[i + 1], order[i]
        elif r < 0.08:
            order.insert(i, order[i])
    return _pcap([pk[i] for i in order] + _crowded_connection(pk[-1][0] + 10 ** 9))


def _crowded_connection(start_ns: int) -> list:
    """More multi-segment units open at once than a framer keeps (the oldest
    dropped with a FramingError), then good MQPUTs and a lost segment."""
    import struct

    from mqcodec.capture.writer import TcpConversation
    from mqcodec.ibmmq.builders import build_tsh, encode_put

    message = b"MD  " + struct.pack("<i", 2) + bytes(356) + b"after the open units"
    from mqcodec._ext.capture_core import MQ_MAX_OPEN_UNITS

    payload = _open_units(build_tsh, MQ_MAX_OPEN_UNITS + 1, closed=True) + encode_put(message) * 3
    c = TcpConversation(("10.9.0.1", 40999), ("10.9.0.2", 1414), mss=300, start_ns=start_ns)
    packets = c.handshake() + c.send(0, payload)
    del packets[-3]
    return [(p.ts_ns, p.frame) for p in packets + c.close()]


def _open_units(build_tsh, n: int, closed: bool) -> bytes:
    """``n`` MQPUT units of as many conversations open at once (their first
    segments), then (``closed``) their last segments in the same order."""
    first = b"".join(build_tsh(0x86, 36 + 100, conversation_id=1000 + k, ctl_flags1=0x10) + bytes(100)
                     for k in range(n))
    if not closed:
        return first
    return first + b"".join(build_tsh(0x86, 36 + 10, conversation_id=1000 + k, ctl_flags1=0x20) + bytes(10)
                            for k in range(n))


@pytest.mark.parametrize("puts", [25, 70], ids=["17-64-frames-later", "over-64-frames-later"])
def test_rows_reported_late_keep_unique_keys(impl, tmp_path, puts):
    """Units left open while rows of many later frames of their direction are
    written (interleaved conversations), reported at the end of the stream:
    their frame's count and mark are kept while they are open, so their keys
    are new and hold their frame, under both engines, equal."""
    from mqcodec.capture.writer import TcpConversation
    from mqcodec.ibmmq.builders import build_tsh, encode_put
    import struct

    message = b"MD  " + struct.pack("<i", 2) + bytes(356) + b"after the open units"
    c = TcpConversation(("10.9.0.1", 40998), ("10.9.0.2", 1414), mss=300, start_ns=1_700_000_000 * 10 ** 9)
    # the 21st unit and the first MQPUT start in the same 300-byte segment; MQPUTs starting in
    # many later segments follow; at the end of the stream the open units are reported
    packets = c.handshake() + c.send(0, _open_units(build_tsh, 21, closed=False) + encode_put(message) * puts)
    path = tmp_path / "late.pcap"
    path.write_bytes(_pcap([(p.ts_ns, p.frame) for p in packets + c.close()]))
    rows, _ = _job(tmp_path, [path], capture_impl=None if impl == "c" else "py", impl=impl)
    keys = _keys(rows)
    late = [r for r in rows if r["error"] is not None]
    assert len(late) == 21 and len(rows) == 21 + puts
    frames = [f for f in (r["frame"] for r in rows) if f is not None]
    assert len(frames) == len(rows), "a row lost its frame"
    assert max(r["frame"] for r in rows) - max(r["frame"] for r in late) > (16 if puts == 25 else 64)
    for key, where in keys.items():
        assert key_frame(key) == where[WHERE.index("frame")]
    pure, _ = _job(tmp_path, [path], name="pure", capture_impl="py", impl="py")
    assert _keys(pure) == keys


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    paths = {"real": REAL}
    for name, data in (("sim", _pcap([(p.ts_ns, p.frame) for p in synth.generate(2, 60)])),
                       ("damaged", _damaged(3))):
        paths[name] = d / (name + ".pcap")
        paths[name].write_bytes(data)
    return paths


def _rows(out) -> list:
    rows = []
    for table in ("mq_messages", "msmq_packets"):
        rows += read_table(str(out), table, columns=("message_key",) + WHERE).to_pylist()
    return rows


def _keys(rows) -> dict:
    """message_key -> where the row was seen; asserts the keys are unique."""
    keys = {r["message_key"]: tuple(r[k] for k in WHERE) for r in rows}
    assert len(keys) == len(rows), "message_key is not unique"
    return keys


def _job(tmp_path, paths, name="out", **opts):
    out = tmp_path / name
    report = convert([str(p) for p in paths], str(out), ConvertOptions(**opts))
    return _rows(out), report


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory):
    """The pure pipeline's keys, one writer thread, default chunking."""
    rows, report = _job(tmp_path_factory.mktemp("ref"), inputs.values(), capture_impl="py", impl="py", threads=1)
    assert report["summary"].get("gaps", 0) > 0, "the damaged capture has no gap"
    return _keys(rows)


@pytest.mark.parametrize("opts", [
    {},
    {"chunk_messages": 7},
    {"chunk_bytes": 1 << 10},
    {"buffer_budget": 32 << 20},
    {"threads": 1},
    {"threads": 3},
], ids=["default", "chunk-messages-7", "chunk-bytes-1k", "budget-32M", "threads-1", "threads-3"])
def test_keys_equal_under_engines_and_chunking(impl, inputs, reference, tmp_path, opts):
    # impl "c": the compiled capture core and compiled decoders; "py": the pure pipeline
    capture_impl = None if impl == "c" else "py"
    rows, report = _job(tmp_path, inputs.values(), impl=impl, capture_impl=capture_impl, **opts)
    assert not report["summary"].get("budget cuts"), "a budget that cuts changes the rows, not only the keys"
    assert report["summary"].get("framing errors", 0) > 0
    assert _keys(rows) == reference


def test_job_position_changes_only_the_capture_bits(inputs, reference, tmp_path):
    order = [inputs["damaged"], inputs["real"], inputs["sim"], inputs["real"]]
    rows, _ = _job(tmp_path, order)
    by_capture: dict = {}
    for r in rows:
        by_capture.setdefault(key_capture(r["message_key"]), []).append(r)
    assert sorted(by_capture) == [0, 1, 2, 3]
    ref_index = {"real.pcap": 0, "ibmmq_jms_client_1414.pcap": 0, "sim.pcap": 1, "damaged.pcap": 2}
    ref = {}
    for key, where in reference.items():
        ref.setdefault(key_capture(key), {})[key & LOW] = where
    for index, path in enumerate(order):
        got = {r["message_key"] & LOW: tuple(r[k] for k in WHERE) for r in by_capture[index]}
        assert got == ref[ref_index[path.name]], path.name
    # the same capture twice in one job: the same low bits, other capture bits
    twice = [{r["message_key"] & LOW for r in by_capture[i]} for i in (1, 3)]
    assert twice[0] == twice[1] and twice[0]


def test_key_holds_the_frame_of_the_first_byte(reference):
    decoded = fallback = 0
    rows = [dict(zip(WHERE, w), message_key=k) for k, w in reference.items()]
    for r in rows:
        k = r["message_key"]
        if r["error"] is None:   # a decoded row: its first byte was captured
            assert r["frame"] is not None and key_frame(k) == r["frame"], r
            assert key_rank(k) < KEY_FALLBACK_RANK
            decoded += 1
        elif key_frame(k) != r["frame"]:
            # an error row starting in a gap: the connection's first frame, a fallback rank
            assert key_rank(k) >= KEY_FALLBACK_RANK, r
            fallback += 1
    assert decoded > 100
    # the framers start every row at a captured byte (an error row for bytes after a gap
    # starts at the first byte after it), so the fallback is a safeguard that the damaged
    # capture does not reach: test_message_keys_rules checks it
    assert fallback == 0
    # ranks count the rows of one frame of one direction: 0, 1, 2, ...
    by_frame: dict = {}
    for r in rows:
        by_frame.setdefault((key_capture(r["message_key"]), key_frame(r["message_key"]), r["src_ip"],
                             r["src_port"]), []).append(key_rank(r["message_key"]))
    assert all(sorted(v) == list(range(len(v))) for v in by_frame.values())
    assert any(len(v) > 1 for v in by_frame.values())


def test_pings_and_clean_captures_key_every_row_by_its_frame(inputs, tmp_path):
    rows, report = _job(tmp_path, [inputs["real"], inputs["sim"]])
    assert report["messages_by_protocol_and_kind"].get("msmq/Ping", 0) > 0
    for r in rows:
        assert key_frame(r["message_key"]) == r["frame"], r
    pings = [r for r in rows if r["kind"] == "Ping"]
    assert pings and all(key_rank(r["message_key"]) == 0 for r in pings)


def test_pcf_parameters_join_mq_messages_on_message_key(impl, inputs, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "out"
    convert([str(inputs["real"]), str(inputs["sim"]), str(inputs["damaged"])], str(out),
            ConvertOptions(impl=impl, capture_impl=None if impl == "c" else "py"))
    m = "read_parquet('%s/mq_messages/**/*.parquet')" % out
    p = "read_parquet('%s/pcf_parameters/**/*.parquet')" % out
    con = duckdb.connect()
    assert con.sql("SELECT count(*) FROM %s" % p).fetchall()[0][0] > 0
    # every parameter finds its one message, a decoded PCF message
    orphans, ambiguous, not_pcf = con.sql(
        "SELECT count(*) FILTER (WHERE n IS NULL), count(*) FILTER (WHERE n > 1), "
        "count(*) FILTER (WHERE pcf_type IS NULL OR error IS NOT NULL) FROM %s q LEFT JOIN "
        "(SELECT message_key, any_value(pcf_type) AS pcf_type, any_value(error) AS error, count(*) AS n "
        " FROM %s GROUP BY message_key) USING (message_key)" % (p, m)).fetchall()[0]
    assert (orphans, ambiguous, not_pcf) == (0, 0, 0)
    # and each decoded PCF message has as many top-level parameters as its MQCFH ParameterCount
    wrong = con.sql(
        "SELECT m.message_key, m.pcf_parameter_count, count(q.message_key) AS top FROM %s m "
        "LEFT JOIN %s q ON q.message_key = m.message_key AND q.parent = -1 "
        "WHERE m.pcf_type IS NOT NULL AND m.error IS NULL "
        "GROUP BY m.message_key, m.pcf_parameter_count HAVING top != m.pcf_parameter_count" % (m, p)).fetchall()
    assert wrong == []
    # pandas finds the same pairs
    import pandas as pd

    msgs = read_table(str(out), "mq_messages", columns=["message_key", "pcf_type"]).to_pandas()
    params = read_table(str(out), "pcf_parameters", columns=["message_key"]).to_pandas()
    joined = params.merge(msgs, on="message_key", how="left", validate="many_to_one")
    assert len(joined) == len(params) and not pd.isna(joined["pcf_type"]).any()


def test_a_capture_index_that_does_not_fit_is_a_clear_error():
    data = REAL.read_bytes()
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions())
    conv.add_capture(data, name="last", index=KEY_MAX_CAPTURE)
    keys = tables.table("mq_messages").column("message_key").to_pylist()
    assert keys and all(k > 0 and key_capture(k) == KEY_MAX_CAPTURE for k in keys)
    with pytest.raises(KeyOverflow, match="capture index 16384 does not fit"):
        conv.add_capture(data, name="one too many", index=KEY_MAX_CAPTURE + 1)
    with pytest.raises(KeyOverflow, match="capture index -1"):
        key_base(-1)


def test_parts_that_do_not_fit_are_clear_errors():
    base = key_base(5)
    assert KEY_FRAME_SHIFT == 17 and KEY_MAX_FRAME == 2 ** 32 - 1   # tshark's frame.number: 32 bits
    assert make_key(base, KEY_MAX_FRAME, KEY_MAX_RANK) == (5 << 49) | (KEY_MAX_FRAME << 17) | KEY_MAX_RANK
    assert make_key(base, KEY_MAX_FRAME, KEY_MAX_RANK) < 2 ** 63
    with pytest.raises(KeyOverflow, match="frame number"):
        make_key(base, KEY_MAX_FRAME + 1, 0)
    with pytest.raises(KeyOverflow, match="rank 131072 of a row in frame 7"):
        make_key(base, 7, 1 << 17)
    with pytest.raises(KeyOverflow, match="frame number"):
        make_keys(base, [1, KEY_MAX_FRAME + 1], [0, 0])
    with pytest.raises(KeyOverflow, match="rank -1 of a row in frame 2"):
        make_keys(base, [1, 2], [0, -1])
    # more rows in one frame of one direction than ranks below the fallback range
    keys = MessageKeys(0)
    assert key_rank(keys.tcp(0, 0, 9, KEY_FALLBACK_RANK - 1)) == KEY_FALLBACK_RANK - 1
    with pytest.raises(KeyOverflow, match="more than 65536 rows start in frame 9"):
        keys.tcp(0, 0, 9, KEY_FALLBACK_RANK)
    with pytest.raises(KeyOverflow, match="more than 65536 rows start in frame 9"):
        MessageKeys(0).tcp_batch([0, 0], [1, 1], [9, 9], [0, KEY_FALLBACK_RANK])
    # the marks count them: the 65537th row located in one mark
    from mqcodec.capture.tcp import ConnKey
    from mqcodec.convert.converter import _Direction

    d = _Direction(ConnKey(0, "10.0.0.1", 40000, "10.0.0.2", 1414), 0)
    d.mark(0, 9, 900)
    mark = d.locate(5)
    assert [d.rank(mark) for _ in range(3)] == [0, 1, 2] and d.rank(mark, unit=True) == 0
    mark[4] = KEY_FALLBACK_RANK
    with pytest.raises(KeyOverflow, match="more than 65536 rows start in frame 9"):
        d.rank(mark)
    # fallback ranks: at most 32768 per direction
    keys = MessageKeys(0)
    for _ in range(1 << 15):
        keys.tcp(0, 1, None, None, opened=3)
    with pytest.raises(KeyOverflow, match="more than 32768 rows of one TCP direction"):
        keys.tcp(0, 1, None, None, opened=3)


def test_locate_tells_gap_bytes_from_captured_ones():
    from mqcodec.capture.tcp import ConnKey
    from mqcodec.convert.converter import _Direction

    d = _Direction(ConnKey(0, "10.0.0.1", 40000, "10.0.0.2", 1414), 0)
    d.mark(0, 4, 400)
    d.mark(100, 9, 900, False)   # a gap of bytes 100.. revealed by frame 9
    d.mark(150, 9, 900)
    assert d.locate(99)[:4] == [0, 4, 400, True]
    assert d.locate(120)[:4] == [100, 9, 900, False]
    assert d.locate(150)[:4] == [150, 9, 900, True]
    assert d.rank(d.locate(120)) is None   # no rank in a gap: the fallback rule keys the row
    assert d.rank(d.locate(99)) == 0 and d.rank(d.locate(10)) == 1 and d.rank(d.locate(160)) == 0


class _Open:
    """A framer holding a unit open from ``oldest_open``."""
    def __init__(self, oldest_open):
        self.oldest_open = oldest_open


@pytest.mark.parametrize("oldest", [None, 0, 250, 5000, 10 ** 9])
def test_locate_keeps_the_marks_of_open_units(oldest):
    """A direction forgets the marks before the row it locates once more than
    KEY_MARKS_KEPT come before it, but never the mark holding the framer's
    oldest open unit (its row comes later), and counts survive."""
    from mqcodec.capture.tcp import ConnKey
    from mqcodec.convert.converter import _Direction

    d = _Direction(ConnKey(0, "10.0.0.1", 40000, "10.0.0.2", 1414), 0)
    d.framer = _Open(oldest)
    for i in range(300):
        d.mark(i * 100, i + 1, i)
    assert d.rank(d.locate(250)) == 0
    assert d.locate(29_950)[1] == 300
    first = d.marks[0][0]
    if oldest is not None and oldest < 29_950:
        assert first == oldest // 100 * 100   # from the mark holding the open unit on
        assert d.locate(oldest)[1] == oldest // 100 + 1
        if oldest == 250:
            assert d.rank(d.locate(250)) == 1   # the count survived
    else:
        assert first == 29_800   # all but the one before the row located
    from mqcodec._ext.capture_core import MARKS_KEPT

    assert MARKS_KEPT == KEY_MARKS_KEPT   # the compiled core's copy of the rule
    assert marks_to_drop(KEY_MARKS_KEPT, 0) == 0
    assert marks_to_drop(KEY_MARKS_KEPT + 1, 10 ** 6) == KEY_MARKS_KEPT
    assert marks_to_drop(KEY_MARKS_KEPT + 10, 3) == 3
    assert marks_to_drop(KEY_MARKS_KEPT + 10, -1) == 0


def test_oldest_open_of_the_two_mq_framers_agree():
    """framing.MQStreamFramer.oldest_open and the compiled framer's (the
    capture core keeps marks by it): open units of interleaved
    conversations, then each closed."""
    from mqcodec.ibmmq.builders import build_tsh
    from mqcodec.ibmmq.framing import MQStreamFramer

    first = [build_tsh(0x86, 36 + 100, conversation_id=1000 + k, ctl_flags1=0x10) + bytes(100) for k in range(3)]
    last = [build_tsh(0x86, 36 + 10, conversation_id=1000 + k, ctl_flags1=0x20) + bytes(10) for k in range(3)]
    f = MQStreamFramer(500, units=True)
    assert f.oldest_open is None
    f.feed(first[0])
    assert f.oldest_open == 500
    f.feed(first[1] + first[2])
    assert f.oldest_open == 500
    f.feed(last[0])
    list(f)
    assert f.oldest_open == 500 + len(first[0])
    f.feed(last[1] + last[2])
    list(f)
    assert f.oldest_open is None


def test_message_keys_rules():
    keys = MessageKeys(2)
    # rows whose first byte was not captured: the connection's first frame,
    # ranks from KEY_FALLBACK_RANK, bit 15 the direction, counted per direction
    a = keys.tcp(0, 1, 40, None, opened=3)
    b = keys.tcp(0, 0, None, None, opened=3)
    c = keys.tcp(0, 0, 99, None, opened=3)
    assert (key_capture(a), key_frame(a), key_rank(a)) == (2, 3, KEY_FALLBACK_RANK | 1 << 15)
    assert (key_frame(b), key_rank(b)) == (3, KEY_FALLBACK_RANK)
    assert (key_frame(c), key_rank(c)) == (3, KEY_FALLBACK_RANK | 1)
    # no opened frame either: frame 0, counted per capture
    assert [(key_frame(k), key_rank(k)) for k in (keys.tcp(5, 0, None, None), keys.tcp(6, 1, None, None))] == \
        [(0, KEY_FALLBACK_RANK), (0, KEY_FALLBACK_RANK | 1)]
    # captured rows: their frame and the rank their mark gave
    assert (key_frame(keys.tcp(0, 0, 5, 2)), key_rank(keys.tcp(0, 0, 5, 2))) == (5, 2)
    # the batch form gives what one at a time gives, rows without a frame (-1) included
    one, many = MessageKeys(1), MessageKeys(1)
    stream = [0, 1, 0, 0, 1, 1, 0]
    direction = [0, 1, 0, 0, 1, 1, 1]
    frame = [4, 6, 4, -1, 6, -1, 9]
    rank = [0, 0, 1, -1, 1, -1, 0]
    import numpy as np

    expect = [one.tcp(s, d, f if f >= 0 else None, r if r >= 0 else None)
              for s, d, f, r in zip(stream, direction, frame, rank)]
    assert many.tcp_batch(np.array(stream), np.array(direction), np.array(frame), np.array(rank)).tolist() == expect
    assert len(set(expect)) == len(expect)
    # UDP: the datagram's frame
    assert key_frame(keys.udp(77)) == 77 and key_rank(keys.udp(77)) == 1 and key_rank(keys.udp(78)) == 0


def test_a_job_of_too_many_inputs_is_refused_before_writing(tmp_path):
    from mqcodec.cli import main

    paths = [str(tmp_path / ("missing-%d.pcap" % i)) for i in range(KEY_MAX_CAPTURE + 2)]
    with pytest.raises(KeyOverflow, match="16385 inputs: a job takes at most 16384 captures"):
        convert(paths, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert main(["pcap2parquet", "-o", str(tmp_path / "cli")] + paths) == 2
    assert not (tmp_path / "cli").exists()
