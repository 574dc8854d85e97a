"""The README runs as written.

Its fenced ``sh`` and ``python`` blocks are extracted from README.md and run
from a scratch folder laid out like a checkout (a link ``examples`` to the
checkout's examples/ and, beside the scratch checkout, ``shared`` linking to
../shared), with the virtualenv's ``mqcodec`` command first on PATH.  The
marker convention (an HTML comment on the line before a block, explained at
the top of the README):

* ``<!-- readme-test: skip (REASON) -->``: not run (setup, Spark);
* ``<!-- readme-test: file PATH -->``: the block must equal that file of the
  checkout (the Python tour is examples/tour.py), which is run.

The example files the tours name must exist, and examples/make_examples.py
must reproduce them byte for byte.
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, SHARED

README = ROOT / "README.md"
EXAMPLES = ROOT / "examples"
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!-- readme-test: (skip|file)\b\s*(.*?)\s*(-->)?$")


@dataclass
class Block:
    lang: str
    text: str
    line: int                 # 1-based line of the opening fence
    marker: str | None        # "skip", "file" or None
    argument: str             # the marker's reason or path


def readme_blocks(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise AssertionError("README.md line %d: unclosed code fence" % (start + 1))
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker, argument = None, ""
        mm = _MARKER.match(lines[k].strip()) if k >= 0 else None
        if mm:
            marker, argument = mm.group(1), mm.group(2)
            argument = re.sub(r"^\((.*)\)$", r"\1", argument).strip()
        blocks.append(Block(lang, "\n".join(lines[start + 1:j]) + "\n", start + 1, marker, argument))
        i = j + 1
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
RUN = [b for b in BLOCKS if b.lang in ("sh", "python") and b.marker != "skip"]


def test_marker_convention() -> None:
    assert any(b.lang == "python" for b in RUN) and any(b.lang == "sh" for b in RUN)
    for b in BLOCKS:
        assert b.lang in ("sh", "python"), "README.md line %d: a ```%s block: say sh or python" % (b.line, b.lang)
        if b.marker == "skip":
            assert b.argument, "README.md line %d: a skip marker gives its reason" % b.line
        if b.marker == "file":
            assert (ROOT / b.argument).is_file(), "README.md line %d: no file %s" % (b.line, b.argument)


def test_parser_sees_markers() -> None:
    # the extraction itself: markers attach to the next block only
    blocks = readme_blocks("<!-- readme-test: skip (x) -->\n```sh\nfalse\n```\n\n```python\nprint(1)\n```\n"
                           "<!-- readme-test: file examples/tour.py -->\n\n```python\nx\n```\n")
    assert [(b.lang, b.marker, b.argument, b.text) for b in blocks] == [
        ("sh", "skip", "x", "false\n"), ("python", None, "", "print(1)\n"),
        ("python", "file", "examples/tour.py", "x\n")]


@pytest.fixture()
def scratch(tmp_path: pathlib.Path) -> pathlib.Path:
    if not SHARED.is_dir():
        pytest.fail("the shared folder is missing: expected %s" % SHARED)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "examples").symlink_to(EXAMPLES, target_is_directory=True)
    (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
    return checkout


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _run(args: list[str], cwd: pathlib.Path, what: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, "%s failed (%d)\n--- stdout\n%s\n--- stderr\n%s" % (
        what, proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "python"], ids=lambda b: "line%d" % b.line)
def test_python_block(block: Block, scratch: pathlib.Path) -> None:
    if block.marker == "file":
        path = ROOT / block.argument
        assert block.text == path.read_text(encoding="utf-8"), (
            "README.md line %d differs from %s: paste the file into the README" % (block.line, block.argument))
        proc = _run([sys.executable, str(path)], scratch, block.argument)
    else:
        proc = _run([sys.executable, "-c", block.text], scratch, "README.md line %d" % block.line)
    if block.argument == "examples/tour.py":
        out = proc.stdout
        assert "MQCA_Q_MGR_NAME mq_mgr1" in out             # the PCF walk
        assert "payments-app MQSTR ['MQSTR']" in out         # MQMD, the RFH2's Format, body format
        assert '"MsgId": "0102030405060708' in out          # json_safe: bytes as hex
        assert "MQCFH" in out.splitlines()[-1]               # the DecodeError line


@pytest.mark.parametrize("block", [b for b in RUN if b.lang == "sh"], ids=lambda b: "line%d" % b.line)
def test_shell_block(block: Block, scratch: pathlib.Path) -> None:
    proc = _run(["bash", "-euo", "pipefail", "-c", block.text], scratch, "README.md line %d" % block.line)
    if "mqcodec route" in block.text and "route.svg" in block.text:
        svg = (scratch / "route.svg").read_text(encoding="utf-8")
        assert "<svg" in svg and "QM2" in svg
    if "mqcodec pcap2parquet" in block.text:
        messages = pq.read_table(scratch / "out" / "mq_messages")
        assert messages.num_rows > 0
    if "mqcodec decode --protocol pcf" in block.text:
        assert "MQCFT_STATISTICS" in proc.stdout


def test_example_files_named_by_the_readme_exist() -> None:
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"examples/([\w.-]+\.(?:bin|dat|py))", text))
    assert {"statistics_q.dat", "message.bin", "trace-route-reply.bin", "tour.py"} <= named
    for name in named:
        assert (EXAMPLES / name).is_file(), "README names examples/%s, which does not exist" % name


def test_examples_regenerate_byte_for_byte(tmp_path: pathlib.Path) -> None:
    _run([sys.executable, str(EXAMPLES / "make_examples.py"), "--shared", str(SHARED), "-o", str(tmp_path)],
         tmp_path, "examples/make_examples.py")
    made = sorted(p.name for p in tmp_path.iterdir())
    shipped = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".bin", ".dat"))
    assert made == shipped
    for name in made:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes(), name


def test_a_folder_named_mqcodec_does_not_shadow_the_package(tmp_path: pathlib.Path) -> None:
    # Python started in the folder that holds a checkout named "mqcodec" (README, "Installing
    # by hand"): with the Makefile's editable_mode=strict install the package still wins;
    # with setuptools' default editable finder this folder became a namespace package.
    (tmp_path / "mqcodec" / "codec").mkdir(parents=True)
    proc = _run([sys.executable, "-c", "import mqcodec; print(mqcodec.__file__); print(mqcodec.DecodeError)"],
                tmp_path, "import mqcodec beside a folder named mqcodec")
    where, error = proc.stdout.splitlines()
    assert not where.startswith(str(tmp_path)) and error == "<class 'mqcodec.errors.DecodeError'>"
