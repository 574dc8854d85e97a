"""The ``mqcodec`` command line.

    mqcodec decode --protocol {mq,pcf,msmq} [--encoding {big,little}]
                   [--ccsid N] [--format {json,text}] [--lenient] FILE
    mqcodec show CAPTURE [--frame N]... [--filter EXPR] [--format {text,json}]
    mqcodec pcap2parquet CAPTURE... -o DIR [--engine {local,spark}] ...
    mqcodec route FILE... [--format {text,dot,svg,png}]
    mqcodec synth -o FILE [--seed N] [--messages N]
    mqcodec demo

Standard output carries the result only (decoded trees, summaries, images);
diagnostics and progress bars go to standard error.  Every failure the user
can cause prints one line on stderr -- never a traceback -- and exits with
one of the codes of :data:`EXIT_CODES` (docs/cli.md).
"""
from __future__ import annotations

import argparse
import sys

from . import __version__
from .errors import DecodeError, EncodeError, KeyOverflow, NoCaptureRead

EXIT_OK = 0
#: the command line is wrong (argparse's own code) or the input does not decode
EXIT_BAD_INPUT = 2
EXIT_DECODE_ERROR = EXIT_BAD_INPUT
#: a file cannot be opened, read or written
EXIT_FILE = 3
#: an optional extra (pip install 'mqcodec[spark]') or external program (Graphviz) is missing
EXIT_MISSING = 4
EXIT_USAGE = EXIT_MISSING  # the name the route command uses for a missing Graphviz
#: the Spark job failed (--engine spark): an executor's error, or the cluster could not run it
EXIT_SPARK = 5
EXIT_INTERRUPTED = 130

#: exit status -> meaning; printed in every --help and in docs/cli.md
EXIT_CODES = {
    0: "success",
    1: "internal error (a bug: the traceback is worth reporting)",
    EXIT_BAD_INPUT: "bad usage (unknown option, invalid value) or input that does not decode",
    EXIT_FILE: "a file cannot be opened, read or written",
    EXIT_MISSING: "an optional extra or external program is missing (pip install 'mqcodec[spark]', Graphviz)",
    EXIT_SPARK: "the Spark job failed (--engine spark; nothing written)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}

EPILOG = "exit status:\n" + "\n".join("  %-4d %s" % (k, v) for k, v in EXIT_CODES.items())

#: first bytes of the capture files ``decode`` is not for (it decodes one message)
CAPTURE_MAGICS = {
    b"\xd4\xc3\xb2\xa1": "pcap", b"\xa1\xb2\xc3\xd4": "pcap", b"\x4d\x3c\xb2\xa1": "pcap",
    b"\xa1\xb2\x3c\x4d": "pcap", b"\x0a\x0d\x0d\x0a": "pcapng",
}
GZIP_MAGIC = b"\x1f\x8b"

#: top-level modules of the optional extras -> the extra that provides them
EXTRA_MODULES = {"pyspark": "spark", "py4j": "spark", "pandas": "spark"}


# ---------------------------------------------------------------------------
# option values (argparse ``type=`` functions: a bad value is one line, exit 2)
# ---------------------------------------------------------------------------
def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text) from None


def _ranged(lo: int, hi, what: str):
    def check(text: str) -> int:
        value = _int(text)
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError("%s is not %s (%s)" % (
                text, what, "%d-%d" % (lo, hi) if hi is not None else ">= %d" % lo))
        return value

    check.__name__ = what
    return check


port = _ranged(0, 65535, "a TCP port")
ccsid = _ranged(1, 65535, "a CCSID")
positive = _ranged(1, None, "a positive integer")
non_negative = _ranged(0, None, "a non-negative integer")
frame_number = _ranged(1, None, "a frame number")


def table_names(text: str) -> tuple:
    """``--tables``: output table names, separated by commas."""
    from .convert.tables import TABLES

    names = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in names if t not in TABLES]
    if unknown or not names:
        raise argparse.ArgumentTypeError("%r names no table (the tables are %s)" % (
            ",".join(unknown) or text, ",".join(TABLES)))
    return names


def column_names(text: str) -> tuple:
    """``--columns``: ``TABLE=COLUMN[,COLUMN...]`` -> ("TABLE.COLUMN", ...)."""
    from .convert.tables import check_columns

    table, sep, columns = text.partition("=")
    names = tuple("%s.%s" % (table.strip(), c.strip()) for c in columns.split(",") if c.strip())
    if not sep or not names:
        raise argparse.ArgumentTypeError("%r: give TABLE=COLUMN[,COLUMN...]" % text)
    try:
        return check_columns(names)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``mqcodec CMD: error: ... (see mqcodec CMD --help)``, exit 2."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, "%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's layout and appends every option's default to its
    help (options whose help already says it, or that are required, as is)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS or "default" in text:
            return text
        if action.required:
            return text + " (required)"
        default = action.default
        if isinstance(default, bool) or (default is None and action.nargs == 0):
            shown = "on" if default else "off"
        elif default is None:
            return text  # its help says what happens when omitted
        elif isinstance(default, (list, tuple)):
            shown = ", ".join(map(str, default))
        else:
            shown = str(default)
        return text + " (default: %s)" % shown.replace("%", "%%")


# ---------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------
def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _err(message: str) -> None:
    print("mqcodec: %s" % message, file=sys.stderr)


def _capture_kind(data: bytes) -> str | None:
    """"pcap", "pcapng" or "gzip" when ``data`` starts as such a file does."""
    if data[:2] == GZIP_MAGIC:
        return "gzip"
    return CAPTURE_MAGICS.get(bytes(data[:4]))


def _cmd_decode(args: argparse.Namespace) -> int:
    data = _read(args.file)
    kind = _capture_kind(data)
    if kind is not None:
        what = "a gzip-compressed file (a capture?)" if kind == "gzip" else "a %s capture" % kind
        name = "CAPTURE" if args.file == "-" else args.file
        _err("%s is %s, not one %s: show its decoded units with `mqcodec show %s [--frame N]`"
             % ("standard input" if args.file == "-" else args.file, what,
                {"mq": "IBM MQ message", "pcf": "PCF body", "msmq": "MSMQ packet"}[args.protocol], name))
        return EXIT_BAD_INPUT
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
    from .render import to_json, to_text

    text = to_json(obj.to_dict()) if fmt == "json" else to_text(obj.to_dict())
    return text.encode("utf-8", "backslashreplace") + b"\n"


def _cmd_show(args: argparse.Namespace) -> int:
    from .show import FilterError, compile_filter, iter_units, render_units

    try:
        keep = compile_filter(args.filter) if args.filter is not None else None
    except FilterError as exc:
        _err("--filter: %s" % exc)
        return EXIT_BAD_INPUT
    units = iter_units(args.capture, frames=args.frame, mq_ports=tuple(args.mq_port or (1414,)),
                       msmq_ports=tuple(args.msmq_port or (1801,)))
    if keep is not None:
        units = (u for u in units if keep(u))
    shown = [0]

    def counted(it):
        for u in it:
            shown[0] += 1
            yield u

    out = sys.stdout.buffer
    sys.stdout.flush()
    for piece in render_units(counted(units), args.format):
        out.write(piece.encode("utf-8", "backslashreplace"))
    out.flush()
    if not shown[0]:
        where = " in frame %s" % ", ".join(map(str, sorted(set(args.frame)))) if args.frame else ""
        _err("no IBM MQ or MSMQ unit%s%s" % (where, " matches the filter" if keep is not None else ""))
    return 0


def _conf_pair(text: str) -> tuple:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("expected KEY=VALUE, not %r" % text)
    return key.strip(), value


def _cmd_pcap2parquet(args: argparse.Namespace) -> int:
    import json

    from .progress import enabled

    if args.engine == "local":
        _without_pandas()  # before mqcodec.convert, whose import builds Arrow arrays
    try:   # options that contradict each other: before a JVM starts or a file is written
        options = _options(args)
        options.check_partitioning(args.partition_by)
    except ValueError as exc:
        _err("pcap2parquet: %s" % exc)
        return EXIT_BAD_INPUT
    if args.split_size is not None and args.engine == "local":
        _err("pcap2parquet: --split-size is for --engine spark (the local engine reads each capture in one pass)")
        return EXIT_BAD_INPUT
    if args.engine != "local":
        from .spark import pipeline as spark_pipeline  # the Spark engine lives in mqcodec.spark
        from .spark.session import get_session

        master = None if args.master == "" else args.master
        spark = get_session(master=master, app_name="mqcodec pcap2parquet", conf=dict(args.conf or ()),
                            jvm_stdout_to_stderr=True)
        if not args.verbose:  # Spark's warnings (a failed task's traceback) only with -v; errors always
            spark.sparkContext.setLogLevel("ERROR")
        try:
            report = spark_pipeline.convert(args.inputs, args.output, options, master=master,
                                            partition_by=args.partition_by, spark=spark, split_size=args.split_size)
        except spark_pipeline.SparkJobFailed as exc:
            _err("the Spark job failed, nothing was written: %s" % exc)
            return EXIT_SPARK
        finally:
            spark.stop()
    else:
        from .convert import convert

        report = convert(args.inputs, args.output, options, progress=enabled(), partition_by=args.partition_by)
    for c in report.get("captures", []):
        if "error" in c:  # an input that could not be read: the others were converted
            print("mqcodec: %s: not read: %s" % (c["capture"], c["error"]), file=sys.stderr)
    print(json.dumps(report if args.verbose else {k: v for k, v in report.items() if k != "captures"}, indent=2))
    return 0


def _options(args: argparse.Namespace):
    """The conversion options of ``pcap2parquet``, the same object for both engines."""
    from .convert.options import ConvertOptions

    return ConvertOptions(mq_ports=tuple(args.mq_port or (1414,)), msmq_ports=tuple(args.msmq_port or (1801,)),
                          raw=args.raw,
                          detect_by_content=not args.ports_only,
                          chunk_messages=args.chunk, chunk_bytes=args.chunk_bytes,
                          row_groups_per_file=args.row_groups_per_file, row_group_rows=args.row_group_rows,
                          compression=args.compression, capture_impl=args.capture_impl,
                          buffer_budget=args.buffer_budget, threads=args.threads,
                          max_connections=args.max_connections, max_closed=args.max_closed,
                          max_reassembly_bytes=args.max_reassembly_bytes,
                          max_reassembly_segments=args.max_reassembly_segments,
                          columns=tuple(c for spec in args.columns or () for c in spec),
                          **({"tables": args.tables} if args.tables else {}))


def _without_pandas() -> None:
    """Keep pandas out of a local conversion (0.2-0.3 s of imports it never
    uses): the first ``pa.array``/``pa.scalar`` of a process, whatever its
    argument, asks pyarrow's pandas shim whether pandas is installed, which
    imports it.  Asked once while ``import pandas`` fails, the shim takes
    pandas as absent for its implicit checks; it still imports pandas when
    pandas is asked for explicitly (``to_pandas``).  Nothing when pandas is
    imported already."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    class NoPandas:  # a meta path finder that refuses pandas (pyarrow's Cython import
        @staticmethod  # reads sys.modules directly: a None entry there is not refused)
        def find_spec(name, path=None, target=None):
            if name == "pandas":
                raise ModuleNotFoundError("pandas is kept out of pcap2parquet", name="pandas")
            return None

    sys.meta_path.insert(0, NoPandas)
    try:
        pa.scalar(0)
    finally:
        sys.meta_path.remove(NoPandas)


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
    from .progress import Bar, enabled
    from .synth import write_capture

    bar = Bar(total=None, desc="synth", unit="msg") if enabled() else None

    def advance(done: int, total: int) -> None:  # simulated messages, IBM MQ then MSMQ
        if bar is None:
            return
        bar.set_total(total)
        bar.update_to(done)

    try:
        n = write_capture(args.output, seed=args.seed, messages=args.messages,
                          progress=advance if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    print("wrote %d frames to %s (seed %d, %d application messages)" % (n, args.output, args.seed, args.messages),
          file=sys.stderr)
    return 0


def _cmd_columns(args: argparse.Namespace) -> int:
    """The output tables' columns: ``table.column`` and its Arrow type, a line each."""
    from .convert.tables import TABLES, table_schema

    for table in args.tables or TABLES:
        for f in table_schema(table):
            print("%s.%s\t%s" % (table, f.name, f.type))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    import pathlib

    from .demo import run

    if not (pathlib.Path(args.shared) / "vectors").is_dir():
        _err("demo: no vectors/ folder in %s (give it with --shared)" % args.shared)
        return EXIT_FILE
    return run(args.shared, verbose=args.verbose)


# ---------------------------------------------------------------------------
# the parser
# ---------------------------------------------------------------------------
def _subparser(sub, name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=description or help, epilog=EPILOG,
                          formatter_class=_Formatter)


def _ports(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mq-port", type=port, action="append", default=None, metavar="PORT",
                   help="TCP port whose connections are IBM MQ; repeat for several (default: 1414)")
    p.add_argument("--msmq-port", type=port, action="append", default=None, metavar="PORT",
                   help="TCP port whose connections are MSMQ; repeat for several (default: 1801). Connections "
                        "on other ports are recognised by their first bytes (TSH, MSMQ BaseHeader); "
                        "MSMQ pings are UDP 3527")


_SHOW_DESCRIPTION = """\
Print the decoded IBM MQ and MSMQ units of a capture (pcap, pcapng, optionally
gzip-compressed), the way `tshark -V -Y frame.number==N` prints a frame: for
each unit a header line (frame, time, addresses and ports, tcp stream,
protocol, unit and kind), then its decoded tree.

Units: IBM MQ segments (TSH header, API header, MQOD) and messages (MQMD and
data, joined across segments), MSMQ packets and UDP pings, and stream bytes
that could not be framed (unit "error").  A unit belongs to every frame that
carried any of its bytes: --frame N shows it when frame N carried at least one
of them; its header's `frame` is the frame holding its first byte.

Filter language (--filter):
  comparisons   FIELD == VALUE   (also != < > <= >=)      VALUE: "text" or 123 or 0x7B
  a FIELD alone true when the unit has a value for it (e.g. `error`)
  combine       and, or, not (also && || !) and parentheses
  fields        frame last_frame frames time src dst addr src_port dst_port port
                tcp_stream protocol unit kind offset length conversation_id
                request_id segment_type comp_code reason error
  `frames`, `addr` and `port` hold several values: true when one matches.
  A comparison with a field the unit lacks is false.
  example       kind == "MQPUT" and tcp_stream == 3
                unit == "message" and (reason != 0 or error)
"""


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mqcodec", description="Decode IBM MQ and MSMQ binary traffic.",
                                epilog=EPILOG, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version="mqcodec " + __version__,
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    d = _subparser(sub, "decode", "decode one message, PCF body or MSMQ packet from a file "
                                  "(for captures use `mqcodec show`)")
    d.add_argument("--protocol", choices=("mq", "pcf", "msmq"), required=True,
                   help="mq: MQMD first; pcf: MQCFH or MQEPH first; msmq: MSMQ BaseHeader first")
    d.add_argument("--encoding", choices=("big", "little"), default=None,
                   help="integer byte order of the first structure (default: detected)")
    d.add_argument("--ccsid", type=ccsid, default=None,
                   help="CCSID (1-65535) of the first structure's strings (default: its own CCSID field, "
                        "else 819/500)")
    d.add_argument("--format", choices=("json", "text"), default="json",
                   help="json: one JSON document; text: an indented tree")
    d.add_argument("--lenient", action="store_true",
                   help="keep unknown or damaged structures as opaque bytes and report warnings")
    d.add_argument("file", help="input file, or - for standard input")
    d.set_defaults(func=_cmd_decode)

    s = _subparser(sub, "show", "print the decoded IBM MQ / MSMQ units of chosen frames of a capture",
                   _SHOW_DESCRIPTION)
    s.add_argument("capture", help="capture file (pcap, pcapng, optionally gzip-compressed), or - for standard input")
    s.add_argument("--frame", type=frame_number, action="append", default=None, metavar="N",
                   help="show the units that frame N carried bytes of; repeat for several "
                        "(default: every frame)")
    s.add_argument("--filter", default=None, metavar="EXPR",
                   help='keep the units for which EXPR holds, e.g. \'kind == "MQPUT" and tcp_stream == 3\' '
                        "(language above; default: no filter)")
    s.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: a header line and an indented tree per unit; json: one JSON array of "
                        "{header, decoded}")
    _ports(s)
    s.set_defaults(func=_cmd_show)

    r = _subparser(sub, "route", "show the route of a trace-route message, reply or activity reports")
    r.add_argument("files", nargs="+", help="MQ messages (MQMD first) or PCF bodies")
    r.add_argument("--format", choices=("text", "dot", "svg", "png"), default="text",
                   help="text: a readable route; dot: Graphviz source; svg/png: an image (needs Graphviz)")
    r.add_argument("-o", "--output", default=None,
                   help="write to this file (default: standard output)")
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

    c = _subparser(sub, "pcap2parquet", "convert pcap/pcapng captures to Parquet tables")
    c.add_argument("inputs", nargs="+", help="capture files (pcap, pcapng, optionally gzip-compressed)")
    c.add_argument("-o", "--output", required=True,
                   help="output folder: one Parquet dataset per table (mq_messages/, msmq_packets/, "
                        "pcf_parameters/, mq_calls/; docs/tables.md)")
    c.add_argument("--partition-by", choices=("date",), default=None,
                   help="write the rows of the tables with a ts column in folders date=YYYY-MM-DD, the UTC date "
                        "(default: no partitioning)")
    c.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local: this process (compiled capture core when built); spark: a Spark job "
                        "(needs the spark extra: pip install 'mqcodec[spark]')")
    c.add_argument("--master", default="local[*]",
                   help="Spark master URL (--engine spark only; '' keeps spark-submit's master)")
    c.add_argument("--conf", action="append", type=_conf_pair, metavar="KEY=VALUE",
                   help="a Spark setting for the session (--engine spark only; repeatable; default: none)")
    c.add_argument("--split-size", type=positive, default=None, metavar="BYTES",
                   help="--engine spark: cut every capture into byte ranges of BYTES, read by separate tasks, "
                        "and convert each TCP connection where a shuffle by connection brings its frames "
                        "(default: one task per capture)")
    c.add_argument("--raw", action="store_true", help="keep every message's bytes (error rows always keep them)")
    _ports(c)
    c.add_argument("--ports-only", action="store_true",
                   help="recognise IBM MQ and MSMQ connections by their ports only, not by their first bytes")
    c.add_argument("--chunk", type=positive, default=20000, metavar="N",
                   help="messages decoded and assembled into rows at a time")
    c.add_argument("--chunk-bytes", type=positive, default=16 << 20, metavar="BYTES",
                   help="also decode a chunk when the pending messages hold this many bytes")
    c.add_argument("--row-group-rows", type=positive, default=1 << 17, metavar="N",
                   help="rows of a table written as one Parquet row group (or 16 MiB of them)")
    c.add_argument("--row-groups-per-file", type=non_negative, default=64, metavar="N",
                   help="begin a table's next Parquet part file after N row groups, so that the writer's "
                        "memory stays flat however large the capture (0: one file per table)")
    c.add_argument("--compression", default="zstd", choices=("zstd", "snappy", "uncompressed"),
                   help="the Parquet compression of every table: zstd (the smallest files), snappy (read by "
                        "every Parquet reader, older Hive, Impala and Presto among them; faster to write, "
                        "files about twice as large) or uncompressed")
    c.add_argument("--buffer-budget", type=positive, default=256 << 20, metavar="BYTES",
                   help="bytes all reassembly and framer buffers may hold together before the largest "
                        "buffered direction is cut into an error row")
    c.add_argument("--max-connections", type=positive, default=65536, metavar="N",
                   help="TCP connections open at once before the least recently active tenth is closed "
                        "(its bytes become rows)")
    c.add_argument("--max-closed", type=non_negative, default=65536, metavar="N",
                   help="closed connections remembered, so that their late retransmissions are ignored "
                        "rather than taken for new connections")
    c.add_argument("--max-reassembly-bytes", type=positive, default=4 << 20, metavar="BYTES",
                   help="out-of-order bytes a direction may hold waiting for a hole to fill; past it the hole "
                        "is declared a gap")
    c.add_argument("--max-reassembly-segments", type=positive, default=4096, metavar="N",
                   help="out-of-order segments a direction may hold waiting for a hole to fill; past it the "
                        "hole is declared a gap")
    c.add_argument("--capture-impl", choices=("c", "py"), default=None,
                   help="capture pipeline: c, the compiled capture core, or py, the pure one "
                        "(default: c when built, else py)")
    c.add_argument("--threads", type=positive, default=None, metavar="N",
                   help="1 decodes and writes in one thread; N > 1 also writes Parquet on N - 1 background "
                        "threads (at most one per table) while the next chunk is decoded. The files are the same "
                        "whatever N (default: the cores this process may use; --engine spark: the threads of each "
                        "task that converts, default the task slots one task per capture leaves idle, else 1)")
    c.add_argument("--tables", type=table_names, default=None, metavar="NAME[,NAME...]",
                   help="make only these tables (mq_messages, msmq_packets, pcf_parameters, mq_calls); the "
                        "others are not decoded, and their rows are the same as in a run that makes all "
                        "(default: all)")
    c.add_argument("--columns", type=column_names, action="append", metavar="TABLE=COLUMN[,COLUMN...]",
                   help="write TABLE with these columns only (and its key column, message_key or call_key); "
                        "what only its other columns need is not computed. Repeat for other tables; a table "
                        "not named keeps every column (default: all; docs/tables.md lists them)")
    c.add_argument("-v", "--verbose", action="store_true", help="include per-capture frame statistics")
    c.set_defaults(func=_cmd_pcap2parquet)

    y = _subparser(sub, "synth", "write a deterministic capture of a simulated IBM MQ + MSMQ network")
    y.add_argument("-o", "--output", required=True, help="pcap file to write")
    y.add_argument("--seed", type=non_negative, default=1,
                   help="random seed: the same seed and message count give the same capture")
    y.add_argument("--messages", type=non_negative, default=100,
                   help="application messages (other traffic scales with it)")
    y.set_defaults(func=_cmd_synth)

    k = _subparser(sub, "columns", "list the columns of the output tables (what pcap2parquet --columns takes)")
    k.add_argument("tables", nargs="*", type=lambda text: table_names(text)[0], metavar="TABLE",
                   help="only these tables (default: all; docs/tables.md says what each column holds)")
    k.set_defaults(func=_cmd_columns)

    m = _subparser(sub, "demo", "run the main job on the embedded default (the shared test vectors)")
    m.add_argument("--shared", default="../shared", help="folder holding vectors/")
    m.add_argument("-v", "--verbose", action="store_true", help="print every decoded tree")
    m.set_defaults(func=_cmd_demo)
    return p


def run() -> None:
    """The ``mqcodec`` command (console script and ``python -m mqcodec``):
    :func:`main`, then the process ends at once with its status.  When main
    returns, the command's work is done: its files are closed (the Parquet
    writers, their background threads joined), stdout and stderr are flushed
    here.  What the interpreter would do next -- tear down every module,
    collect every object, shut pyarrow's pools -- changes nothing outside the
    process and took 35-50 ms of a 0.4 s conversion of a small capture
    when it was measured.  A process that loaded Spark exits the normal way, so
    that PySpark's own exit handlers run.  Arrow's pool is chosen before
    pyarrow loads (:func:`mqcodec.convert.heap.prefer_jemalloc`)."""
    import os

    from .convert.heap import prefer_jemalloc

    prefer_jemalloc()
    code = main()
    if "pyspark" in sys.modules or not isinstance(code, int):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):   # a reader gone (| head): the normal exit reports nothing either
        sys.exit(code)
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except DecodeError as exc:
        _err("decode error: %s" % exc)
        return EXIT_DECODE_ERROR
    except KeyOverflow as exc:   # more inputs than keys have capture indices for
        _err(str(exc))
        return EXIT_BAD_INPUT
    except NoCaptureRead as exc:
        print("mqcodec: %s" % exc, file=sys.stderr)
        # no input could be opened: a file error; some were not captures: bad input
        return EXIT_FILE if exc.file_errors_only else EXIT_BAD_INPUT
    except EncodeError as exc:
        _err("encode error: %s" % exc)
        return EXIT_DECODE_ERROR
    except ModuleNotFoundError as exc:
        extra = EXTRA_MODULES.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        _err("%s needs %s, which is not installed: pip install 'mqcodec[%s]'"
             % ("--engine spark" if extra == "spark" else "this command", exc.name, extra))
        return EXIT_MISSING
    except BrokenPipeError:  # the reader went away (| head): not an error
        import os

        try:  # nothing more for stdout: the flush at exit must not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK
    except OSError as exc:
        _err(str(exc))
        return EXIT_FILE
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
