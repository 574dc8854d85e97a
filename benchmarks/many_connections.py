"""A capture of many short TCP connections, the shape of applications that
connect once per message: the state kept per connection (the capture core's
records and closed map, the conversation tracker's) is what it measures.

    .venv/bin/python benchmarks/many_connections.py N -o FILE [--payload mq|junk|syn]

Each connection: a handshake, then ``mq`` (the default) one IBM MQ MQPUT unit
each way (requests never replied: they wait until the tracker gives them up),
or ``junk`` 64 bytes that are not IBM MQ (framing errors: the capture
``core_vs_tree.py --many-connections`` uses), then a FIN close; connections
one after another, client addresses and ports varied.  ``syn``: each
connection a lone SYN (a flood of spoofed SYNs, never answered, never
closed: past ``max_connections`` they are evicted).
"""
from __future__ import annotations

import argparse


def write(n: int, path: str, payload: str = "mq") -> None:
    if payload == "syn":
        _syn_flood(n, path)
        return
    from mqcodec.capture.writer import TcpConversation, write_pcap
    from mqcodec.ibmmq import builders
    from mqcodec.ibmmq.headers import MQMD

    unit = builders.encode_put(MQMD(Format="MQSTR").encode() + b"message")
    frames = []
    for k in range(n):
        client = "10.%d.%d.1" % (k >> 8 & 255, k & 255)
        if payload == "mq":
            c = TcpConversation(client=(client, 20000 + k % 30000), start_ns=10 ** 18 + k * 10 ** 5, step_ns=1)
        else:   # core_vs_tree.py's capture of many connections, as it always was
            c = TcpConversation(mss=1000, client=(client, 40000 + k % 20000), start_ns=10 ** 18 + k * 1000, step_ns=1)
        c.handshake()
        if payload == "mq":
            c.send(0, unit)
            c.send(1, unit)
        else:
            c.send(0, b"TSH " + bytes(60))
        c.close()
        frames += [(p.ts_ns, p.frame) for p in c.packets]
    frames.sort(key=lambda f: f[0])
    with open(path, "wb") as f:
        write_pcap(f, frames, 1)


def _syn_flood(n: int, path: str) -> None:
    from mqcodec.capture.writer import PcapWriter, ethernet, ipv4, tcp

    with open(path, "wb") as f:
        w = PcapWriter(f, nanosecond=True)
        for k in range(n):
            src = "10.%d.%d.%d" % (k >> 16 & 255, k >> 8 & 255, k & 255)
            w.write(10 ** 18 + k * 1000, ethernet(ipv4(src, "10.200.0.1", 6, tcp(
                src, "10.200.0.1", 1024 + k % 60000, 1414, k * 7919 & 0xFFFFFFFF, 0, 0x02))))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("-o", required=True)
    ap.add_argument("--payload", choices=("mq", "junk", "syn"), default="mq")
    a = ap.parse_args(argv)
    write(a.n, a.o, a.payload)


if __name__ == "__main__":
    main()
