"""Shared fixtures: where the outside facts live (../shared) and tshark."""
from __future__ import annotations

import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MQCODEC_SHARED", ROOT.parent / "shared")).resolve()
VECTORS = SHARED / "vectors"
SEEDS = SHARED / "seeds"
CAPTURES = SHARED / "captures"


def pytest_report_header(config):
    return ["mqcodec shared data: %s (%s)" % (SHARED, "present" if SHARED.is_dir() else "MISSING"),
            "tshark: %s" % (shutil.which("tshark") or "absent")]


@pytest.fixture(scope="session")
def vectors() -> pathlib.Path:
    if not VECTORS.is_dir():
        pytest.fail("the shared test vectors are missing: expected %s" % VECTORS)
    return VECTORS


@pytest.fixture(scope="session")
def tshark() -> str:
    path = shutil.which("tshark")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("tshark is required in CI (make test installs it)")
        pytest.skip("tshark not installed")
    return path


#: Coverage lines of the IBM MQ constants cross-check against tshark
#: (tests/test_ibmmq_constants.py appends; printed after the run).
CONSTANTS_COVERAGE: list[str] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if CONSTANTS_COVERAGE:
        terminalreporter.section("IBM MQ constants vs tshark value_strings")
        for line in CONSTANTS_COVERAGE:
            terminalreporter.write_line(line)
