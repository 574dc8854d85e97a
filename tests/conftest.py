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
#: the [MS-MQQB] 4.1 example frames under VECTORS / "msmq"
EC_REQ = "4.1.3_establish_connection_request.bin"
EC_RSP = "4.1.4_establish_connection_response.bin"
CP_REQ = "4.1.5_connection_parameters_request.bin"
CP_RSP = "4.1.6_connection_parameters_response.bin"
UM_222 = "4.1.7_user_message_first_222_bytes.bin"
ACK = "4.1.8_session_ack.bin"


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
#: (tests/test_ibmmq_constants.py appends; printed after the run; under pytest-xdist a
#: worker hands its lines to the controlling process when it ends).
CONSTANTS_COVERAGE: list[str] = []


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)   # (a pytest-xdist worker)
    if workeroutput is not None:
        workeroutput["constants_coverage"] = list(CONSTANTS_COVERAGE)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    CONSTANTS_COVERAGE.extend(getattr(node, "workeroutput", {}).get("constants_coverage", ()))


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


@pytest.hookimpl(tryfirst=True)   # (before pytest-xdist's, which reads the groups)
def pytest_collection_modifyitems(config, items):
    # ``make test`` runs two pytest-xdist workers (--dist loadgroup); a group runs on one:
    # every test of Spark, so that one SparkSession and one test cluster serve them all, and
    # test_packaging.py, whose builds write into the checkout (egg-info, the sdist's tree)
    for item in items:
        if item.get_closest_marker("spark") is not None or {"spark", "spark_cluster"} & set(
                getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif item.path.name == "test_packaging.py":
            item.add_marker(pytest.mark.xdist_group("packaging"))
    if not _pure_only(config):
        return
    keep, drop = [], []
    for item in items:
        cs = getattr(item, "callspec", None)
        (drop if cs is not None and cs.params.get("impl") == "c" else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


#: why the groups do not hold, when they do not (pytest_collection_finish)
_GROUPS_LOST: list[str] = []


def pytest_collection_finish(session):
    """Under ``--dist loadgroup``, the groups above hold: pytest-xdist puts a test's
    group in its node id, which some pytest versions ignore (pytest-dev/pytest-xdist#1386);
    the tests would then be spread one by one, two Spark sessions and two builds at once."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if lost:   # (raised here, a worker's error would reach the terminal without its message)
        _GROUPS_LOST.append("pytest-xdist --dist loadgroup does not group the tests with pytest %s "
                            "(pytest-dev/pytest-xdist#1386; tests/conftest.py): %s" % (pytest.__version__, lost[0]))


def pytest_runtest_setup(item):
    if _GROUPS_LOST:
        pytest.fail(_GROUPS_LOST[0], pytrace=False)


# ---------------------------------------------------------------------------
# Spark (tests marked ``spark``; deselect with ``-m "not spark"``).  ONE
# SparkSession at a time (a process has one SparkContext): ``local[2]``, or,
# for tests parametrized ``@pytest.mark.parametrize("spark", ["local",
# "cluster"], indirect=True)``, an application on the standalone cluster of
# tests/spark_cluster.py (started once per run, when first needed).  pytest
# groups the tests by session, so the session changes about twice a run.
# ---------------------------------------------------------------------------

def _need_pyspark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("pyspark is required in CI (make setup installs .[spark])")
        pytest.skip("pyspark not installed (pip install -e '.[spark]')")


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone master and two workers on 127.0.0.1 (tests/spark_cluster.py)."""
    _need_pyspark()
    from spark_cluster import StandaloneCluster

    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark(request):
    _need_pyspark()
    import sys

    from mqcodec.spark.session import get_session

    which = getattr(request, "param", "local")
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # small batches: several Arrow batches per partition in the tests
        "spark.sql.execution.arrow.maxRecordsPerBatch": "64",
    }
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if which == "cluster":
        cluster = request.getfixturevalue("spark_cluster")
        conf.update(cluster.app_conf)
        master = cluster.url
    elif which == "local":
        master = "local[2]"
    else:
        raise ValueError("spark fixture: local or cluster, not %r" % (which,))
    session = get_session(master, app_name="mqcodec-tests-%s" % which, conf=conf)
    session.sparkContext.setLogLevel("ERROR")
    if which == "cluster":  # executors register after the session starts: wait for both
        cluster.wait_for_executors(session)
    yield session
    session.stop()
