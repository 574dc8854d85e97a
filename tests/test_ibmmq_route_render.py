"""mqcodec route --format svg|png: Graphviz runs only on graphs within a size
cap and under a time limit; either failing, the route is written as text with
a one-line note on standard error."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from mqcodec.ibmmq import constants as C
from mqcodec.ibmmq.pcf import PcfMessage, encode_pcf
from mqcodec.ibmmq.route import (DOT_TIMEOUT, MAX_GRAPH_EDGES, GraphTooLarge, RenderTimeout, build_route,
                                 check_graph_size, render_dot, render_image, route_graph)
from mqcodec.synth import START_NS, activity, _op


def long_reply(activities: int, queue_managers: int = 20) -> PcfMessage:
    """A trace-route reply of ``activities`` MCA activities hopping among
    ``queue_managers`` queue managers: receive + put, then get + send."""
    acts = []
    for i in range(activities):
        qm = "QM%d" % ((i // 2) * 7 % queue_managers + 1)
        t = START_NS + i * 1_000_000_000
        if i % 2 == 0:
            acts.append(activity("amqrmppa", C.MQAT_QMGR, "Receiving Message Channel Agent",
                                  _op(C.MQOPER_RECEIVE, qm, t, channel="CH.%d" % i),
                                  _op(C.MQOPER_PUT, qm, t, q="XMITQ.%d" % i)))
        else:
            acts.append(activity("amqrmppa", C.MQAT_QMGR, "Sending Message Channel Agent",
                                  _op(C.MQOPER_GET, qm, t, q="XMITQ.%d" % (i - 1)),
                                  _op(C.MQOPER_SEND, qm, t, channel="CH.%d" % (i + 1))))
    return PcfMessage.new(C.MQCFT_TRACE_ROUTE, C.MQCMD_TRACE_ROUTE, acts)


def route_cli(*args, timeout=120, env=None):
    return subprocess.run([sys.executable, "-m", "mqcodec", "route", *args], capture_output=True, timeout=timeout,
                          env=env)


@pytest.fixture(scope="module")
def reply300(tmp_path_factory):
    f = tmp_path_factory.mktemp("route") / "reply300.pcf"
    f.write_bytes(encode_pcf(long_reply(300)))
    return f


def test_graph_size_counts_and_cap_boundary():
    route = build_route([long_reply(300)])
    g = route_graph(route)
    assert len(g.nodes) == 20 and len(g.edges) == 149   # a hop between each sender and the next receiver
    assert check_graph_size(route, 20, 149) == (20, 149)
    with pytest.raises(GraphTooLarge, match="149 hops, more than the cap of 148"):
        check_graph_size(route, 20, 148)
    with pytest.raises(GraphTooLarge, match="20 queue-manager nodes, more than the cap of 19"):
        check_graph_size(route, 19, 0)
    assert check_graph_size(route, 0, 0) == (20, 149)      # 0: no cap
    assert MAX_GRAPH_EDGES < 149 and DOT_TIMEOUT == 20


def test_300_activity_reply_falls_back_to_text(reply300, tmp_path):
    out = tmp_path / "route.svg"
    r = route_cli("--format", "svg", "-o", str(out), str(reply300))
    assert r.returncode == 0
    note = r.stderr.decode().splitlines()
    assert len(note) == 1 and "149 hops, more than the cap of %d" % MAX_GRAPH_EDGES in note[0]
    assert "writing the route as text instead of SVG" in note[0]
    text = out.read_bytes()
    assert text.startswith(b"Trace-route reply: 300 activities listed") and text.count(b"\nActivity ") == 300
    r = route_cli("--format", "png", "--max-edges", "148", str(reply300))
    assert r.returncode == 0 and b"cap of 148" in r.stderr and r.stdout.startswith(b"Trace-route reply")


def _fake_dot(tmp_path, seconds: float):
    """A ``dot`` on PATH that never finishes in time (it sleeps)."""
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "dot"
    exe.write_text("#!%s\nimport sys, time\nsys.stdin.read()\ntime.sleep(%s)\nsys.stdout.write('<svg/>')\n"
                   % (sys.executable, seconds))
    exe.chmod(0o755)
    return dict(os.environ, PATH=str(d) + os.pathsep + os.environ["PATH"])


def test_timeout_kills_dot_and_falls_back(tmp_path, monkeypatch):
    env = _fake_dot(tmp_path, 60)
    monkeypatch.setenv("PATH", env["PATH"])
    start = time.monotonic()
    with pytest.raises(RenderTimeout, match="did not finish within 0.5 s"):
        render_image("digraph { a -> b }", "svg", timeout=0.5)
    assert time.monotonic() - start < 30      # killed, not waited for (the fake sleeps 60 s)
    f = tmp_path / "small.pcf"
    f.write_bytes(encode_pcf(long_reply(4)))
    r = route_cli("--format", "svg", "--dot-timeout", "0.5", str(f), timeout=45, env=env)
    assert r.returncode == 0
    note = r.stderr.decode().splitlines()
    assert note == ["mqcodec: Graphviz dot did not finish within 0.5 s; writing the route as text instead of SVG"]
    assert r.stdout.startswith(b"Trace-route reply: 4 activities listed")


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz not installed")
def test_real_dot_timeout_on_an_uncapped_300_activity_reply(reply300):
    """No cap, a 1 ms limit (no dot starts and lays out 300 activities in that;
    0.05 s was met once on a quick machine): the real dot is stopped and text is
    written."""
    r = route_cli("--format", "svg", "--max-edges", "0", "--max-nodes", "0", "--dot-timeout", "0.001",
                  str(reply300), timeout=60)
    assert r.returncode == 0 and b"did not finish within 0.001 s" in r.stderr
    assert r.stdout.count(b"\nActivity ") == 300


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz not installed")
def test_within_the_caps_the_picture_is_drawn(tmp_path):
    f = tmp_path / "r.pcf"
    f.write_bytes(encode_pcf(long_reply(40)))
    r = route_cli("--format", "svg", str(f))
    assert r.returncode == 0 and r.stderr == b""
    assert b"<svg" in r.stdout and r.stdout.count(b'class="edge"') == 19
    r = route_cli("--format", "png", str(f))
    assert r.returncode == 0 and r.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    assert render_image(render_dot(build_route([long_reply(40)])), "svg", timeout=None).count(b'class="node"') == 20
