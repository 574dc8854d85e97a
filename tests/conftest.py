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


# ---------------------------------------------------------------------------
# Dual implementations (multidict style): tests that take ``impl`` run once
# on the compiled core ("c") and once on the pure-Python one ("py").
# ``--pure-only`` (or MQCODEC_PURE=1) deselects the compiled half.
# ---------------------------------------------------------------------------

def pytest_addoption(parser):
    parser.addoption("--pure-only", action="store_true", default=False,
                     help="run dual-implementation tests on the pure-Python implementation only")


def _pure_only(config) -> bool:
    from mqcodec._impl import pure_forced  # the one place that reads MQCODEC_PURE

    return bool(config.getoption("--pure-only", default=False)) or pure_forced()


@pytest.fixture(scope="session", params=["c", "py"])
def impl(request) -> str:
    if request.param == "c":
        try:
            import mqcodec._ext.pcf_batch  # noqa: F401
        except ImportError:
            if os.environ.get("CI"):
                pytest.fail("the compiled core is required in CI (pip install -e . builds it)")
            pytest.skip("compiled core not built")
    return request.param


def pytest_collection_modifyitems(config, items):
    if not _pure_only(config):
        return
    keep, drop = [], []
    for item in items:
        cs = getattr(item, "callspec", None)
        (drop if cs is not None and cs.params.get("impl") == "c" else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# ---------------------------------------------------------------------------
# Spark (tests marked ``spark``; deselect with ``-m "not spark"``).  ONE
# local session for the whole run: starting one costs ~15 s.
# ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def spark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pyspark is required in CI (make setup installs .[spark])")
        pytest.skip("pyspark not installed (pip install -e '.[spark]')")
    import sys

    from mqcodec.spark.session import get_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = get_session(
        "local[2]",
        app_name="mqcodec-tests",
        conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            # small batches: several Arrow batches per partition in the tests
            "spark.sql.execution.arrow.maxRecordsPerBatch": "64",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
