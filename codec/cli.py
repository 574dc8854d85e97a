"""The ``mqcodec`` command line.

    mqcodec decode --protocol {mq,pcf,msmq} [--encoding {big,little}]
                   [--ccsid N] [--format {json,text}] [--lenient] FILE

Errors in the input print one line on stderr naming the structure, the field
and the byte offset, and exit with status 2; never a traceback.
"""
from __future__ import annotations

import argparse
import sys

from . import __version__
from .errors import DecodeError, EncodeError, NoCaptureRead
from .render import to_json, to_text

EXIT_DECODE_ERROR = 2
EXIT_USAGE = 64


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _cmd_decode(args: argparse.Namespace) -> int:
    data = _read(args.file)
    obj: object
    if args.protocol in ("mq", "pcf"):
        from . import ibmmq

        enc = {"big": ibmmq.ENCODING_BIG, "little": ibmmq.ENCODING_LITTLE, None: None}[args.encoding]
        if args.protocol == "mq":
            obj = ibmmq.decode_message(data, encoding=enc, ccsid=args.ccsid, lenient=args.lenient)
        else:
            obj = ibmmq.decode_pcf(data, encoding=enc, ccsid=args.ccsid, lenient=args.lenient)
    else:
        from . import msmq

        obj = msmq.decode_packet(data, lenient=args.lenient)
    out = render(obj, args.format)
    sys.stdout.flush()
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


def render(obj, fmt: str = "json") -> bytes:
    """What ``mqcodec decode`` prints for a decoded object, as UTF-8 bytes.

    Decoded text may hold code points UTF-8 cannot carry: MSMQ strings are
    UTF-16 on the wire and a lone surrogate (D800-DFFF) is kept as it was sent
    (``surrogatepass``).  It is written as the escape ``\\udXXX``: in JSON that
    is the standard escape of the same code unit (``json.loads`` gives it
    back); in text it is readable.  Never an exception."""
    text = to_json(obj.to_dict()) if fmt == "json" else to_text(obj.to_dict())
    return text.encode("utf-8", "backslashreplace") + b"\n"


def _cmd_pcap2parquet(args: argparse.Namespace) -> int:
    import json

    from .pcap2parquet import ConvertOptions, convert

    if args.engine != "local":
        from .spark import pipeline as spark_pipeline  # the Spark engine lives in mqcodec.spark

        report = spark_pipeline.convert(args.inputs, args.output, master=args.master, raw=args.raw,
                                        mq_ports=tuple(args.mq_port), msmq_ports=tuple(args.msmq_port),
                                        partition_by=args.partition_by, chunk_messages=args.chunk)
    else:
        opts = ConvertOptions(mq_ports=tuple(args.mq_port), msmq_ports=tuple(args.msmq_port), raw=args.raw,
                              chunk_messages=args.chunk, chunk_bytes=args.chunk_bytes,
                              capture_impl=args.capture_impl, buffer_budget=args.buffer_budget)
        report = convert(args.inputs, args.output, opts, progress=sys.stderr.isatty(),
                         partition_by=args.partition_by)
    for c in report.get("captures", []):
        if "error" in c:  # an input that could not be read: the others were converted
            print("mqcodec: %s: not read: %s" % (c["capture"], c["error"]), file=sys.stderr)
    print(json.dumps(report if args.verbose else {k: v for k, v in report.items() if k != "captures"}, indent=2))
    return 0


def _cmd_route(args: argparse.Namespace) -> int:
    from .ibmmq.route import (DOT_TIMEOUT, MAX_GRAPH_EDGES, MAX_GRAPH_NODES, GraphTooLarge, RenderTimeout,
                              build_routes, check_graph_size, load_route_inputs, render_dot, render_image,
                              render_text)

    timeout = DOT_TIMEOUT if args.dot_timeout is None else args.dot_timeout
    max_nodes = MAX_GRAPH_NODES if args.max_nodes is None else args.max_nodes
    max_edges = MAX_GRAPH_EDGES if args.max_edges is None else args.max_edges

    try:
        routes = build_routes(load_route_inputs(_read(f) for f in args.files))
    except ValueError as exc:
        if isinstance(exc, DecodeError):
            raise
        print("mqcodec: %s" % exc, file=sys.stderr)
        return EXIT_DECODE_ERROR

    def text() -> bytes:
        return "\n\n".join(render_text(r) for r in routes).encode("utf-8", "backslashreplace") + b"\n"

    if args.format == "text":
        out = text()
    elif args.format == "dot":
        out = render_dot(routes).encode() + b"\n"
    else:
        try:
            check_graph_size(routes, max_nodes, max_edges)
            out = render_image(render_dot(routes), args.format, timeout=timeout if timeout > 0 else None)
        except (GraphTooLarge, RenderTimeout) as exc:
            print("mqcodec: %s; writing the route as text instead of %s" % (exc, args.format.upper()),
                  file=sys.stderr)
            out = text()
        except RuntimeError as exc:
            print("mqcodec: %s" % exc, file=sys.stderr)
            return EXIT_USAGE
    if args.output:
        with open(args.output, "wb") as f:
            f.write(out)
    else:
        sys.stdout.buffer.write(out)
    return 0


def _cmd_synth(args: argparse.Namespace) -> int:
    from .synth import write_capture

    n = write_capture(args.output, seed=args.seed, messages=args.messages)
    print("wrote %d frames to %s (seed %d, %d application messages)" % (n, args.output, args.seed, args.messages),
          file=sys.stderr)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(args.shared, verbose=args.verbose)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mqcodec", description="Decode IBM MQ and MSMQ binary traffic.")
    p.add_argument("--version", action="version", version="mqcodec " + __version__)
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("decode", help="decode one message, PCF body or MSMQ packet from a file")
    d.add_argument("--protocol", choices=("mq", "pcf", "msmq"), required=True,
                   help="mq: MQMD first; pcf: MQCFH or MQEPH first; msmq: MSMQ BaseHeader first")
    d.add_argument("--encoding", choices=("big", "little"), default=None,
                   help="integer byte order of the first structure (detected when omitted)")
    d.add_argument("--ccsid", type=int, default=None, help="CCSID of the first structure's strings")
    d.add_argument("--format", choices=("json", "text"), default="json")
    d.add_argument("--lenient", action="store_true",
                   help="keep unknown or damaged structures as opaque bytes and report warnings")
    d.add_argument("file", help="input file, or - for standard input")
    d.set_defaults(func=_cmd_decode)

    r = sub.add_parser("route", help="show the route of a trace-route message, reply or activity reports")
    r.add_argument("files", nargs="+", help="MQ messages (MQMD first) or PCF bodies")
    r.add_argument("--format", choices=("text", "dot", "svg", "png"), default="text")
    r.add_argument("-o", "--output", help="write to this file instead of standard output")
    r.add_argument("--dot-timeout", type=float, default=None, metavar="SECONDS",
                   help="svg/png: stop Graphviz after this many seconds and write text instead "
                        "(default: mqcodec.ibmmq.route.DOT_TIMEOUT, 20; 0: no limit)")
    r.add_argument("--max-nodes", type=int, default=None,
                   help="svg/png: a picture with more queue-manager nodes is written as text "
                        "(default: route.MAX_GRAPH_NODES; 0: no cap)")
    r.add_argument("--max-edges", type=int, default=None,
                   help="svg/png: a picture with more hops (edges) is written as text "
                        "(default: route.MAX_GRAPH_EDGES; 0: no cap)")
    r.set_defaults(func=_cmd_route)

    c = sub.add_parser("pcap2parquet", help="convert pcap/pcapng captures to Parquet tables")
    c.add_argument("inputs", nargs="+", help="capture files (pcap, pcapng, optionally gzip-compressed)")
    c.add_argument("-o", "--output", required=True,
                   help="output folder: one Parquet dataset per table (mq_messages/, msmq_packets/, pcf_parameters/)")
    c.add_argument("--partition-by", choices=("date",), default=None,
                   help="write each table's rows in folders date=YYYY-MM-DD (the UTC date of ts)")
    c.add_argument("--engine", choices=("local", "spark"), default="local")
    c.add_argument("--master", default="local[*]", help="Spark master URL for --engine spark")
    c.add_argument("--raw", action="store_true", help="keep every message's bytes (error rows always keep them)")
    c.add_argument("--mq-port", type=int, action="append", default=None, help="IBM MQ TCP port (default 1414)")
    c.add_argument("--msmq-port", type=int, action="append", default=None, help="MSMQ TCP port (default 1801)")
    c.add_argument("--chunk", type=int, default=20000, help="messages decoded and written per row group")
    c.add_argument("--chunk-bytes", type=int, default=16 << 20,
                   help="also flush a row group when the pending messages hold this many bytes")
    c.add_argument("--buffer-budget", type=int, default=256 << 20,
                   help="bytes all reassembly and framer buffers may hold together before the largest "
                        "buffered direction is cut into an error row (pure capture pipeline)")
    c.add_argument("--capture-impl", choices=("c", "py"), default=None,
                   help="capture pipeline: the compiled capture core (default when built) or the pure one")
    c.add_argument("-v", "--verbose", action="store_true", help="include per-capture frame statistics")
    c.set_defaults(func=_cmd_pcap2parquet)

    y = sub.add_parser("synth", help="write a deterministic capture of a simulated IBM MQ + MSMQ network")
    y.add_argument("-o", "--output", required=True, help="pcap file to write")
    y.add_argument("--seed", type=int, default=1)
    y.add_argument("--messages", type=int, default=100, help="application messages (other traffic scales with it)")
    y.set_defaults(func=_cmd_synth)

    m = sub.add_parser("demo", help="run the main job on the embedded default (the shared test vectors)")
    m.add_argument("--shared", default="../shared", help="folder holding vectors/ (default ../shared)")
    m.add_argument("-v", "--verbose", action="store_true", help="print every decoded tree")
    m.set_defaults(func=_cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "command", None) == "pcap2parquet":
        args.mq_port = args.mq_port or [1414]
        args.msmq_port = args.msmq_port or [1801]
    try:
        return args.func(args)
    except DecodeError as exc:
        print("mqcodec: decode error: %s" % exc, file=sys.stderr)
        return EXIT_DECODE_ERROR
    except NoCaptureRead as exc:
        print("mqcodec: %s" % exc, file=sys.stderr)
        return EXIT_DECODE_ERROR
    except EncodeError as exc:
        print("mqcodec: encode error: %s" % exc, file=sys.stderr)
        return EXIT_DECODE_ERROR
    except OSError as exc:
        print("mqcodec: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # pragma: no cover
        return 0
