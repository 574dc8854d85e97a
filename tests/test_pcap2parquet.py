"""pcap -> Parquet, checked against tshark and against damage.

* tshark differential: every MQMD tshark dissects (real JMS capture and a
  simulator capture) is a row of mq_messages with equal MsgId, Format,
  PutApplName, MsgType, Encoding and CCSID; PCF headers and top-level
  parameter ids agree with tshark's (nested groups excepted: tshark mis-walks
  them, see docs/ibmmq-pcf.md).
* faults: the same capture with segments dropped, duplicated and reordered,
  or cut at arbitrary points, still converts; messages that do not span the
  damage decode identically to the clean run; damage is reported, not lost.
"""
import random
import subprocess

import pytest

from mqcodec import synth
from mqcodec.capture.writer import PcapWriter
from mqcodec.convert import ConvertOptions, convert
from mqcodec.convert.sinks import read_table

from conftest import CAPTURES

REAL = CAPTURES / "ibmmq_jms_client_1414.pcap"


def _convert(tmp_path, pcap, name="out", **opts):
    out = tmp_path / name
    report = convert([str(pcap)], str(out), ConvertOptions(**opts))
    rows = []
    for table, protocol in (("mq_messages", "mq"), ("msmq_packets", "msmq")):
        rows += [dict(r, protocol=protocol) for r in read_table(str(out), table).to_pylist()]
    rows.sort(key=lambda r: r["message_key"])
    return rows, read_table(str(out), "pcf_parameters"), report


def _tshark_mqmds(tshark, pcap):
    fields = ["frame.number", "tcp.stream", "mq.md.msgid", "mq.md.format", "mq.md.applname", "mq.md.msgtype",
              "mq.md.encoding", "mq.md.ccsid"]
    args = [tshark, "-r", str(pcap), "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E",
            "aggregator=;", "-Y", "mq.md.msgid"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        frame, stream, *vals = line.split("|")
        cols = [v.split(";") for v in vals]
        seen = set()
        for i in range(len(cols[0])):
            msgid, fmt, appl, mtype, enc, ccsid = (c[i] if i < len(c) else "" for c in cols)
            row = (int(frame), int(stream), bytes.fromhex(msgid), fmt.rstrip(), appl.rstrip(),
                   int(mtype), int(enc), int(ccsid))
            # when an MQ unit spans several TSH segments, tshark shows its MQMD twice in the
            # frame that completes it (first segment, then the reassembled unit): one message
            if row not in seen:
                seen.add(row)
                rows.append(row)
    return rows


def _ours(messages):
    return [(r["tcp_stream"], r["md_msg_id"], r["md_format"], r["md_put_appl_name"], r["md_msg_type"],
             r["md_encoding"], r["md_ccsid"]) for r in messages if r["protocol"] == "mq" and r.get("md_msg_id") is not None]


@pytest.mark.tshark
@pytest.mark.parametrize("source", ["real", "synth"])
def test_every_tshark_mqmd_is_a_row(tmp_path, tshark, source):
    if source == "real":
        pcap = REAL
    else:
        pcap = tmp_path / "s.pcap"
        synth.write_capture(str(pcap), seed=11, messages=30)
    theirs = _tshark_mqmds(tshark, pcap)
    messages, _, _ = _convert(tmp_path, pcap)
    ours = _ours(messages)
    assert len(theirs) >= (16 if source == "real" else 60)
    remaining = list(ours)
    for frame, stream, msgid, fmt, appl, mtype, enc, ccsid in theirs:
        key = (stream, msgid, fmt, appl, mtype, enc, ccsid)
        assert key in remaining, "tshark's MQMD in frame %d (%r) is not in mq_messages" % (frame, key)
        remaining.remove(key)
    # and the frame numbers: each tshark MQMD frame is the frame of one of our rows on that stream
    frames = {(r["tcp_stream"], r["frame"]) for r in messages if r["protocol"] == "mq"}
    hits = sum((stream, frame) in frames for frame, stream, *_ in theirs)
    assert hits >= 0.9 * len(theirs)


@pytest.mark.tshark
def test_pcf_headers_and_top_level_parameters_match_tshark(tmp_path, tshark):
    pcap = tmp_path / "s.pcap"
    synth.write_capture(str(pcap), seed=5, messages=25)
    out = subprocess.run([tshark, "-r", str(pcap), "-T", "fields", "-E", "separator=|", "-e", "tcp.stream",
                          "-e", "mqpcf.cfh.command", "-e", "mqpcf.cfh.ParmCount", "-e", "mqpcf.parm.id",
                          "-Y", "mqpcf.cfh.command"], capture_output=True, text=True, check=True).stdout
    theirs = []
    for line in out.splitlines():
        stream, cmd, count, ids = line.split("|")
        theirs.append((int(stream), int(cmd), int(count), [int(x) for x in ids.split(",") if x]))
    assert theirs, "tshark dissected no PCF in the simulator capture"
    messages, params, _ = _convert(tmp_path, pcap)
    by_key = {}
    for p in params.to_pylist():
        by_key.setdefault(p["message_key"], []).append(p)
    ours = []
    for r in messages:
        if r.get("pcf_command") is not None and r["error"] is None:
            ps = by_key.get(r["message_key"], [])
            ours.append((r["tcp_stream"], r["pcf_command"], r["pcf_parameter_count"], ps))
    for stream, cmd, count, ids in theirs:
        match = [o for o in ours if o[:3] == (stream, cmd, count)]
        assert match, "no PCF message with command %d/%d parameters on stream %d" % (cmd, count, stream)
        # tshark's first parameter is the first top-level parameter; the first group's direct
        # children follow it in both walks (tshark goes wrong only after a nested group)
        ours_ids = [p["parameter"] for p in match[0][3]]
        assert ours_ids[0] == ids[0]
        first_group = [p["parameter"] for p in match[0][3] if p["parent"] == 0]
        assert ids[1:1 + len(first_group)] == first_group


def test_summary_and_columns(tmp_path):
    pcap = tmp_path / "s.pcap"
    synth.write_capture(str(pcap), seed=2, messages=20)
    messages, params, report = _convert(tmp_path, pcap)
    s = report["summary"]
    assert s["messages"] == len(messages) and s["frames"] > 0
    kinds = report["messages_by_protocol_and_kind"]
    assert kinds["mq/MQPUT"] >= 20 and kinds["msmq/UserMessage"] >= 1 and kinds["msmq/Ping"] == 6
    keys = [r["message_key"] for r in messages]
    assert len(set(keys)) == len(keys)
    assert set(params.column("message_key").to_pylist()) <= set(keys)
    ums = [r for r in messages if r["kind"] == "UserMessage"]
    assert all(r["message_id"] and "\\" in r["message_id"] for r in ums)
    assert all(r["destination"].startswith("DIRECT=") for r in ums)
    assert all(r["ts"] is not None and r["frame"] >= 1 for r in messages)
    # a put of the application carries the simulator's values
    put = next(r for r in messages if r["kind"] == "MQPUT" and r["md_put_appl_name"] == "payments-app")
    assert put["md_format"] in ("MQSTR", "MQHRF2") and put["dst_port"] == 1414 and put["error"] is None


def _sim_packets(seed=4, messages=30):
    return synth.generate(seed, messages)


def _write(path, packets):
    with open(path, "wb") as f:
        w = PcapWriter(f, nanosecond=True)
        for p in packets:
            w.write(p.ts_ns, p.frame)


def _identity(r):
    return (r["protocol"], r["kind"], r.get("md_msg_id"), r.get("md_put_appl_name"), r.get("message_id"), r["length"])


def test_faults_drop_duplicate_reorder(tmp_path):
    packets = _sim_packets()
    clean = tmp_path / "clean.pcap"
    _write(clean, packets)
    clean_rows, _, _ = _convert(tmp_path, clean, "clean")
    rnd = random.Random(9)
    data = [i for i, p in enumerate(packets) if p.length > 0]
    dropped = set(rnd.sample(data, 4))
    damaged = []
    for i, p in enumerate(packets):
        if i in dropped:
            continue
        damaged.append(p)
        if rnd.random() < 0.05:
            damaged.append(p)                       # duplicate
    for _ in range(10):                              # reorder neighbours
        j = rnd.randrange(len(damaged) - 1)
        damaged[j], damaged[j + 1] = damaged[j + 1], damaged[j]
    bad = tmp_path / "bad.pcap"
    _write(bad, damaged)
    rows, _, report = _convert(tmp_path, bad, "bad")
    assert report["summary"]["gaps"] >= 1
    good = {_identity(r) for r in rows if r["error"] is None}
    clean_ids = [_identity(r) for r in clean_rows if r["error"] is None]
    # every message decoded in the damaged run was also in the clean run (nothing invented) ...
    assert good <= set(clean_ids)
    # ... and only messages near the 4 lost segments are missing or errors
    lost = [i for i in clean_ids if i not in good]
    assert len(lost) <= 4 * 3, lost
    assert any(r["error"] for r in rows) or report["summary"].get("resynchronisations", 0) >= 1


@pytest.mark.parametrize("cut", [0.13, 0.5, 0.77, 0.999])
def test_truncated_capture_converts(tmp_path, cut):
    packets = _sim_packets(seed=6, messages=15)
    pcap = tmp_path / "t.pcap"
    _write(pcap, packets)
    data = pcap.read_bytes()
    short = tmp_path / "short.pcap"
    short.write_bytes(data[: int(len(data) * cut)])
    rows, _, report = _convert(tmp_path, short, "short")
    clean_rows, _, _ = _convert(tmp_path, pcap, "full")
    clean = {_identity(r) for r in clean_rows if r["error"] is None}
    assert {_identity(r) for r in rows if r["error"] is None} <= clean
    assert report["summary"]["frames"] <= len(packets)


def test_options_as_text_and_strings():
    """One options object for every engine: the Spark engine hands it to its
    tasks as text (``to_text``/``from_text``); the data source's options are
    strings (``from_strings``)."""
    opts = ConvertOptions(mq_ports=(1414, 1415), msmq_ports=(), detect_by_content=False, raw=True,
                          chunk_messages=7, chunk_bytes=4096, capture_impl="py", buffer_budget=1 << 20,
                          max_connections=9, max_closed=0, max_reassembly_bytes=100, max_reassembly_segments=3,
                          threads=None, tables=("mq_calls", "mq_messages"), compression="snappy")
    assert ConvertOptions.from_text(opts.to_text()) == opts
    assert ConvertOptions.from_text(ConvertOptions().to_text()) == ConvertOptions()
    got = ConvertOptions.from_strings({"mq_ports": "1414, 1415", "msmq_ports": "", "detect_by_content": "False",
                                       "raw": "true", "chunk_messages": "7", "chunk_bytes": "4096",
                                       "capture_impl": "py", "buffer_budget": "1048576", "max_connections": "9",
                                       "max_closed": "0", "max_reassembly_bytes": "100",
                                       "max_reassembly_segments": "3",
                                       "threads": "none", "tables": "mq_calls, mq_messages",
                                       "compression": "SNAPPY"})
    assert got == opts
    # a compression by its name in any case; "none" (Spark's and pyarrow's name) is uncompressed
    assert ConvertOptions.from_strings({"compression": "none"}).compression == "uncompressed"
    with pytest.raises(ValueError, match="compression: 'lz4' is not one of zstd, snappy, uncompressed"):
        ConvertOptions.from_strings({"compression": "lz4"})
    # a base with some fields replaced, values as themselves
    assert ConvertOptions.from_strings({"chunk_messages": 8}, opts) == ConvertOptions(
        **{**opts.__dict__, "chunk_messages": 8})
    with pytest.raises(ValueError, match="unknown conversion option 'chunk'"):
        ConvertOptions.from_strings({"chunk": "7"})
    with pytest.raises(ValueError, match="raw: 'yes' is not true or false"):
        ConvertOptions.from_strings({"raw": "yes"})
    with pytest.raises(ValueError, match="invalid literal for int"):
        ConvertOptions.from_strings({"mq_ports": "14a"})
    # limits out of range: one line naming the option, whichever way they come
    with pytest.raises(ValueError, match="max_closed must be an integer >= 0, not -1"):
        ConvertOptions.from_strings({"max_closed": "-1"})
    with pytest.raises(ValueError, match="max_reassembly_segments must be an integer >= 1, not 0"):
        ConvertOptions(max_reassembly_segments=0)
    with pytest.raises(ValueError, match="chunk_bytes must be an integer >= 1, not None"):
        ConvertOptions.from_strings({"chunk_bytes": "none"})
    # the tables: known names, at least one, in TABLES' order whatever the order given
    assert ConvertOptions(tables=("mq_calls", "mq_messages")).tables == ("mq_messages", "mq_calls")
    with pytest.raises(ValueError, match="no table 'calls' .the tables are mq_messages, msmq_packets"):
        ConvertOptions(tables=("calls",))
    with pytest.raises(ValueError, match="no table chosen"):
        ConvertOptions.from_strings({"tables": ""})


@pytest.mark.parametrize("impl", ["c", "py"])
def test_chosen_tables_are_those_of_a_full_run(tmp_path, impl):
    """``tables``: only the tables chosen are written, each with the rows of a
    run that makes them all (the other tables are not decoded at all: MQ
    units are neither read nor paired when neither mq_calls nor mq_messages
    is chosen, messages are decoded only for their PCF bodies when
    pcf_parameters is chosen without mq_messages).  Small chunks, so that
    each table is written in several row groups."""
    if impl == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    from mqcodec.convert.tables import TABLES

    sim = tmp_path / "sim.pcap"
    synth.write_capture(str(sim), seed=5, messages=120)
    base = dict(capture_impl=impl, chunk_messages=50)
    full = convert([str(sim)], str(tmp_path / "all"), ConvertOptions(**base))
    want = {t: read_table(str(tmp_path / "all"), t) for t in TABLES}
    assert all(want[t].num_rows > 0 for t in TABLES)
    for n, chosen in enumerate([(t,) for t in TABLES] + [("pcf_parameters", "mq_calls"),
                                                         ("msmq_packets", "mq_messages")]):
        out = tmp_path / ("some%d" % n)
        report = convert([str(sim)], str(out), ConvertOptions(tables=chosen, **base))
        assert sorted(p.name for p in out.iterdir()) == sorted(chosen)
        for t in chosen:
            got = read_table(str(out), t)
            assert got.schema == want[t].schema and got.to_pylist() == want[t].to_pylist(), (chosen, t)
        assert report["summary"]["messages"] == full["summary"]["messages"]
        assert report["summary"]["frames"] == full["summary"]["frames"]


def test_the_compiled_driver_forgets_the_addresses_of_past_connections(tmp_path, monkeypatch):
    """The compiled driver looks up each row's connection addresses in the core
    and keeps them between takes, but not for every connection of the capture
    (about 360 bytes each: a task of a million connections would hold them
    all): past ``CONNECTIONS_CACHED`` they are forgotten and looked up again,
    and every row still carries its own connection's addresses."""
    pytest.importorskip("mqcodec._ext.capture_core")
    import pyarrow as pa

    from mqcodec.capture.writer import TcpConversation, write_pcap
    from mqcodec.convert import Converter, compiled
    from mqcodec.ibmmq import builders
    from mqcodec.ibmmq.headers import MQMD

    conns = 600
    frames = []
    for k in range(conns):
        c = TcpConversation(client=("10.1.%d.%d" % (k >> 8, k & 255), 20000 + k), start_ns=10 ** 18 + k * 10 ** 6)
        c.handshake()
        c.send(0, builders.encode_put(MQMD(Format="MQSTR").encode() + b"message %d" % k))
        c.close()
        frames += [(p.ts_ns, p.frame) for p in c.packets]
    path = tmp_path / "many.pcap"
    with open(path, "wb") as f:
        write_pcap(f, sorted(frames), 1)
    monkeypatch.setattr(compiled, "CHUNK", 8 << 10)   # many takes
    monkeypatch.setattr(compiled, "TAKE_BYTES", 8 << 10)
    take, cached = compiled._take, []

    def watched(conv, core, mod, side, name, addresses, *args, **kw):
        n = take(conv, core, mod, side, name, addresses, *args, **kw)
        cached.append(len(addresses))
        return n

    monkeypatch.setattr(compiled, "_take", watched)

    def messages(bound):
        monkeypatch.setattr(compiled, "CONNECTIONS_CACHED", bound)
        del cached[:]
        got: list = []
        conv = Converter(lambda name, t: got.append(t) if name == "mq_messages" else None,
                         ConvertOptions(impl="c", threads=1))
        conv.add_capture(str(path))
        conv.drain()
        return pa.concat_tables(got).sort_by("frame")

    rows = messages(16)
    assert len(cached) > 20 and max(cached) < conns // 4
    assert rows.num_rows == conns
    ports = rows.column("src_port").to_pylist()
    assert ports == [20000 + k for k in range(conns)]
    assert rows.column("src_ip").to_pylist() == ["10.1.%d.%d" % (k >> 8, k & 255) for k in range(conns)]
    assert rows.column("body_text").to_pylist() == ["message %d" % k for k in range(conns)]
    everything = messages(10 ** 9)
    assert max(cached) == conns
    assert rows.equals(everything)


def test_a_chunk_full_of_pcf_is_decoded_a_megabyte_of_bodies_at_a_time(tmp_path, impl, monkeypatch):
    """A chunk of PCF messages (the statistics vector: 375 parameters in a body of
    8,960 bytes, 0.04 rows a byte) reaches the sink a megabyte of bodies at a time,
    so that the rows of a chunk full of them are not made all at once; the rows
    are those of one decoding of every body, and each message has its 375."""
    from collections import Counter

    import pyarrow as pa

    from mqcodec.batch import decode_pcf_batch
    from mqcodec.capture.writer import ethernet, ipv4, tcp
    from mqcodec.convert import Converter, converter
    from mqcodec.ibmmq import builders
    from mqcodec.ibmmq.headers import MQMD

    from conftest import VECTORS

    body = (VECTORS / "ibmmq" / "statistics_q.dat").read_bytes()
    unit = builders.encode_put(MQMD(Format="MQADMIN", Encoding=546, CodedCharSetId=819).encode() + body)
    path = tmp_path / "pcf.pcap"
    messages = 300   # 2.7 MB of bodies, a chunk
    with open(path, "wb") as f:
        w = PcapWriter(f, 1)
        for i in range(messages):
            segment = tcp("10.0.0.1", "10.0.0.2", 40000, 1414, 1000 + i * len(unit), 1, 0x18, unit)
            w.write(1_700_000_000 * 10 ** 9 + i, ethernet(ipv4("10.0.0.1", "10.0.0.2", 6, segment)))
    per_body = decode_pcf_batch([body], impl=impl).parameters.num_rows
    assert per_body == 375

    def pcf_tables(gather_bytes):
        monkeypatch.setattr(converter, "_GATHER_BYTES", gather_bytes)
        got: list = []
        conv = Converter(lambda name, t: got.append(t) if name == "pcf_parameters" else None,
                         ConvertOptions(impl=impl, threads=1))
        conv.add_capture(str(path))
        conv.drain()
        return got

    pieces = pcf_tables(1 << 20)
    bodies_per_piece = (1 << 20) // len(body)
    assert len(pieces) == -(-messages // bodies_per_piece) > 1
    assert all(t.num_rows <= bodies_per_piece * per_body for t in pieces)
    whole = pcf_tables(1 << 40)
    assert len(whole) == 1
    plain = pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in whole[0].schema])
    rows = pa.concat_tables(pieces).cast(plain)
    assert rows.num_rows == messages * per_body
    assert rows.equals(whole[0].cast(plain))
    assert sorted(Counter(rows.column("message_key").to_pylist()).values()) == [per_body] * messages
