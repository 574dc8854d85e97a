"""Resource bounds of ``mqcodec pcap2parquet``: peak RSS and wall time of the
whole job in a child process, for captures of growing size and for
adversarial captures (docs/ROBUSTNESS.md has the figures).

Never run in CI (large temporary files, minutes of CPU).  Either

    .venv/bin/python -m pytest benchmarks/bench_resources.py --benchmark-only -s

(sizes from MQCODEC_BENCH_RESOURCE_MB, default "20,100,500"), or, for a table:

    .venv/bin/python benchmarks/bench_resources.py [growth|adversarial|all] [--sizes 20,100,500] [--args "..."]

(``--args``: more pcap2parquet arguments, e.g. ``--args "--row-groups-per-file 0"``)

Peak RSS is ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` measured by a
small wrapper process around ``python -m mqcodec pcap2parquet`` (so each
figure is that one conversion's peak, not the maximum over earlier runs).
Captures are written to a temporary folder and deleted afterwards.

Capture builders (all streaming, constant memory):

* ``growth``: the simulator's capture (``mqcodec.synth``, 2,000 application
  messages, ~4.6 MB) tiled: copy k has its IPv4 addresses' second octet set
  to k (distinct connections) and its timestamps shifted, until the size;
* ``msmq-4mib``: C interleaved TCP connections to port 1801 whose every
  segment starts with an MSMQ BaseHeader claiming PacketSize 0x00400000 and
  carries 1,444 bytes;
* ``mq-max-tsh``: TCP connections to port 1414 whose every segment starts
  with a TSHM claiming MQSegmLen = the framer's ``max_segment_length``;
* ``tiny-garbage``: 1,000,000 frames of 14..54 random bytes behind the IPv4
  or a random ethertype.

Two more modes of ``main`` (never under pytest):

* ``budget [--budget-mb 600] [--conns 1024]``: the global byte budget
  (``mqcodec.capture.budget``) on ``msmq-4mib`` with many connections: peak
  RSS of the reference loop ``budget.drive`` without and with the budget;
* ``big-garbage [--big-mb 2100] [--tmp DIR] [--compiled]``: ``write_big_garbage``, a
  capture of mostly garbage with the simulator's traffic mixed in, converted
  with the pure engine (``--compiled``: the default engine) under ``nice -n 10 /usr/bin/time -v`` (do not nice
  the whole script again), then compared with the clean traffic converted
  alone (``run_big_garbage``).

TCP/IP checksums of the adversarial frames are left 0: mqcodec, like
tshark's defaults, does not verify them.
"""
from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
MB = 1 << 20

_WRAPPER = r"""
import resource, subprocess, sys, time, json
t = time.monotonic()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall": wall, "maxrss_kib": ru.ru_maxrss, "cpu": ru.ru_utime + ru.ru_stime,
                  "stdout": p.stdout.decode(errors="replace")[-4000:], "stderr": p.stderr.decode(errors="replace")[-2000:]}))
"""


def measure(pcap: str, outdir: str, *extra: str) -> dict:
    """Run ``python -m mqcodec pcap2parquet`` in a child and return its wall time,
    CPU time, peak RSS (MiB) and summary."""
    import json

    cmd = [PY, "-m", "mqcodec", "pcap2parquet", pcap, "-o", outdir, *extra]
    out = subprocess.run([PY, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True).stdout
    res = json.loads(out)
    res["peak_rss_mib"] = res["maxrss_kib"] / 1024
    try:
        res["summary"] = json.loads(res["stdout"])["summary"]
    except ValueError:
        res["summary"] = None
    res["size_mib"] = os.path.getsize(pcap) / MB
    res["command"] = " ".join(["python", "-m", "mqcodec", "pcap2parquet", os.path.basename(pcap), "-o", "OUT", *extra])
    return res


# --------------------------------------------------------------------------- writers
def _pcap_header(f):
    f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))


def _rec(f, ts_ns, frame):
    f.write(struct.pack("<IIII", ts_ns // 10 ** 9, ts_ns % 10 ** 9, len(frame), len(frame)) + frame)


def _ip(s: str) -> bytes:
    return bytes(int(x) for x in s.split("."))


def _tcp_frame(src, dst, sport, dport, seq, ack, flags, payload=b""):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, _ip(src), _ip(dst))
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + tcp + payload


def write_growth(path: str, size_mb: float, messages: int = 2000) -> int:
    from mqcodec import synth

    packets = synth.generate(1, messages)
    span = packets[-1].ts_ns - packets[0].ts_ns + 10 ** 9
    target = size_mb * MB
    frames = 0
    with open(path, "wb") as f:
        _pcap_header(f)
        k = 0
        while f.tell() < target:
            octet = 1 + k % 250
            shift = k * span
            for p in packets:
                fr = bytearray(p.frame)
                if fr[12:14] == b"\x08\x00":
                    fr[27] = octet
                    fr[31] = octet
                _rec(f, p.ts_ns + shift, bytes(fr))
                frames += 1
            k += 1
            if k % 250 == 0:   # new ports too once the octets are used up
                packets = synth.generate(1 + k // 250, messages)
    return frames


def _interleaved(path, size_mb, conns, port, first, body, server="10.8.0.1"):
    """``conns`` TCP connections (handshake, then segments ``first(i) + body``
    round-robin until the size, no FIN: the capture ends mid-unit)."""
    target = size_mb * MB
    ts = 1_700_000_000 * 10 ** 9
    seqs = []
    frames = 0
    with open(path, "wb") as f:
        _pcap_header(f)
        for c in range(conns):
            cli = "10.7.%d.%d" % (c // 250, 1 + c % 250)
            cport = 20000 + c
            isn = 1000 + c * 7
            _rec(f, ts, _tcp_frame(cli, server, cport, port, isn, 0, 0x02))
            _rec(f, ts + 1, _tcp_frame(server, cli, port, cport, 9000, isn + 1, 0x12))
            _rec(f, ts + 2, _tcp_frame(cli, server, cport, port, isn + 1, 9001, 0x10))
            seqs.append([cli, cport, isn + 1])
            frames += 3
            ts += 1000
        i = 0
        while f.tell() < target:
            cli, cport, seq = seqs[i % conns]
            payload = first(i) + body
            _rec(f, ts, _tcp_frame(cli, server, cport, port, seq, 9001, 0x18, payload))
            seqs[i % conns][2] = seq + len(payload)
            ts += 1000
            i += 1
            frames += 1
    return frames


def write_msmq_4mib(path: str, size_mb: float, conns: int = 16) -> int:
    # [MS-MQMQ] 2.2.19.1 BaseHeader: VersionNumber 0x10, Reserved, Flags, Signature "LIOR",
    # PacketSize (little-endian) = 0x00400000, TimeToReachQueue
    hdr = struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00400000, 0xFFFFFFFF)
    return _interleaved(path, size_mb, conns, 1801, lambda i: hdr, bytes(1444))


def write_mq_max_tsh(path: str, size_mb: float, conns: int = 1) -> int:
    from mqcodec.ibmmq import builders, framing

    # a real TSHM (an MQPUT's first segment header), MQSegmLen (big-endian, offset 4)
    # patched to the framer's maximum
    seg = bytearray(builders.encode_segments("MQPUT", bytes(64))[:36])
    assert seg[:4] == b"TSHM"
    struct.pack_into("!I", seg, 4, framing.DEFAULT_MAX_SEGMENT_LENGTH)
    return _interleaved(path, size_mb, conns, 1414, lambda i: bytes(seg), bytes(1424))


def write_pcf_statistics(path: str, size_mb: float, conns: int = 4) -> int:
    """IBM MQ MQPUTs of PCF statistics messages (the shared statistics_q.dat body:
    375 parameters in 8,960 bytes), one unit a segment: chunks full of PCF."""
    from mqcodec.ibmmq import builders
    from mqcodec.ibmmq.headers import MQMD

    from conftest import SHARED

    with open(os.path.join(SHARED, "vectors", "ibmmq", "statistics_q.dat"), "rb") as f:
        body = f.read()
    unit = builders.encode_put(MQMD(Format="MQADMIN", Encoding=546, CodedCharSetId=819).encode() + body)
    return _interleaved(path, size_mb, conns, 1414, lambda i: b"", unit)


def write_tiny_garbage(path: str, n: int = 1_000_000, seed: int = 1) -> int:
    rnd = random.Random(seed)
    rb = rnd.randbytes
    ts = 1_700_000_000 * 10 ** 9
    with open(path, "wb") as f:
        _pcap_header(f)
        for i in range(n):
            et = b"\x08\x00" if i % 2 else rb(2)
            _rec(f, ts + i * 1000, rb(12) + et + rb(rnd.randrange(41)))
    return n


def write_big_garbage(path: str, size_mb: float, clean_seed: int = 1, clean_messages: int = 2000,
                      seed: int = 7, garbage_conns: int = 2000) -> dict:
    """A capture of ``size_mb`` that is mostly garbage, with the simulator's clean
    traffic (``synth.generate(clean_seed, clean_messages)``, its frames unchanged
    and in order) spread evenly through it.  Garbage frames, by share of frames:

    * 10 % random bytes (14..200, random ethertype);
    * 15 % Ethernet + IPv4 whose 20 header bytes are random apart from the
      version nibble (corrupted IHL/Total Length/protocol/fragment fields),
      random payload;
    * 10 % a well-formed IPv4 header + a TCP header of random bytes (random
      flags, data offset, sequence numbers) to or from 1414/1801, random payload;
    * 3 % UDP to 3527 (MSMQ ping port) with random payload;
    * 62 % well-formed TCP segments of ``garbage_conns`` concurrent connections
      to 1414 or 1801 (handshake, in-order sequence numbers, FIN after 50..400
      segments, then a new connection) with random payloads of 100..1460 bytes,
      12 % of them starting with ``TSH `` / ``TSHM`` or an MSMQ BaseHeader.

    Garbage addresses are 10.200-255.x.x (or random for the corrupted kinds),
    never the simulator's 10.1/10.2 networks.  Timestamps never go backwards:
    a garbage frame carries the timestamp of the last clean frame.  Returns
    counts per kind."""
    from mqcodec import synth

    clean = synth.generate(clean_seed, clean_messages)
    rnd = random.Random(seed)
    rb, rr = rnd.randbytes, rnd.randrange
    target = size_mb * MB
    avg_garbage = 640          # rough mean garbage record size, to spread the clean frames evenly
    every = max(1, int(target / avg_garbage / max(1, len(clean))))
    counts = dict.fromkeys(("clean", "random", "bad-ipv4", "bad-tcp", "udp-ping", "tcp-garbage"), 0)
    eth = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01"
    tsh = struct.pack("!4sI", b"TSHM", 0x0000FFFF)
    lior = struct.pack("<BBH4sII", 0x10, 0, 0, b"LIOR", 0x00001000, 0xFFFFFFFF)
    conns: list = []
    next_conn = [0]

    def new_conn():
        c = next_conn[0]
        next_conn[0] += 1
        cli = "10.%d.%d.%d" % (200 + (c >> 16) % 56, (c >> 8) & 255, c & 255)
        srv = "10.250.%d.%d" % (rr(256), 1 + rr(250))
        port = 1414 if c & 1 else 1801
        return [cli, 20000 + c % 40000, srv, port, rr(1 << 32), rr(1 << 32), 0, 50 + rr(350)]

    ts = clean[0].ts_ns
    ci = 0
    n = 0
    with open(path, "wb") as f:
        _pcap_header(f)
        while True:
            pos = f.tell()
            if ci < len(clean) and (n % every == 0 or pos >= target):
                p = clean[ci]
                ts = p.ts_ns
                _rec(f, ts, p.frame)
                ci += 1
                counts["clean"] += 1
                n += 1
                continue
            if pos >= target:
                break
            n += 1
            k = rr(100)
            if k < 10:
                fr = rb(12) + rb(2) + rb(rr(187))
                counts["random"] += 1
            elif k < 25:
                hdr = bytes([0x40 | rr(16)]) + rb(19)
                fr = eth + b"\x08\x00" + hdr + rb(rr(1460))
                counts["bad-ipv4"] += 1
            elif k < 35:
                port = (1414, 1801)[rr(2)]
                ports = struct.pack("!HH", rr(65536), port) if rr(2) else struct.pack("!HH", port, rr(65536))
                tcp = ports + rb(16)
                pl = rb(rr(1200))
                ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(pl), 0, 0x4000, 64, 6, 0, rb(4), rb(4))
                fr = eth + b"\x08\x00" + ip + tcp + pl
                counts["bad-tcp"] += 1
            elif k < 38:
                pl = rb(rr(600))
                udp = struct.pack("!HHHH", 40000 + rr(1000), 3527, 8 + len(pl), 0)
                ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(pl), 0, 0x4000, 64, 17, 0,
                                 _ip("10.251.%d.%d" % (rr(256), rr(256))), _ip("10.252.0.1"))
                fr = eth + b"\x08\x00" + ip + udp + pl
                counts["udp-ping"] += 1
            else:
                if len(conns) < garbage_conns:
                    c = new_conn()
                    conns.append(c)
                    cli, cp, srv, sp, cs, ss, _, _ = c
                    _rec(f, ts, _tcp_frame(cli, srv, cp, sp, cs, 0, 0x02))
                    _rec(f, ts, _tcp_frame(srv, cli, sp, cp, ss, cs + 1, 0x12))
                    c[4] += 1
                    c[5] += 1
                    counts["tcp-garbage"] += 2
                j = rr(len(conns))
                c = conns[j]
                cli, cp, srv, sp, cs, ss, sent, limit = c
                pl = rb(100 + rr(1361))
                if rr(100) < 12:
                    pl = (tsh if sp == 1414 else lior) + pl
                if rr(4):      # client -> server
                    fr = _tcp_frame(cli, srv, cp, sp, cs, ss, 0x18, pl)
                    c[4] = cs + len(pl)
                else:
                    fr = _tcp_frame(srv, cli, sp, cp, ss, cs, 0x18, pl)
                    c[5] = ss + len(pl)
                c[6] = sent + 1
                counts["tcp-garbage"] += 1
                if c[6] >= limit:   # close both directions, open a new one later
                    _rec(f, ts, fr)
                    _rec(f, ts, _tcp_frame(cli, srv, cp, sp, c[4], c[5], 0x11))
                    _rec(f, ts, _tcp_frame(srv, cli, sp, cp, c[5], c[4] + 1, 0x11))
                    counts["tcp-garbage"] += 2
                    conns[j] = conns[-1]
                    conns.pop()
                    continue
            _rec(f, ts, fr)
    counts["frames"] = sum(counts.values())
    counts["garbage_connections"] = next_conn[0]
    return counts


_IDENTITY = ["src_ip", "src_port", "dst_ip", "dst_port", "stream_offset", "ts", "kind"]
_NOT_COMPARED = {"message_key", "capture", "frame", "tcp_stream"}   # depend on what else the capture holds


def _clean_rows(outdir: str, endpoints=None):
    """mq_messages and msmq_packets rows (as a sorted Python list of dicts, with their PCF
    parameters attached) whose (src_ip, src_port, dst_ip, dst_port) is in
    ``endpoints`` (all when None); columns that depend on the rest of the
    capture (message_key, frame number, tcp_stream, capture name) left out."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rows, keys = [], {}
    groups = []
    for table in ("mq_messages", "msmq_packets"):
        pf = pq.ParquetFile(os.path.join(outdir, table, "part-00000-c000.parquet"))
        groups += [pf.read_row_group(i) for i in range(pf.num_row_groups)]
    for t in groups:
        t = t.cast(pa_plain(t.schema))
        if endpoints is not None:
            ips = sorted({e[0] for e in endpoints} | {e[2] for e in endpoints})
            t = t.filter(pc.is_in(t.column("src_ip"), value_set=pa_array(ips)))
        for r in t.to_pylist():
            ep = (r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"])
            if endpoints is not None and ep not in endpoints:
                continue
            keys[r["message_key"]] = len(rows)
            rows.append({k: v for k, v in r.items() if k not in _NOT_COMPARED})
            rows[-1]["pcf"] = []
    pp = pq.ParquetFile(os.path.join(outdir, "pcf_parameters", "part-00000-c000.parquet"))
    for i in range(pp.num_row_groups):
        for r in pp.read_row_group(i).to_pylist():
            j = keys.get(r.pop("message_key"))
            if j is not None:
                rows[j]["pcf"].append(r)
    rows.sort(key=lambda r: tuple(str(r[c]) for c in _IDENTITY))
    return rows


def pa_plain(schema):
    """``schema`` with dictionary-encoded columns as their value type."""
    import pyarrow as pa

    return pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema])


def pa_array(values):
    import pyarrow as pa

    return pa.array(values, pa.string())


def run_big_garbage(size_mb: float, tmp: str, clean_messages: int = 2000, keep: bool = False,
                    pure: bool = True) -> dict:
    """Generate the mostly-garbage capture, convert it (``pure``: with the pure
    engine, else the default one: the compiled capture core when built) under
    ``/usr/bin/time -v`` (niced), convert its clean traffic alone, and compare the
    clean connections' rows (every column but message_key/frame/tcp_stream/capture,
    PCF parameters included)."""
    import json
    import re

    from mqcodec import synth

    big = os.path.join(tmp, "garbage.pcap")
    t = time.monotonic()
    counts = write_big_garbage(big, size_mb, clean_messages=clean_messages)
    gen_s = time.monotonic() - t
    env = dict(os.environ, MQCODEC_PURE="1") if pure else {k: v for k, v in os.environ.items() if k != "MQCODEC_PURE"}
    out_big = os.path.join(tmp, "out-big")
    cmd = ["nice", "-n", "10", "/usr/bin/time", "-v", PY, "-m", "mqcodec", "pcap2parquet", big, "-o", out_big, "-v"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    tv = p.stderr
    res = {"rc": p.returncode, "generate_s": gen_s, "counts": counts, "size_mib": os.path.getsize(big) / MB,
           "command": ("MQCODEC_PURE=1 " if pure else "") + " ".join(cmd[:5] + ["python", "-m", "mqcodec", "pcap2parquet", "garbage.pcap",
                                                              "-o", "OUT", "-v"])}
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv)
    res["peak_rss_mib"] = int(m.group(1)) / 1024 if m else None
    m = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", tv)
    res["wall"] = m.group(1) if m else None
    m = re.search(r"User time \(seconds\): (\S+)", tv)
    res["user_s"] = float(m.group(1)) if m else None
    try:
        rep = json.loads(p.stdout)
        res["summary"] = rep["summary"]
        res["by_kind"] = rep.get("messages_by_protocol_and_kind")
        st = rep["captures"][0]
        res["stats"] = st.get("stats")
        res["skipped_reasons"] = len(st.get("skipped") or {})
        res["malformed"] = {k: v for k, v in sorted((st.get("malformed") or {}).items(), key=lambda kv: -kv[1])[:12]}
    except (ValueError, KeyError, IndexError):
        res["stderr"] = tv[-3000:]
        return res
    if not keep:
        os.unlink(big)
    clean_pcap = os.path.join(tmp, "clean.pcap")
    synth.write_capture(clean_pcap, 1, clean_messages)
    out_clean = os.path.join(tmp, "out-clean")
    subprocess.run([PY, "-m", "mqcodec", "pcap2parquet", clean_pcap, "-o", out_clean], check=True, env=env,
                   capture_output=True)
    clean = _clean_rows(out_clean)
    endpoints = {(r["src_ip"], r["src_port"], r["dst_ip"], r["dst_port"]) for r in clean}
    mixed = _clean_rows(out_big, endpoints)
    res["clean_rows"] = len(clean)
    res["clean_rows_in_garbage_run"] = len(mixed)
    res["clean_pcf_parameters"] = sum(len(r["pcf"]) for r in clean)
    res["identical"] = clean == mixed
    if not res["identical"]:
        diff = [(a, b) for a, b in zip(clean, mixed) if a != b][:2]
        res["first_difference"] = repr(diff)[:2000]
    return res


BUILDERS = {
    "msmq-4mib x16 conns": lambda p, mb: write_msmq_4mib(p, mb, 16),
    "msmq-4mib x256 conns": lambda p, mb: write_msmq_4mib(p, mb, 256),
    "msmq-4mib x1024 conns": lambda p, mb: write_msmq_4mib(p, mb, 1024),
    "mq-max-tsh x1 conn": lambda p, mb: write_mq_max_tsh(p, mb, 1),
    "mq-max-tsh x8 conns": lambda p, mb: write_mq_max_tsh(p, mb, 8),
    "pcf-statistics x4 conns": lambda p, mb: write_pcf_statistics(p, mb, 4),
}


_BUDGET_CHILD = r"""
import json, resource, sys, time
from mqcodec.capture import open_capture
from mqcodec.capture.budget import ByteBudget
from mqcodec.framers import drive
limit = int(sys.argv[2])
budget = ByteBudget(limit) if limit else None
n = {"events": 0, "framing_errors": 0, "budget_errors": 0, "bytes_in_errors": 0}
def count(key, e):   # events are counted, not kept (a converter writes them out in chunks)
    n["events"] += 1
    if type(e).__name__ == "FramingError":
        n["framing_errors"] += 1
        n["budget_errors"] += getattr(e, "field", "") == "budget"
        n["bytes_in_errors"] += len(e.raw)
t = time.monotonic()
res = drive(open_capture(sys.argv[1]), budget, on_event=count, measure_peak=False, keep_events=False)
wall = time.monotonic() - t
print(json.dumps(dict(n, wall=wall, maxrss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      budget=res["budget"])))
"""


def run_budget(size_mb: float, conns: int, tmp: str, limits=(0, 256 << 20)) -> list:
    """The global byte budget (``mqcodec.capture.budget``) on ``conns`` MSMQ
    connections each claiming a 4 MiB packet: peak RSS of the reference loop
    ``budget.drive`` (reassembly + framers, no Parquet) without and with the
    budget, in a child process each."""
    import json

    pcap = os.path.join(tmp, "budget.pcap")
    frames = write_msmq_4mib(pcap, size_mb, conns)
    out = []
    try:
        for limit in limits:
            p = subprocess.run([PY, "-c", _BUDGET_CHILD, pcap, str(limit)], capture_output=True, text=True)
            r = json.loads(p.stdout) if p.returncode == 0 else {"rc": p.returncode, "stderr": p.stderr[-2000:]}
            r.update(limit_mib=limit >> 20, conns=conns, frames=frames, size_mib=os.path.getsize(pcap) / MB)
            r["peak_rss_mib"] = r.get("maxrss_kib", 0) / 1024
            out.append(r)
    finally:
        os.unlink(pcap)
    return out


def run_case(kind: str, size_mb: float, tmp: str, *extra: str) -> dict:
    """One capture of ``kind`` and ``size_mb`` converted in a child (``extra``: more
    pcap2parquet arguments)."""
    pcap = os.path.join(tmp, "c.pcap")
    t = time.monotonic()
    if kind == "growth":
        frames = write_growth(pcap, size_mb)
    elif kind == "tiny-garbage":
        frames = write_tiny_garbage(pcap)
    else:
        frames = BUILDERS[kind](pcap, size_mb)
    gen = time.monotonic() - t
    try:
        res = measure(pcap, os.path.join(tmp, "out"), *extra)
    finally:
        os.unlink(pcap)
        subprocess.run(["rm", "-rf", os.path.join(tmp, "out")])
    res.update(kind=kind, frames=frames, generate_s=gen)
    return res


def _line(r):
    s = r.get("summary") or {}
    return "| %s | %.0f MiB | %d | %.1f s | %.0f MiB | %s | %s |" % (
        r["kind"], r["size_mib"], r["frames"], r["wall"], r["peak_rss_mib"], s.get("messages", 0),
        "rc=%d" % r["rc"] if r["rc"] else "ok")


# --------------------------------------------------------------------------- pytest-benchmark
SIZES = [float(x) for x in os.environ.get("MQCODEC_BENCH_RESOURCE_MB", "20,100,500").split(",")]
LIMIT_MIB = 1024


@pytest.mark.parametrize("size_mb", SIZES)
def test_growth(benchmark, tmp_path, size_mb):
    res = benchmark.pedantic(run_case, args=("growth", size_mb, str(tmp_path)), rounds=1, iterations=1)
    benchmark.extra_info.update(res)
    print(_line(res))
    assert res["rc"] == 0 and res["peak_rss_mib"] < LIMIT_MIB


@pytest.mark.parametrize("kind", list(BUILDERS) + ["tiny-garbage"])
def test_adversarial(benchmark, tmp_path, kind):
    res = benchmark.pedantic(run_case, args=(kind, 200, str(tmp_path)), rounds=1, iterations=1)
    benchmark.extra_info.update(res)
    print(_line(res))
    assert res["rc"] == 0 and res["peak_rss_mib"] < LIMIT_MIB


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    sizes = SIZES
    if "--sizes" in argv:
        sizes = [float(x) for x in argv[argv.index("--sizes") + 1].split(",")]
    adv_mb = float(argv[argv.index("--adv-mb") + 1]) if "--adv-mb" in argv else 200
    kinds = argv[argv.index("--kinds") + 1].split(",") if "--kinds" in argv else list(BUILDERS) + ["tiny-garbage"]
    # --args "...": more pcap2parquet arguments for growth and adversarial (--args "--row-groups-per-file 0")
    extra = argv[argv.index("--args") + 1].split() if "--args" in argv else []
    if what == "budget":   # global byte budget: 1,024 connections each claiming 4 MiB
        import json
        mb = float(argv[argv.index("--budget-mb") + 1]) if "--budget-mb" in argv else 600
        conns = int(argv[argv.index("--conns") + 1]) if "--conns" in argv else 1024
        with tempfile.TemporaryDirectory() as tmp:
            for r in run_budget(mb, conns, tmp):
                print(json.dumps(r), flush=True)
        return
    if what == "big-garbage":   # the >= 2 GB mostly-garbage capture (docs/ROBUSTNESS.md)
        import json
        big_mb = float(argv[argv.index("--big-mb") + 1]) if "--big-mb" in argv else 2100
        tmpdir = argv[argv.index("--tmp") + 1] if "--tmp" in argv else None
        with tempfile.TemporaryDirectory(dir=tmpdir) as tmp:
            print(json.dumps(run_big_garbage(big_mb, tmp, pure="--compiled" not in argv), indent=1, default=str),
                  flush=True)
        return
    print("| capture | size | frames | wall | peak RSS | messages | exit |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        if what in ("growth", "all"):
            for mb in sizes:
                r = run_case("growth", mb, tmp, *extra)
                print(_line(r), flush=True)
                print("<!-- %s -->" % {k: r["summary"].get(k) for k in ("frames", "messages", "errors", "gaps")}
                      if r["summary"] else r["stderr"][-500:], flush=True)
        if what in ("adversarial", "all"):
            for kind in kinds:
                r = run_case(kind, adv_mb, tmp, *extra)
                print(_line(r), flush=True)
                print("<!-- %s -->" % (r["summary"] if r["summary"] else r["stderr"][-500:]), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main(sys.argv)
