"""A capture converted a group of connections at a time gives the whole
capture's rows (mqcodec.capture.connections, Converter.add_frames): what the
cluster engine relies on when it shuffles one capture's frames by connection.

Every capture is converted whole by the pure engine (the reference) and again
group by group -- each group's frames alone, in capture order, through
``Converter.add_frames``, in an order unlike the capture's (largest group
first) -- with ``tcp_stream`` turned from the opening frame into the index
by :func:`stream_indices`.  Rows of every table are compared whole, with
``message_key`` and ``call_key``: both derive from the input only (capture,
frame, rank in the frame; docs/tables.md "Keys").  Captures: the real IBM MQ capture, the simulator's
clean and damaged (dropped, duplicated, reordered segments; IPv4 fragments,
some swapped; a cut file), pcapng.
"""
from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from mqcodec.capture import open_capture
from mqcodec.capture.connections import group_key, keys_of, split_by_connection, stream_indices
from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.tables import MQ_CALLS, MQ_MESSAGES, MSMQ_PACKETS
from mqcodec.convert.sinks import TableCollector

from mqcodec.capture.writer import PcapngWriter

from capture_inputs import fragmented, reordered
from capture_inputs import pcap_bytes as _pcap
from capture_inputs import simulator_packets as _packets

REAL = Path(__file__).resolve().parents[2] / "shared" / "captures" / "ibmmq_jms_client_1414.pcap"
IDENTITY = ("capture", "tcp_stream", "stream_offset", "frame", "kind")
#: summary counters of the whole capture that a group's conversion counts alike
SUMMED = ("frames", "frames skipped", "frames malformed", "messages", "errors", "gaps", "gap bytes", "calls",
          "framing errors", "resynchronisations", "bytes in streams of no known protocol")


def _rows(tables: TableCollector, renumber=None):
    if renumber is not None:
        for name in (MQ_MESSAGES, MSMQ_PACKETS, MQ_CALLS):
            parts = []
            for t in tables.parts.get(name, []):
                i = t.schema.get_field_index("tcp_stream")
                col = t.column(i).combine_chunks()
                valid = col.is_valid().to_numpy(zero_copy_only=False)
                values = col.fill_null(0).to_numpy()
                fixed = values.copy()
                fixed[valid] = renumber(values[valid])
                parts.append(t.set_column(i, t.schema.field(i), pa.array(fixed, col.type, mask=~valid)))
            tables.parts[name] = parts
    messages = tables.rows()
    by_key = {r["message_key"]: tuple(r[k] for k in IDENTITY) for r in messages}
    assert len(by_key) == len(messages), "message_key is not unique"
    rows = sorted(repr(sorted(r.items())) for r in messages)
    params = sorted(repr((by_key[p["message_key"]], sorted(p.items())))
                    for p in tables.table("pcf_parameters").to_pylist())
    calls = tables.table(MQ_CALLS).to_pylist()
    assert len({c["call_key"] for c in calls}) == len(calls), "call_key is not unique"
    return rows, params, sorted(repr(sorted(c.items())) for c in calls)


_FRAME_COLUMNS = pa.schema([("number", pa.int64()), ("ts_ns", pa.int64()), ("linktype", pa.int32()),
                            ("caplen", pa.int64()), ("origlen", pa.int64()), ("data", pa.binary()),
                            ("interface_id", pa.int32())])


def _batches(frames: list, size: int = 7) -> list:
    """Frames as Arrow record batches of ``size`` rows (the cluster engine's form)."""
    return [pa.RecordBatch.from_pylist([f._asdict() for f in frames[i:i + size]], schema=_FRAME_COLUMNS)
            for i in range(0, len(frames), size)]


def _same_by_connection(data: bytes, impl: str, *, as_batches: bool = False, together: bool = False) -> dict:
    whole = TableCollector()
    ref = Converter(whole, ConvertOptions(capture_impl="py"))
    ref.add_capture(data, name="c")
    groups = split_by_connection(open_capture(io.BytesIO(data)))
    assert sum(len(g) for g in groups) == ref.report()["summary"]["frames"]
    split = TableCollector()
    conv = Converter(split, ConvertOptions(capture_impl=impl))
    opened: list = []
    ordered = sorted(groups, key=len, reverse=True)
    if together:   # one call: the groups one after the other, frame numbers going back between them
        opened += conv.add_frames([f for g in ordered for f in g], "c", index=0)
    for g in ordered if not together else ():
        opened += conv.add_frames(_batches(g) if as_batches else g, "c", index=0)
    expected, got = _rows(whole), _rows(split, stream_indices(opened))
    for part, what in zip(range(3), ("messages", "PCF parameters", "mq_calls rows")):
        assert len(got[part]) == len(expected[part]), what
        assert got[part] == expected[part], what
    want, have = ref.report(), conv.report()
    for k in SUMMED:
        assert have["summary"].get(k, 0) == want["summary"].get(k, 0), k
    assert have["calls_by_type"] == want["calls_by_type"]
    assert have["failed_calls_by_reason"] == want["failed_calls_by_reason"]
    tcp = Counter()
    for r in have["captures"]:
        tcp.update({k: v for k, v in r["stats"].items() if isinstance(v, int)})
    assert tcp["frames"] == want["captures"][0]["stats"]["frames"]
    engines = Counter(r.get("engine", "pure") for r in have["captures"])
    if impl == "py":
        assert set(engines) == {"pure"}
    return {"groups": len(groups), "summary": want["summary"], "engines": engines}


def _compiled(out: dict, impl: str) -> None:
    """With the compiled implementation, the core converted every group."""
    if impl == "c":
        assert set(out["engines"]) == {"compiled"}, out["engines"]


def test_real_capture(impl):
    out = _same_by_connection(REAL.read_bytes(), impl)
    _compiled(out, impl)
    assert out["groups"] > 1 and out["summary"]["messages"] > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_simulator_captures(seed, impl):
    out = _same_by_connection(_pcap(_packets(seed, 40)), impl, as_batches=seed == 2)
    _compiled(out, impl)
    assert out["groups"] > 3 and out["summary"]["calls"] > 100


@pytest.mark.parametrize("together", [False, True])
def test_frame_numbers_in_windows(monkeypatch, together, impl):
    """The spool's frame numbers stay in a temporary file (past 64 bytes here) and
    reach the core a window per piece of the spooled pcap (pieces of 512 bytes
    here: many windows, records cut between pieces); the rows are still the
    whole capture's."""
    from mqcodec.convert import compiled, spool

    monkeypatch.setattr(compiled, "CHUNK", 512)
    monkeypatch.setattr(spool, "NUMBERS_MEMORY", 64)
    windows: list = []
    window = spool.FrameNumbers.window
    monkeypatch.setattr(spool.FrameNumbers, "window", lambda self, a, b: windows.append((a, b)) or window(self, a, b))
    out = _same_by_connection(_pcap(_packets(1, 30)), impl, together=together)
    _compiled(out, impl)
    if impl == "c":
        # a window reaches at most twice the records that the bytes not walked (a record
        # cut short: the simulator's frames are under 2 KiB) and the next 512 can complete
        assert len(windows) > 5 and all(0 < b - a <= 2 * ((2048 + 512) // 16 + 1) for a, b in windows)
        assert sum(1 for a, b in windows if a) > 3


def test_frame_numbers_file():
    from mqcodec.convert import spool

    numbers = spool.FrameNumbers()
    values = [(i * 7919) % 100_003 + 1 for i in range(300_000)]   # 2.4 MB: past NUMBERS_MEMORY
    for i in range(0, len(values), 4096):
        numbers.extend(np.asarray(values[i:i + 4096], np.int64))
    assert len(numbers) == len(values) and list(numbers) == values
    assert numbers.window(299_990, 400_000).tolist() == values[299_990:]
    assert numbers.window(5, 9).tolist() == values[5:9] and len(numbers.window(400_000, 400_010)) == 0
    numbers.close()


def test_pcapng(impl):
    _compiled(_same_by_connection(_pcap(_packets(6, 20), ng=True), impl), impl)


def test_frames_a_pcap_cannot_hold_as_they_are(impl):
    """A group whose frames change link type or have times before 1970 (a
    pcapng with three interfaces): the compiled add_frames spools the frames
    before the first such frame and converts the group with the pure
    pipeline, with the same rows; given as Frame objects and as Arrow batches."""
    f = io.BytesIO()
    w = PcapngWriter(f)
    eth = w.add_interface(1)
    raw = w.add_interface(101)                    # LINKTYPE_RAW: the IP packet alone
    early = w.add_interface(1, tsoffset=-(1 << 32))   # times before 1970
    for i, (ts, data) in enumerate(_packets(6, 20)):
        if i % 11 == 5:
            w.write(raw, ts, data[14:])
        elif i % 13 == 7:
            w.write(early, ts, data)
        else:
            w.write(eth, ts, data)
    for as_batches in (False, True):
        out = _same_by_connection(f.getvalue(), impl, as_batches=as_batches)
        if impl == "c":   # some groups whole through the core, some not
            assert out["engines"]["compiled"] and out["engines"]["pure"], out["engines"]


@pytest.mark.parametrize("seed", range(3))
def test_dropped_duplicated_reordered_segments(seed, impl):
    data = _pcap(reordered(_packets(4, 30), seed))
    out = _same_by_connection(data, impl)
    _compiled(out, impl)
    # the drops reached the framers: gaps, and resynchronisation after them
    assert out["summary"]["gaps"] > 0 and out["summary"]["resynchronisations"] > 0


def test_cut_file(impl):
    data = _pcap(_packets(6, 15))
    _same_by_connection(data[:len(data) * 2 // 3], impl)


@pytest.mark.parametrize("mtu", [68, 300])
def test_ipv4_fragments_keep_their_address_pair_together(mtu, impl):
    out = fragmented(_packets(10, 25), mtu, mtu)
    data = _pcap(out)
    frames = list(open_capture(io.BytesIO(data)))
    keys = [keys_of(f) for f in frames]
    pairs = {pair for _, pair, frag in keys if frag}
    assert pairs
    # every frame between addresses that exchanged fragments is grouped by the pair
    assert all(group_key(c, p, pairs).startswith(b"p") for c, p, _ in keys if p in pairs)
    _same_by_connection(data, impl)


@pytest.mark.parametrize("which", ["real", "reordered", "fragments", "cut"])
def test_groups_one_after_another_in_one_call(which, impl):
    """The cluster engine converts a task's groups in one call, one group
    after another (frame numbers go back where a group ends): the same rows."""
    data = {"real": lambda: REAL.read_bytes(),
            "reordered": lambda: _pcap(reordered(_packets(4, 30), 1)),
            "fragments": lambda: _pcap(fragmented(_packets(10, 25), 68, 68)),
            "cut": lambda: _pcap(_packets(6, 15))[:-5000]}[which]()
    out = _same_by_connection(data, impl, together=True)
    assert out["groups"] > 1
    _compiled(out, impl)


def test_stream_indices_rank_the_opening_frames():
    index = stream_indices([40, 7, 19, 3])
    assert index([3, 7, 19, 40, 19]).tolist() == [0, 1, 2, 3, 2]
    with pytest.raises(ValueError, match="name no opening frame"):
        index([8])


def _keyed_captures():
    yield "real", REAL.read_bytes()
    yield "simulator", _pcap(_packets(2, 40))
    yield "reordered", _pcap(reordered(_packets(4, 30), 1))
    yield "fragments", _pcap(fragmented(_packets(10, 25), 68, 68))
    yield "pcapng", _pcap(_packets(6, 20), ng=True)
    for target in ("capture", "capture_core"):   # the fuzz corpora of captures
        for p in sorted((Path(__file__).resolve().parent / "fuzz" / "corpus" / target).iterdir()):
            yield p.name, p.read_bytes()


def test_compiled_frame_keys_are_keys_of():
    """The cluster engine keys frames with the compiled core where it takes
    them as TCP segments (``frame_keys``), with ``keys_of`` for the rest: the
    same keys, on clean, damaged and fuzzed captures."""
    core = pytest.importorskip("mqcodec._ext.capture_core")
    taken = 0
    for name, data in _keyed_captures():
        try:
            frames = []
            for f in open_capture(io.BytesIO(data)):
                frames.append(f)
        except Exception:   # a damaged file: the frames before the damage
            pass
        keys = core.frame_keys([f.data for f in frames], [f.linktype for f in frames],
                               [f.caplen for f in frames], [f.origlen for f in frames])
        for f, k in zip(frames, keys):
            if k is not None:
                taken += 1
                assert k == keys_of(f), (name, f.number)
    assert taken > 1000
