"""A real Spark standalone cluster on this machine, for the `cluster` tests and the benchmarks' cluster runs: a
Master and Workers started from pyspark's own `bin/spark-class` (nothing downloaded), each Worker in a process group
of its own so a test can kill it with its executors, as a lost machine would be.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class StandaloneCluster:
    """`with StandaloneCluster(folder) as cluster:` a Master on loopback and `workers` Workers of `cores` cores."""

    def __init__(
        self, folder: Path, *, workers: int = 2, cores: int = 1, memory: str = "2g", daemon_java_options: str = ""
    ) -> None:
        self.folder = folder
        self.daemon_java_options = daemon_java_options  # the Master's and Workers' own JVMs (not the executors')
        self.workers, self.cores, self.memory = workers, cores, memory
        self.port, self.web_port = free_port(), free_port()
        self.master: subprocess.Popen[bytes] | None = None
        self.worker_processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_WORKER_DIR": str(self.folder / f"{name}-work"),
            "SPARK_DAEMON_JAVA_OPTS": self.daemon_java_options,
        }
        log = (self.folder / f"{name}.log").open("wb")
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: the Worker's executors die with it
        )

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=5) as answer:
            return json.loads(answer.read())

    def alive_workers(self) -> int:
        try:
            return int(self.state().get("aliveworkers", 0))  # type: ignore[call-overload]
        except OSError:
            return 0

    def __enter__(self) -> StandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.master = self._start(
            "master", MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.web_port)
        )
        for n in range(self.workers):
            self.worker_processes.append(self._start_worker(n))
        self._wait_for_workers()
        return self

    def _start_worker(self, index: int) -> subprocess.Popen[bytes]:
        worker_args = ("--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory, "--webui-port", "0")
        return self._start(f"worker-{index}", WORKER_CLASS, *worker_args, self.url)

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + 120
        while self.alive_workers() < self.workers:
            if time.monotonic() > deadline or self.master is None or self.master.poll() is not None:
                self.__exit__()
                logs = {p.name: p.read_text(errors="replace")[-1500:] for p in self.folder.glob("*.log")}
                raise RuntimeError(f"the standalone cluster did not start its {self.workers} workers: {logs}")
            time.sleep(0.5)

    def replace_worker(self, index: int) -> None:
        """A new Worker where one was killed, once the Master counts it: the cluster whole again."""
        if self.worker_processes[index].poll() is None:
            return
        self.worker_processes[index] = self._start_worker(index)
        self._wait_for_workers()

    def kill_worker(self, index: int) -> None:
        """SIGKILL a Worker and its executors at once: a machine lost mid-run."""
        process = self.worker_processes[index]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)

    def __exit__(self, *_exc: object) -> None:
        for process in [*self.worker_processes, *([self.master] if self.master else [])]:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                process.wait(30)
