"""The type checks CI runs: ``mypy -p mqcodec`` (configuration: [tool.mypy]
in pyproject.toml) and ``mypy --strict examples/tour.py`` (the README's Python
tour, as a user's script sees the installed package).

Both need mqcodec installed where mypy finds it: the Makefile's editable
install (``editable_mode=strict``) or a regular install.  Each run uses a
fresh cache folder, so a stale cache cannot hide an error.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("mypy", reason="mypy is in the test extra (pip install -e '.[test]')")


def _mypy(args: list[str], cache: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def _passes(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0 and "Success: no issues found" in proc.stdout, (
        "mypy failed\n" + proc.stdout[-6000:] + proc.stderr[-2000:])


def test_package_is_visible_to_mypy(tmp_path: pathlib.Path) -> None:
    # an install mypy cannot see makes the checks below vacuous: "no py.typed", or nothing to check
    probe = tmp_path / "probe.py"
    probe.write_text("import mqcodec\nreveal_type(mqcodec.ibmmq.decode_pcf)\n")
    proc = _mypy([str(probe)], tmp_path / "cache")
    assert "def (data: bytes" in proc.stdout and "-> mqcodec.ibmmq.pcf.PcfMessage" in proc.stdout, proc.stdout + proc.stderr


def test_mypy_package(tmp_path: pathlib.Path) -> None:
    _passes(_mypy(["-p", "mqcodec"], tmp_path / "cache"))


def test_mypy_strict_tour(tmp_path: pathlib.Path) -> None:
    _passes(_mypy(["--strict", "examples/tour.py"], tmp_path / "cache"))


def test_strict_mypy_catches_api_misuse(tmp_path: pathlib.Path) -> None:
    # the public API is typed, not Any: mistakes a user can make are reported
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from mqcodec import ibmmq, msmq\n"
        "ibmmq.decode_pcf('text, not bytes')\n"                             # arg-type
        "pkt = msmq.decode_packet(b'')\n"
        "print(pkt.UserHeader)\n"                                           # a PingPacket has none
        "msg = ibmmq.decode_message(b'', encoding='big')\n"                 # an int MQENC
        "d: dict[str, str] = msg.to_dict(json_safe=1)\n"                    # json_safe is a bool
        "msg.md.PutApplName\n"                                             # dynamic field: fine (Any)
    )
    proc = _mypy(["--strict", str(bad)], tmp_path / "cache")
    assert proc.returncode == 1, proc.stdout
    out = proc.stdout
    assert 'bad.py:2: error: Argument 1 to "decode_pcf" has incompatible type "str"' in out, out
    assert 'bad.py:4: error: Item "PingPacket" of "Packet | PingPacket" has no attribute "UserHeader"' in out, out
    assert "bad.py:5: error:" in out and '"encoding"' in out, out
    assert "bad.py:6: error:" in out and "json_safe" in out, out
    assert "bad.py:7:" not in out, out
