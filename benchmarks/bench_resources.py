"""Resource bounds of ``mqcodec pcap2parquet``: peak RSS and wall time of the
whole job in a child process, for captures of growing size and for
adversarial captures (docs/ROBUSTNESS-captures.md has the figures).

Never run in CI (large temporary files, minutes of CPU).  Either

    .venv/bin/python -m pytest benchmarks/bench_resources.py --benchmark-only -s

(sizes from MQCODEC_BENCH_RESOURCE_MB, default "20,100,500"), or, for a table:

    .venv/bin/python benchmarks/bench_resources.py [growth|adversarial|all] [--sizes 20,100,500]

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
    from mqcodec.ibmmq import framing

    # a real TSHM (an MQPUT's first segment header), MQSegmLen (big-endian, offset 4)
    # patched to the framer's maximum
    seg = bytearray(framing.encode_segments("MQPUT", bytes(64))[:36])
    assert seg[:4] == b"TSHM"
    struct.pack_into("!I", seg, 4, framing.DEFAULT_MAX_SEGMENT_LENGTH)
    return _interleaved(path, size_mb, conns, 1414, lambda i: bytes(seg), bytes(1424))


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


BUILDERS = {
    "msmq-4mib x16 conns": lambda p, mb: write_msmq_4mib(p, mb, 16),
    "msmq-4mib x256 conns": lambda p, mb: write_msmq_4mib(p, mb, 256),
    "mq-max-tsh x1 conn": lambda p, mb: write_mq_max_tsh(p, mb, 1),
    "mq-max-tsh x8 conns": lambda p, mb: write_mq_max_tsh(p, mb, 8),
}


def run_case(kind: str, size_mb: float, tmp: str) -> dict:
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
        res = measure(pcap, os.path.join(tmp, "out"))
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
    print("| capture | size | frames | wall | peak RSS | messages | exit |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        if what in ("growth", "all"):
            for mb in sizes:
                r = run_case("growth", mb, tmp)
                print(_line(r), flush=True)
                print("<!-- %s -->" % {k: r["summary"].get(k) for k in ("frames", "messages", "errors", "gaps")}
                      if r["summary"] else r["stderr"][-500:], flush=True)
        if what in ("adversarial", "all"):
            for kind in kinds:
                r = run_case(kind, adv_mb, tmp)
                print(_line(r), flush=True)
                print("<!-- %s -->" % (r["summary"] if r["summary"] else r["stderr"][-500:]), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main(sys.argv)
