"""The embedded Apache Kafka broker: a real single-node KRaft broker+controller from Kafka's Maven jars.

Its group coordinator writes real `__consumer_offsets` records and its log4j output (server.log) is real
coordinator telemetry, which is why it is a broker and not a simulator.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TextIO

from rebalance_radar.pipelines.config import BrokerConfig, RadarConfig, SparkConfig
from rebalance_radar.pipelines.local.broker_security import (
    BrokerTls,
    Grant,
    ScramUser,
    add_scram_users,
    grant,
    make_tls,
    secured_properties,
)
from rebalance_radar.pipelines.runtime.jvm import broker_classpath

STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"
BROKER_MAIN_CLASS = "kafka.Kafka"
LOG_PATTERN = "[%d] %p %m (%c)%n"  # Kafka's own layout, so log parsers see what real brokers write
COORDINATOR_LOGGERS = ("kafka.coordinator.group", "org.apache.kafka.coordinator.group")
STOP_TIMEOUT_S = 20.0
PR_SET_PDEATHSIG = 1


class BrokerStartError(RuntimeError):
    """The broker did not start; the message says where its log is."""


def free_loopback_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def loopback_port_is_free(host: str, port: int) -> bool:
    """Whether a listener could bind `port` now. With SO_REUSEADDR, as the broker's own server socket binds on
    Linux: the connections of a killed broker linger in TIME_WAIT for a minute, and a probe without it took the
    port for busy, so the broker moved and every client configured for its address was stranded."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


PORT_RELEASE_WAIT_S = 15.0
"""How long a restart waits for its old port while the process that held it (the killed broker) exits."""


def _freed_within(host: str, port: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while not loopback_port_is_free(host, port):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)
    return True


def random_cluster_id() -> str:
    """Kafka's Uuid text form: 16 random bytes, URL-safe base64 without padding (as `random-uuid` does).

    Like Kafka's Uuid.randomUuid, never one that starts with "-": the storage tool would read it as an option.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM the broker if the Python process dies (even on SIGKILL), and ignore
    Ctrl-C, which a terminal sends to the whole process group: `radar run` stops the broker itself, after its
    queries (a broker gone first leaves them retrying, and the log shipper flooding the console)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def rebalance_protocols(version: str) -> str:
    """3.x keeps the classic Scala GroupCoordinator (its log wording is what 3.x users see);
    4.x enables KIP-848 `consumer`, and `streams` (KIP-1071) from 4.2 on."""
    major, minor = (int(part) for part in version.split(".")[:2])
    if major < 4:
        return "classic"
    return "classic,consumer,streams" if (major, minor) >= (4, 2) else "classic,consumer"


def server_properties(broker: BrokerConfig, port: int, controller_port: int, data_dir: Path) -> dict[str, str]:
    host = broker.host
    properties = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "true",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.coordinator.rebalance.protocols": rebalance_protocols(broker.version),
        "group.initial.rebalance.delay.ms": str(broker.group_initial_rebalance_delay_ms),
        "group.min.session.timeout.ms": str(broker.group_min_session_timeout_ms),
        "group.consumer.session.timeout.ms": str(broker.group_consumer_session_timeout_ms),
        "group.consumer.min.session.timeout.ms": str(broker.group_consumer_min_session_timeout_ms),
        "group.consumer.heartbeat.interval.ms": str(broker.group_consumer_heartbeat_interval_ms),
        "group.consumer.min.heartbeat.interval.ms": str(broker.group_consumer_min_heartbeat_interval_ms),
    }
    if "streams" in properties["group.coordinator.rebalance.protocols"]:
        # KIP-1071 streams groups take the consumer groups' short timeouts (Kafka's defaults: a 45 s session, and a
        # 45 s minimum that refuses anything shorter), so a crashed Streams instance is expired within seconds
        properties |= {
            "group.streams.session.timeout.ms": str(broker.group_consumer_session_timeout_ms),
            "group.streams.min.session.timeout.ms": str(broker.group_consumer_min_session_timeout_ms),
            "group.streams.heartbeat.interval.ms": str(broker.group_consumer_heartbeat_interval_ms),
            "group.streams.min.heartbeat.interval.ms": str(broker.group_consumer_min_heartbeat_interval_ms),
        }
    properties.update(broker.extra_properties)
    return properties


def log4j2_properties(log_file: Path, coordinator_level: str, pattern: str = LOG_PATTERN) -> str:
    """Everything at INFO to `log_file` in `pattern` (the broker's: Kafka's own layout), the group coordinator at
    `coordinator_level`."""
    lines = [
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {log_file}",
        "appender.file.layout.type = PatternLayout",
        f"appender.file.layout.pattern = {pattern}",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = file",
    ]
    for index, name in enumerate(COORDINATOR_LOGGERS):
        lines += [f"logger.coordinator{index}.name = {name}", f"logger.coordinator{index}.level = {coordinator_level}"]
    return "\n".join(lines) + "\n"


def log4j1_properties(log_file: Path, coordinator_level: str) -> str:
    lines = [
        "log4j.rootLogger=INFO, file",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        f"log4j.appender.file.File={log_file}",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.file.layout.ConversionPattern={LOG_PATTERN}",
    ]
    lines += [f"log4j.logger.{name}={coordinator_level}" for name in COORDINATOR_LOGGERS]
    return "\n".join(lines) + "\n"


class EmbeddedKafka:
    """A single-node KRaft Kafka (broker+controller) on loopback, its data and logs under <data_dir>/broker.

    The storage is formatted afresh at each start (a random cluster id), so every run starts empty; with
    `keep_storage=True` a restart keeps the data, the cluster id and both ports (an outage the clients can recover
    from), also in a new process over the same data dir (`radar run`, Ctrl-C, `radar run`: the stream checkpoint
    of the first run resumes on the same records); the old ports are taken again when they are still free.
    `progress` takes the start's two lines (stderr by default).
    """

    def __init__(
        self,
        broker: BrokerConfig,
        data_dir: Path,
        *,
        spark: SparkConfig | None = None,
        keep_storage: bool = False,
        progress: TextIO | None = None,
        secured: bool = False,
    ) -> None:
        if secured and keep_storage:
            raise BrokerStartError("A secured embedded broker starts afresh each time; it cannot keep its storage.")
        self.keep_storage = keep_storage
        self.secured = secured
        self.tls: BrokerTls | None = None
        self._internal_port: int | None = None
        self._progress = progress
        self._controller_port: int | None = None
        self.broker = broker
        self.home = Path(data_dir) / "broker"
        self.log_dir = self.home / "logs"
        self.log_file = self.log_dir / "server.log"
        self.stdout_file = self.log_dir / "broker.out"
        self._jar_settings = RadarConfig(broker=broker, spark=spark or SparkConfig())
        self._process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise BrokerStartError(
                "The embedded broker is not started; call start() or use it as a context manager first."
            )
        return f"{self.broker.host}:{self.port}"

    @property
    def admin_bootstrap_servers(self) -> str:
        """Where the broker's own admin connects: the PLAINTEXT listener (for a secured broker, the loopback one
        whose principal is the super user)."""
        if self.secured and self._internal_port is not None:
            return f"{self.broker.host}:{self._internal_port}"
        return self.bootstrap_servers

    def add_users(self, users: Sequence[ScramUser], grants: Sequence[Grant] = ()) -> None:
        """SCRAM-SHA-512 users of a secured broker, and their ACLs."""
        if not self.secured:
            raise BrokerStartError("Users and ACLs need a secured embedded broker (EmbeddedKafka(secured=True)).")
        add_scram_users(self.admin_bootstrap_servers, users)
        if grants:
            grant(self.admin_bootstrap_servers, grants)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def java_command(self, classpath: list[Path], main: str, *args: str) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise BrokerStartError("java is not on PATH; install a Java 17+ runtime to run the embedded broker.")
        if self.broker.major >= 4:
            logging = [f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}"]
        else:
            logging = [f"-Dlog4j.configuration=file:{self.home / 'log4j.properties'}"]
        return [
            java,
            f"-Xmx{self.broker.heap}",
            *shlex.split(self.broker.java_options),
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={self.log_dir}",
            *logging,
            "-cp",
            ":".join(str(path) for path in classpath),
            main,
            *args,
        ]

    def start(self) -> EmbeddedKafka:
        """Resolve the jars, format the storage, launch the broker and wait until it answers."""
        if self.is_running():
            return self
        started = time.monotonic()
        classpath = broker_classpath(self._jar_settings)
        data = self.home / "data"
        restart = self.keep_storage and (data / "meta.properties").is_file()
        if restart and self._controller_port is None:  # a new process over kept storage
            self.port, self._controller_port = self._previous_ports()
        if not restart:
            shutil.rmtree(data, ignore_errors=True)
            self.port = free_loopback_port(self.broker.host)
            self._controller_port = free_loopback_port(self.broker.host)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        controller_port = self._controller_port
        assert controller_port is not None
        properties_file = self.home / "server.properties"
        properties = server_properties(self.broker, self.port, controller_port, data)
        if self.secured:  # SASL_SSL for clients; users and ACLs are added over the loopback PLAINTEXT listener
            self.tls = make_tls(self.home / "tls", self.broker.host)
            self._internal_port = free_loopback_port(self.broker.host)
            properties.update(
                secured_properties(self.broker.host, self.port, self._internal_port, controller_port, self.tls)
            )
        properties_file.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        (self.home / "log4j2.properties").write_text(
            log4j2_properties(self.log_file, self.broker.coordinator_log_level)
        )
        (self.home / "log4j.properties").write_text(log4j1_properties(self.log_file, self.broker.coordinator_log_level))
        print(
            f"starting Kafka {self.broker.version} broker on {self.bootstrap_servers} (logs: {self.log_file}) ...",
            file=sys.stderr if self._progress is None else self._progress,
            flush=True,
        )
        formatting = (
            None
            if restart
            else subprocess.run(
                self.java_command(
                    classpath, STORAGE_TOOL_CLASS, "format", "-t", random_cluster_id(), "-c", str(properties_file)
                ),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        )
        if formatting is not None and formatting.returncode != 0:
            raise BrokerStartError(
                f"Formatting the Kafka storage in {data} failed: "
                f"{(formatting.stderr or formatting.stdout).strip()[-1500:]}"
            )
        with self.stdout_file.open("wb") as out:
            self._process = subprocess.Popen(
                self.java_command(classpath, BROKER_MAIN_CLASS, str(properties_file)),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            )  # the broker dies with this process, even on SIGKILL
        atexit.register(self.stop)
        try:
            self.wait_until_ready(started)
        except BaseException:
            self.stop()
            raise
        print(
            f"Kafka {self.broker.version} broker ready at {self.bootstrap_servers} "
            f"in {time.monotonic() - started:.1f} s",
            file=sys.stderr if self._progress is None else self._progress,
            flush=True,
        )
        return self

    @property
    def cluster_id(self) -> str | None:
        """The Kafka cluster id of the storage (from meta.properties); None before the first start."""
        meta = self.home / "data" / "meta.properties"
        if not meta.is_file():
            return None
        for line in meta.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
        return None

    def _previous_ports(self) -> tuple[int, int]:
        """The broker and controller ports of the kept storage's last start when still free, else new ones."""
        host = self.broker.host
        previous: dict[str, int] = {}
        properties = self.home / "server.properties"
        if properties.is_file():
            for line in properties.read_text().splitlines():
                if line.startswith("listeners="):
                    for listener in line.split("=", 1)[1].split(","):
                        name, _, address = listener.partition("://")
                        previous[name] = int(address.rsplit(":", 1)[1])
        ports = []
        for name in ("PLAINTEXT", "CONTROLLER"):
            port = previous.get(name)
            if port and _freed_within(host, port, PORT_RELEASE_WAIT_S):
                ports.append(port)
                continue
            ports.append(free_loopback_port(host))
            if port:
                print(
                    f"the embedded broker's {name} port {port} is held by another process; it moves to {ports[-1]}, "
                    "and clients configured for the old address must be given the new one",
                    file=sys.stderr if self._progress is None else self._progress,
                    flush=True,
                )
        return ports[0], ports[1]

    def wait_until_ready(self, started: float) -> None:
        """Ready = an AdminClient lists topics; a broker that exits meanwhile is reported with its log."""
        from confluent_kafka.admin import AdminClient

        deadline = started + self.broker.startup_timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if not self.is_running():
                raise BrokerStartError(
                    f"The Kafka {self.broker.version} broker exited during start (code "
                    f"{self._process.returncode if self._process else '?'}); see {self.stdout_file} and "
                    f"{self.log_file}. Last output: {self.tail(self.stdout_file)}"
                )
            # A new client each attempt: one whose first answer came late has learnt the broker's advertised
            # address, and a broker advertised through a tap (`advertise_through`) is not reachable there until
            # the tap starts, after this; that client then asked only there until the deadline.
            admin = AdminClient(
                {"bootstrap.servers": self.admin_bootstrap_servers, "socket.timeout.ms": 2000, "log_level": 0}
            )  # refused connections while starting are expected
            try:
                admin.list_topics(timeout=2)
                return
            except Exception as error:  # KafkaException while the listener is not up yet
                last_error = error
                time.sleep(0.3)
            finally:
                del admin  # closes the client now, not at some later garbage collection
        raise BrokerStartError(
            f"The Kafka broker did not answer on {self.bootstrap_servers} within "
            f"{self.broker.startup_timeout_s:.0f} s ({last_error}); see {self.log_file}. "
            "Raise broker.startup_timeout_s on a slow machine."
        )

    @staticmethod
    def tail(path: Path, characters: int = 1500) -> str:
        return path.read_text(errors="replace")[-characters:] if path.is_file() else "(no output)"

    def stop(self) -> None:
        """SIGTERM (a clean controlled shutdown), SIGKILL after a timeout; safe to call twice."""
        process, self._process = self._process, None
        if process is None:
            return
        atexit.unregister(self.stop)
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)

    def __enter__(self) -> EmbeddedKafka:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
