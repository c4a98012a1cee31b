"""A three-node KRaft cluster from the embedded broker's own artifacts, for the cross-group incident test: each node a
combined broker+controller (three voters), its own ports, storage and server.log, all formatted with one cluster id.
`restart(node)` stops one node cleanly (SIGTERM: a controlled shutdown moves its partitions and coordinators away)
and starts it again over its storage. Test-only: the product runs one embedded node (`pipelines.local.broker`).
"""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rebalance_radar.pipelines.config import BrokerConfig, RadarConfig
from rebalance_radar.pipelines.local.broker import (
    BROKER_MAIN_CLASS,
    STOP_TIMEOUT_S,
    STORAGE_TOOL_CLASS,
    BrokerStartError,
    EmbeddedKafka,
    die_with_parent,
    free_loopback_port,
    log4j1_properties,
    log4j2_properties,
    random_cluster_id,
    server_properties,
)
from rebalance_radar.pipelines.runtime.jvm import broker_classpath

NODES = 3


@dataclass
class KraftNode:
    """One node of the cluster: its id, ports, folder and process."""

    node_id: int
    port: int
    controller_port: int
    home: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class KraftCluster:
    """Three combined nodes; `__consumer_offsets` replicated on all three, so any node can take over a coordinator."""

    broker: BrokerConfig
    root: Path
    nodes: list[KraftNode] = field(default_factory=list)

    def __post_init__(self) -> None:
        host = self.broker.host
        self._launcher = EmbeddedKafka(self.broker, self.root / "launcher")  # only its java command line
        self._classpath = broker_classpath(RadarConfig(broker=self.broker))
        self.nodes = [
            KraftNode(i, free_loopback_port(host), free_loopback_port(host), self.root / f"node-{i}")
            for i in range(1, NODES + 1)
        ]

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes)

    def node(self, node_id: int) -> KraftNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def _properties(self, node: KraftNode) -> Path:
        voters = ",".join(f"{n.node_id}@{self.broker.host}:{n.controller_port}" for n in self.nodes)
        properties = server_properties(self.broker, node.port, node.controller_port, node.home / "data")
        properties.update(
            {
                "node.id": str(node.node_id),
                "controller.quorum.voters": voters,
                "offsets.topic.replication.factor": str(NODES),
                "offsets.topic.num.partitions": "10",
                "default.replication.factor": str(NODES),
                "min.insync.replicas": "1",
                "transaction.state.log.replication.factor": str(NODES),
            }
        )
        node.home.mkdir(parents=True, exist_ok=True)
        (node.home / "logs").mkdir(exist_ok=True)
        path = node.home / "server.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        (node.home / "log4j2.properties").write_text(
            log4j2_properties(node.log_file, self.broker.coordinator_log_level)
        )
        (node.home / "log4j.properties").write_text(log4j1_properties(node.log_file, self.broker.coordinator_log_level))
        return path

    def _command(self, node: KraftNode, main: str, *args: str) -> list[str]:
        command = self._launcher.java_command(self._classpath, main, *args)
        # the launcher's logging flags point at its own folder: this node's instead
        home = self._launcher.home
        return [part.replace(str(home), str(node.home)) for part in command]

    def start(self) -> KraftCluster:
        cluster_id = random_cluster_id()

        def format_storage(node: KraftNode) -> None:
            formatted = subprocess.run(
                self._command(node, STORAGE_TOOL_CLASS, "format", "-t", cluster_id, "-c", str(self._properties(node))),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if formatted.returncode != 0:
                raise BrokerStartError(f"formatting node {node.node_id} failed: {formatted.stderr[-1500:]}")

        with ThreadPoolExecutor(max_workers=NODES, thread_name_prefix="kraft-format") as pool:
            list(pool.map(format_storage, self.nodes))  # side by side: each is a JVM start
        for node in self.nodes:
            self._launch(node)
        self.wait_until_ready()
        return self

    def _launch(self, node: KraftNode) -> None:
        with (node.home / "logs" / "broker.out").open("ab") as out:
            node.process = subprocess.Popen(
                self._command(node, BROKER_MAIN_CLASS, str(node.home / "server.properties")),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,
            )

    def wait_until_ready(self, timeout_s: float = 120.0) -> None:
        """Every node registered (the metadata lists three brokers)."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.process is None or node.process.poll() is not None:
                    raise BrokerStartError(f"node {node.node_id} exited; see {node.home / 'logs'}")
            admin = AdminClient({"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 2000, "log_level": 0})
            try:
                if len(admin.list_topics(timeout=2).brokers) == NODES:
                    return
            except Exception:  # refused connections while the nodes start
                pass
            finally:
                del admin
            time.sleep(0.3)
        raise BrokerStartError(f"the {NODES}-node cluster did not come up within {timeout_s:.0f} s")

    def stop_node(self, node_id: int) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL after a timeout."""
        node = self.node(node_id)
        process, node.process = node.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

    def start_node(self, node_id: int) -> None:
        self._launch(self.node(node_id))
        self.wait_until_ready()

    def stop(self) -> None:
        for node in self.nodes:
            self.stop_node(node.node_id)
