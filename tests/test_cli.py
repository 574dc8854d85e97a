"""The CLI's contract: one line on stderr and a non-zero status on bad input."""
import subprocess
import sys


def run(*args, input=None):
    return subprocess.run([sys.executable, "-m", "mqcodec", *args], capture_output=True, input=input)


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith(b"mqcodec ")


def test_missing_file_is_one_line(tmp_path):
    r = run("decode", "--protocol", "pcf", str(tmp_path / "nope.dat"))
    assert r.returncode != 0
    assert b"Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
