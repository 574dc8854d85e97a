"""The command line's contract beyond decoding: help texts and defaults, exit
codes, option values checked by argparse (one line, exit 2, both capture
engines), stdout for results only, progress bars on a terminal, the Spark
extra missing."""
from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import pty
import re
import subprocess
import sys

import pytest

from conftest import CAPTURES, ROOT

from mqcodec import cli

JMS = CAPTURES / "ibmmq_jms_client_1414.pcap"
ENGINES = ["c", "py"]


def run(*args, input=None, env=None):
    return subprocess.run([sys.executable, "-m", "mqcodec", *map(str, args)], capture_output=True, input=input,
                          env=env)


def one_line_error(r, code):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert b"Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stdout == b""


@pytest.fixture(scope="module")
def engines_available():
    try:
        import mqcodec._ext.capture_core  # noqa: F401
    except ImportError:
        return ["py"]
    return ENGINES


def _engine(impl, engines_available):
    if impl not in engines_available:
        pytest.skip("the compiled capture core is not built")


# ---------------------------------------------------------------------------
# help
# ---------------------------------------------------------------------------
def _subparsers():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


def test_every_option_has_help_and_shows_its_default():
    parser, commands = _subparsers()
    assert set(commands) == {"decode", "show", "route", "pcap2parquet", "columns", "synth", "demo"}
    for name, sp in [("mqcodec", parser)] + list(commands.items()):
        text = sp.format_help()
        flat = " ".join(text.split())
        for action in sp._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help, (name, action.dest)
            if not action.option_strings or isinstance(action, argparse._VersionAction):
                continue
            # the option's help line, as printed, says its default (or that it is required)
            helptext = " ".join(sp._get_formatter()._get_help_string(action).split())
            assert "default" in helptext or "(required)" in helptext, (name, action.option_strings, helptext)
            assert helptext.replace("%%", "%") in flat.replace("%%", "%") or helptext[:40] in flat, (name, action.dest)
        assert "exit status:" in text and "130" in text, name


@pytest.mark.parametrize("command, expected", [
    ("pcap2parquet", ["--engine", "(default: local)", "--capture-impl", "--chunk", "(default: 20000)",
                      "--mq-port", "(default: 1414)", "--buffer-budget", "(default: 268435456)"]),
    ("synth", ["--seed", "(default: 1)", "--messages", "(default: 100)"]),
    ("decode", ["--format", "(default: json)", "--ccsid", "--encoding", "(default: detected)", "mqcodec show"]),
    ("show", ["--frame", "--filter", "--format", "(default: text)", 'kind == "MQPUT" and tcp_stream == 3']),
])
def test_help_texts(command, expected):
    r = run(command, "--help")
    assert r.returncode == 0 and r.stderr == b""
    flat = " ".join(r.stdout.decode().split())
    for text in expected:
        assert text in flat, (command, text)


def test_exit_codes_documented_once_each_in_help_and_readme():
    readme = (ROOT / "README.md").read_text()
    doc = (ROOT / "docs" / "cli.md").read_text()
    for code, meaning in cli.EXIT_CODES.items():
        assert re.search(r"^\|\s*%d\s*\|" % code, readme, re.M), code
        assert re.search(r"^\|\s*%d\s*\|" % code, doc, re.M), code
    r = run("--help")
    lines = [line.split(None, 1) for line in r.stdout.decode().split("exit status:")[1].splitlines() if line.strip()]
    codes = [int(c) for c, _ in lines]
    assert codes == sorted(set(codes)) == sorted(cli.EXIT_CODES)


# ---------------------------------------------------------------------------
# option values: one line from argparse, exit 2 -- both capture engines
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("impl", ENGINES)
@pytest.mark.parametrize("option, value, says", [
    ("--mq-port", "70000", "not a TCP port (0-65535)"),
    ("--mq-port", "-1", "not a TCP port"),
    ("--msmq-port", "65536", "not a TCP port"),
    ("--mq-port", "x", "'x' is not an integer"),
    ("--chunk", "0", "not a positive integer"),
    ("--chunk-bytes", "-1", "not a positive integer"),
    ("--buffer-budget", "-5", "not a positive integer"),
    ("--buffer-budget", "1.5", "is not an integer"),
    ("--row-groups-per-file", "-1", "not a non-negative integer"),
    ("--row-group-rows", "0", "not a positive integer"),
    ("--max-connections", "0", "not a positive integer"),
    ("--max-closed", "-1", "not a non-negative integer"),
    ("--max-reassembly-bytes", "0", "not a positive integer"),
    ("--max-reassembly-segments", "2.5", "is not an integer"),
    ("--tables", "mq_calls,calls", "'calls' names no table (the tables are mq_messages,"),
    ("--tables", ",", "names no table"),
    ("--compression", "lz4", "invalid choice: 'lz4' (choose from"),
])
def test_pcap2parquet_rejects_bad_values(tmp_path, impl, option, value, says, engines_available):
    _engine(impl, engines_available)
    r = run("pcap2parquet", JMS, "-o", tmp_path / "out", "--capture-impl", impl, option, value)
    one_line_error(r, 2)
    assert says.encode() in r.stderr and option.encode() in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("impl", ENGINES)
def test_pcap2parquet_takes_edge_values(tmp_path, impl, engines_available):
    _engine(impl, engines_available)
    r = run("pcap2parquet", JMS, "-o", tmp_path, "--capture-impl", impl, "--mq-port", "65535", "--mq-port", "1414",
            "--msmq-port", "0", "--chunk", "1", "--chunk-bytes", "1", "--buffer-budget", "1048576",
            "--row-groups-per-file", "1", "--row-group-rows", "1")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["messages_by_protocol_and_kind"]["mq/MQPUT"] == 8
    # a part file per row group, a row group per chunk: -c000, -c001, ... (with --chunk-bytes 1
    # both pipelines flush every message: the compiled core's batches go to the writers a
    # chunk's bytes at a time)
    import pyarrow.parquet as pq

    files = sorted((tmp_path / "mq_messages").glob("*.parquet"))
    assert [f.name for f in files] == ["part-00000-c%03d.parquet" % i for i in range(len(files))]
    assert all(pq.ParquetFile(f).metadata.num_row_groups == 1 for f in files)
    assert len(files) > 1
    assert sum(pq.ParquetFile(f).metadata.num_rows for f in files) == report["summary"]["messages"] + \
        report["summary"].get("errors", 0)


def test_every_conversion_option_is_on_the_command_line():
    """The CLI builds the one options object both engines take: each field of
    ConvertOptions but ``impl`` (the batch decoders' choice, an API knob) is
    set from its flag, to the value given."""
    import dataclasses

    from mqcodec.convert.options import ConvertOptions

    args = cli.build_parser().parse_args([
        "pcap2parquet", "x.pcap", "-o", "out", "--mq-port", "1415", "--msmq-port", "1802", "--raw", "--ports-only",
        "--chunk", "7", "--chunk-bytes", "4096", "--row-groups-per-file", "3", "--row-group-rows", "11",
        "--buffer-budget", "65536",
        "--max-connections", "5", "--max-closed", "0", "--max-reassembly-bytes", "1000",
        "--max-reassembly-segments", "9", "--capture-impl", "py", "--threads", "2", "--tables", "mq_calls",
        "--columns", "mq_calls=ts", "--compression", "snappy"])
    got = cli._options(args)
    assert got == ConvertOptions(
        mq_ports=(1415,), msmq_ports=(1802,), raw=True, detect_by_content=False, chunk_messages=7, chunk_bytes=4096,
        row_groups_per_file=3, row_group_rows=11, buffer_budget=65536, max_connections=5, max_closed=0,
        max_reassembly_bytes=1000, max_reassembly_segments=9, capture_impl="py", threads=2,
        tables=("mq_calls",), columns=("mq_calls.ts",), compression="snappy")
    default = ConvertOptions()
    unset = {f.name for f in dataclasses.fields(ConvertOptions)
             if getattr(got, f.name) == getattr(default, f.name)}
    assert unset == {"impl"}
    # and the flags' defaults are the options' defaults (the CLI spells them again, so that
    # parsing the command line does not import the conversion)
    assert cli._options(cli.build_parser().parse_args(["pcap2parquet", "x.pcap", "-o", "out"])) == default
    # and its choices are the options' (spelled again for the same reason)
    from mqcodec.convert.options import COMPRESSIONS

    choices = {a.dest: a.choices for a in cli.build_parser()._subparsers._group_actions[0].choices[
        "pcap2parquet"]._actions}
    assert tuple(choices["compression"]) == COMPRESSIONS


def test_split_size_is_for_the_spark_engine(tmp_path):
    r = run("pcap2parquet", JMS, "-o", tmp_path / "out", "--split-size", "65536")
    one_line_error(r, 2)
    assert b"--split-size is for --engine spark" in r.stderr
    assert not (tmp_path / "out").exists()
    one_line_error(run("pcap2parquet", JMS, "-o", tmp_path / "out", "--engine", "spark", "--split-size", "0"), 2)


@pytest.mark.parametrize("args, says", [
    (["decode", "--protocol", "pcf", "--ccsid", "99999999999", "x"], "not a CCSID (1-65535)"),
    (["decode", "--protocol", "pcf", "--ccsid", "0", "x"], "not a CCSID"),
    (["synth", "-o", "x.pcap", "--seed", "-1"], "not a non-negative integer"),
    (["synth", "-o", "x.pcap", "--messages", "-3"], "not a non-negative integer"),
    (["show", "x.pcap", "--frame", "0"], "not a frame number"),
    (["show", "x.pcap", "--mq-port", "99999"], "not a TCP port"),
])
def test_other_commands_reject_bad_values(tmp_path, args, says):
    r = run(*args)
    one_line_error(r, 2)
    assert says.encode() in r.stderr
    assert not (tmp_path / "x.pcap").exists()


def test_ccsid_in_range_is_used(vectors):
    path = next(iter(sorted((vectors / "ibmmq").glob("*.dat"))))
    r = run("decode", "--protocol", "pcf", "--ccsid", "65535", path)
    assert r.returncode in (0, 2) and b"Traceback" not in r.stderr
    assert b"argument --ccsid" not in r.stderr


# ---------------------------------------------------------------------------
# decode given a capture; file errors
# ---------------------------------------------------------------------------
def _pcapng_header() -> bytes:
    import struct

    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    return shb


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "gzip"])
def test_decode_on_a_capture_points_to_show(tmp_path, kind):
    data = JMS.read_bytes()
    if kind == "pcapng":
        data = _pcapng_header()
    elif kind == "gzip":
        data = gzip.compress(data)
    path = tmp_path / ("cap." + kind)
    path.write_bytes(data)
    for protocol in ("mq", "pcf", "msmq"):
        r = run("decode", "--protocol", protocol, path)
        one_line_error(r, 2)
        assert b"mqcodec show" in r.stderr and str(path).encode() in r.stderr
        assert (b"gzip" if kind == "gzip" else kind.encode()) in r.stderr
    r = run("decode", "--protocol", "mq", "-", input=data)
    one_line_error(r, 2)
    assert b"standard input" in r.stderr and b"mqcodec show" in r.stderr


@pytest.mark.parametrize("args", [
    ["decode", "--protocol", "mq", "{missing}"],
    ["show", "{missing}"],
    ["pcap2parquet", "{missing}", "-o", "{out}"],
    ["demo", "--shared", "{missing}"],
])
def test_file_errors_exit_3(tmp_path, args):
    args = [a.format(missing=tmp_path / "nope.pcap", out=tmp_path / "out") for a in args]
    r = run(*args)
    one_line_error(r, 3)


def test_bad_data_exits_2(tmp_path):
    path = tmp_path / "garbage.pcap"
    path.write_bytes(b"not a capture at all" * 10)
    one_line_error(run("pcap2parquet", path, "-o", tmp_path / "out", "--capture-impl", "py"), 2)


# ---------------------------------------------------------------------------
# stdout for results, stderr for diagnostics
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("impl", ENGINES)
def test_pcap2parquet_stdout_is_the_json_result_only(tmp_path, impl, engines_available):
    _engine(impl, engines_available)
    r = run("pcap2parquet", JMS, "-o", tmp_path, "--capture-impl", impl)
    assert r.returncode == 0
    assert set(json.loads(r.stdout)) == {"summary", "messages_by_protocol_and_kind", "calls_by_type",
                                         "failed_calls_by_reason"}
    assert r.stderr == b""  # not a terminal: no progress bar


def test_the_command_ends_its_process_when_its_work_is_done(tmp_path):
    """``mqcodec`` (cli.run) ends the process as soon as main returns, without
    the interpreter's teardown: the status is main's, everything written to
    stdout and stderr arrives (large outputs too), the files are complete; a
    reader that goes away is no error; argparse's exits are as before."""
    out = tmp_path / "out"
    r = run("pcap2parquet", JMS, "-o", out, "--threads", "2")
    assert r.returncode == 0 and json.loads(r.stdout)["summary"]["frames"] == 695
    import pyarrow.parquet as pq

    assert pq.read_table(out / "mq_calls").num_rows > 200   # footers written: the files were closed
    big = run("show", JMS, "--format", "json")                # every unit: far more than a pipe buffer
    assert big.returncode == 0 and len(big.stdout) > 1 << 16
    units = json.loads(big.stdout)                            # the whole document arrived
    assert len(units) > 200 and units[-1]["header"]["tcp_stream"] is not None
    p = subprocess.Popen([sys.executable, "-m", "mqcodec", "show", str(JMS), "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()                                          # | head -1
    assert p.wait(timeout=120) == 0 and b"Traceback" not in p.stderr.read()
    p.stderr.close()
    one_line_error(run("pcap2parquet", JMS), 2)               # argparse: -o missing
    code = "import sys; from mqcodec import cli; sys.argv = ['mqcodec', 'show', %r, '--frame', '27']; cli.run()"
    r = subprocess.run([sys.executable, "-c", code % str(JMS)], capture_output=True)
    assert r.returncode == 0 and b"Frame 27, " in r.stdout


def test_synth_reports_on_stderr(tmp_path):
    r = run("synth", "-o", tmp_path / "s.pcap", "--messages", "5")
    assert r.returncode == 0 and r.stdout == b""
    assert b"wrote" in r.stderr and len(r.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------
# progress bars (only on a terminal)
# ---------------------------------------------------------------------------
def run_with_tty_stderr(*args, columns=0):
    """Run the CLI with stderr on a pseudo-terminal (``columns`` wide: 0, a terminal
    that reports no size); (returncode, stdout, tty text)."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "mqcodec", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            piece = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not piece:
            break
        chunks.append(piece)
    os.close(master)
    out = p.stdout.read()
    p.stdout.close()
    return p.wait(), out, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("impl", ENGINES)
def test_pcap2parquet_progress_bar_on_a_terminal(tmp_path, impl, engines_available):
    _engine(impl, engines_available)
    code, out, tty = run_with_tty_stderr("pcap2parquet", JMS, "-o", tmp_path, "--capture-impl", impl)
    assert code == 0, tty
    json.loads(out)  # stdout still holds only the result
    size = JMS.stat().st_size
    assert "ibmmq_jms_client_1414.pcap: 100%" in tty
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", tty), tty  # elapsed<ETA
    assert "695 frames" in tty  # tshark counts 695 frames in this capture
    assert "%.0fk/%.0fk" % (size / 1024, size / 1024) in tty  # bytes of the file: 184k/184k


def test_synth_progress_bar_on_a_terminal(tmp_path):
    code, out, tty = run_with_tty_stderr("synth", "-o", tmp_path / "s.pcap", "--messages", "40", columns=120)
    assert code == 0 and out == b""
    # 40 IBM MQ application messages, then the MSMQ sessions' 20 user messages
    assert re.search(r"synth: 100%.*60/60", tty), tty
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", tty)
    assert "wrote" in tty


def test_synth_progress_counts_the_simulated_messages(tmp_path):
    """progress(done, total): done climbs to total, the IBM MQ application messages
    plus the MSMQ user messages the capture holds."""
    from mqcodec.show import iter_units
    from mqcodec.synth import write_capture

    calls = []
    write_capture(str(tmp_path / "s.pcap"), seed=4, messages=120, progress=lambda d, t: calls.append((d, t)))
    done = [d for d, _ in calls]
    total = {t for _, t in calls}
    assert done == sorted(done) and len(total) == 1 and done[-1] == total.pop()
    user_messages = sum(1 for u in iter_units(str(tmp_path / "s.pcap")) if u.kind == "UserMessage")
    assert done[-1] == 120 + user_messages and user_messages > 0


@pytest.fixture(scope="module")
def big_capture(tmp_path_factory):
    from mqcodec.synth import write_capture

    path = tmp_path_factory.mktemp("big") / "big.pcap"
    write_capture(str(path), seed=2, messages=500)  # > 1 MiB: several reads of the pure reader
    return path


@pytest.mark.parametrize("impl", ENGINES)
def test_both_engines_report_byte_positions(tmp_path, monkeypatch, big_capture, impl, engines_available):
    """The bar advances by input bytes while the capture is converted, up to its size."""
    _engine(impl, engines_available)
    from mqcodec import progress
    from mqcodec.convert import ConvertOptions, compiled, convert

    positions = []
    real = progress.Bar.update_to
    monkeypatch.setattr(progress.Bar, "update_to", lambda self, n: (positions.append(n), real(self, n))[1])
    monkeypatch.setattr(compiled, "CHUNK", 256 << 10)
    monkeypatch.setattr(compiled, "TAKE_BYTES", 256 << 10)   # the bar moves at each take
    convert([str(big_capture)], str(tmp_path), ConvertOptions(capture_impl=impl), progress=True)
    size = big_capture.stat().st_size
    assert size > 1 << 20
    assert positions == sorted(positions) and positions[-1] == size
    assert any(0 < p < size for p in positions), positions


def test_bar_never_goes_back_or_past_total():
    import io

    from mqcodec.progress import Bar

    buf = io.StringIO()
    bar = Bar(total=100, desc="t", stream=buf, mininterval=0)
    bar.update_to(40)
    bar.update_to(30)
    assert bar.n == 40
    bar.update_to(500)
    assert bar.n == 100
    bar.close()
    assert "100%" in buf.getvalue() and "40%" in buf.getvalue()


def test_no_bar_when_stderr_is_not_a_terminal():
    import io

    from mqcodec.progress import enabled

    assert enabled(io.StringIO()) is False


# ---------------------------------------------------------------------------
# Spark: the extra missing; the JVM's output kept off stdout
# ---------------------------------------------------------------------------
BLOCK_PYSPARK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        return None
sys.meta_path.insert(0, _Block())
from mqcodec.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_spark_engine_without_pyspark_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-c", BLOCK_PYSPARK, "pcap2parquet", str(JMS), "-o", str(tmp_path / "o"),
                        "--engine", "spark"], capture_output=True)
    one_line_error(r, 4)
    assert b"pip install 'mqcodec[spark]'" in r.stderr and b"pyspark" in r.stderr


def test_other_missing_modules_are_not_hidden():
    """Only the optional extras' modules get the one-line message."""
    code = BLOCK_PYSPARK.replace('("pyspark", "py4j")', '("mqcodec_nonexistent",)').replace(
        "from mqcodec.cli import main", "import mqcodec.cli as c\nc._cmd_synth = lambda a: __import__('mqcodec_nonexistent')\nmain = c.main")
    r = subprocess.run([sys.executable, "-c", code, "synth", "-o", "x"], capture_output=True)
    assert r.returncode == 1 and b"Traceback" in r.stderr


def test_jvm_stdout_goes_to_stderr():
    """What a child process started inside the session's creation prints lands on stderr."""
    code = ("import os, sys\nfrom mqcodec.spark.session import _stdout_to_stderr\n"
            "print('before', flush=True)\nwith _stdout_to_stderr():\n    os.system('echo from-the-child')\n"
            "print('after')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert r.returncode == 0
    assert r.stdout.split() == [b"before", b"after"]
    assert b"from-the-child" in r.stderr


def test_session_turns_console_progress_off():
    from mqcodec.spark.session import ADAPTER_CONF

    assert ADAPTER_CONF["spark.ui.showConsoleProgress"] == "false"


def test_session_gives_the_executors_this_process_arrow_pool(monkeypatch):
    """The executors' Python workers take Arrow's buffers from the pool the
    driver's process uses (the mqcodec command's jemalloc), unless the
    caller's conf says otherwise; nothing is set when the process sets none."""
    from mqcodec.spark.session import session_conf

    key = "spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL"
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert key not in session_conf("spark://127.0.0.1:7077")
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    assert session_conf("spark://127.0.0.1:7077")[key] == "jemalloc"
    assert session_conf(None, {key: "system"})[key] == "system"
    assert session_conf("local[2]")["spark.driver.host"] == "127.0.0.1"
    assert "spark.driver.host" not in session_conf(None)


@pytest.mark.spark
def test_spark_engine_stdout_is_the_json_result_only(tmp_path):
    pytest.importorskip("pyspark")
    r = run("pcap2parquet", JMS, "-o", tmp_path, "--engine", "spark", "--master", "local[1]")
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)  # nothing else on stdout
    assert report["summary"]["engine"] == "spark" and report["messages_by_protocol_and_kind"]["mq/MQPUT"] == 8
    assert b"[Stage" not in r.stderr  # console progress bars are off
