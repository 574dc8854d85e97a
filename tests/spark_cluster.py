"""A Spark standalone cluster on 127.0.0.1 for the tests: one master, two
workers, started from the installed pyspark (``bin/spark-class``).

    with StandaloneCluster(tmp_dir) as cluster:
        spark = get_session(master=cluster.url, conf=cluster.app_conf)

Each worker offers 2 cores and 1 GiB; an application takes at most 2 cores
as two 1-core executors of 512 MiB (``APP_CONF``), one per worker, so two
applications fit at once (the tests' session and a ``mqcodec pcap2parquet
--engine spark --master spark://...`` subprocess).  The executors' Python is
this interpreter (``PYSPARK_PYTHON``).  Logs (master, workers, executors'
stdout/stderr under each worker's work dir) stay in the temporary folder.
Each daemon runs in its own process group: stopping the cluster ends the
groups it started (workers, their executors and Python workers, master).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: settings of an application on this cluster (the session and the CLI subprocesses)
APP_CONF = {
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.executor.memory": "512m",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    # a task that fails fails the job at once (the tests look at failures, not retries)
    "spark.task.maxFailures": "1",
}
WORKERS = 2
WORKER_CORES = 2
WORKER_MEMORY = "1g"


def free_port(taken: "set[int] | None" = None) -> int:
    """A port nothing listens on now, and not one of ``taken`` (the ports chosen
    for daemons that have not bound theirs yet: the kernel may hand the same
    free port out twice, and a worker's web UI on the master's port answered
    the fixture's JSON request with HTML once). Added to ``taken``."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if taken is None:
            return port
        if port not in taken:
            taken.add(port)
            return port


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


class ClusterError(RuntimeError):
    pass


class StandaloneCluster:
    def __init__(self, workdir, *, workers: int = WORKERS, timeout: float = 120.0, cores: int = WORKER_CORES):
        self.workdir = Path(workdir)
        self.workers = workers
        self.cores = cores
        self.timeout = timeout
        self.ports: set[int] = set()
        self.port = free_port(self.ports)
        self.webui = free_port(self.ports)
        self.url = "spark://127.0.0.1:%d" % self.port
        self.json_url = "http://127.0.0.1:%d/json" % self.webui
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.app_conf = dict(APP_CONF)

    # ------------------------------------------------------------------
    def _env(self) -> dict:
        env = dict(os.environ)
        env.update({
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
            "SPARK_PID_DIR": str(self.workdir),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        })
        env.pop("SPARK_HOME", None)  # spark-class finds the installed pyspark's
        return env

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.workdir / ("%s.log" % name)
        self.logs.append(log)
        with open(log, "wb") as out:
            self.procs.append(subprocess.Popen([spark_class(), *args], stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, env=self._env(), cwd=str(self.workdir),
                                               start_new_session=True))

    def start(self) -> "StandaloneCluster":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.webui)])
        try:  # the workers retry until the master listens: all three JVMs start at once
            for i in range(self.workers):
                work = self.workdir / ("worker%d" % i)
                work.mkdir(exist_ok=True)
                self._spawn("worker%d" % i, ["org.apache.spark.deploy.worker.Worker", self.url,
                                             "--host", "127.0.0.1", "--cores", str(self.cores),
                                             "--memory", WORKER_MEMORY, "--webui-port", str(free_port(self.ports)),
                                             "--work-dir", str(work)])
            self._wait(lambda s: s.get("aliveworkers", 0) >= self.workers, "%d registered workers" % self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict:
        with urllib.request.urlopen(self.json_url, timeout=5) as r:
            return json.load(r)

    def _wait(self, ready, what: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for p in self.procs:
                if p.poll() is not None:
                    raise ClusterError("a Spark daemon exited (%s) while waiting for %s\n%s"
                                       % (p.returncode, what, self.log_tails()))
            try:
                s = self.state()
                if ready(s):
                    return s
            except (OSError, ValueError):   # not listening yet, or not answering JSON yet
                pass
            if time.monotonic() > deadline:
                raise ClusterError("no %s after %.0f s\n%s" % (what, self.timeout, self.log_tails()))
            time.sleep(0.5)

    def wait_for_executors(self, session, count: int = WORKERS) -> None:
        """Until ``session``'s application has ``count`` executors."""
        deadline = time.monotonic() + self.timeout
        ids = session.sparkContext._jsc.sc().getExecutorIds()
        while ids.size() < count:
            if time.monotonic() > deadline:
                raise ClusterError("%d of %d executors after %.0f s\n%s"
                                   % (ids.size(), count, self.timeout, self.log_tails()))
            time.sleep(0.5)
            ids = session.sparkContext._jsc.sc().getExecutorIds()

    def log_tails(self, lines: int = 15) -> str:
        out = []
        for log in self.logs:
            try:
                tail = log.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append("== %s\n%s" % (log.name, "\n".join(tail)))
        return "\n".join(out)

    def stop(self) -> None:
        """End the workers first (each ends its executors), then the master;
        whatever is left in their process groups gets SIGKILL."""
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            for p in reversed(self.procs):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            for p in self.procs:
                try:
                    p.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for p in self.procs:  # executors and Python workers left in a group
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.procs = []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
