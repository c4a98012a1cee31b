"""Instances of a real Kafka Streams application (`StreamsApp.java`, beside this file) for the live tests: Apache
Kafka's kafka-streams from Maven Central on the streams rebalance protocol (KIP-1071), its real client log written
by log4j2 to a file that the test ships to the telemetry topic as a user ships an application's log. kafka-streams
is not on the broker's classpath: its jars are an artifact set of their own, resolved from Maven Central into the
jar cache as the broker's are (`pipelines.runtime.jvm`). The source is compiled once per test run, as
`JavaGroupMember.java` is (`java_member`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.broker import log4j2_properties
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.pipelines.runtime.jvm import LOG4J2_VERSION, ArtifactSet, MavenArtifact, resolve_artifact_set
from tests.pipelines.java_member import LOG_PATTERN, QUICK_JVM, compiled_classes

SOURCE = Path(__file__).with_name("StreamsApp.java")
MAIN_CLASS = "StreamsApp"


def streams_artifacts(version: str) -> ArtifactSet:
    """kafka-streams of the broker's version and log4j2 behind slf4j 1.7 (the slf4j-api kafka-streams depends on)."""
    return ArtifactSet(
        name=f"kafka-streams-{version}",
        purpose=f"a Kafka Streams {version} application for the live tests",
        roots=(
            MavenArtifact("org.apache.kafka", "kafka-streams", version),
            *(
                MavenArtifact("org.apache.logging.log4j", name, LOG4J2_VERSION)
                for name in ("log4j-api", "log4j-core", "log4j-slf4j-impl")
            ),
        ),
    )


def streams_classpath(config: RadarConfig, version: str | None = None) -> str:
    """kafka-streams `version` (default: the broker's) and its logging, resolved into the jar cache."""
    artifacts = streams_artifacts(version or config.broker.version)
    return ":".join(str(path) for path in resolve_artifact_set(artifacts, config).paths)


def start_streams_instance(
    config: RadarConfig,
    out_dir: Path,
    name: str,
    bootstrap: str,
    application_id: str,
    source_topic: str,
    sink_topic: str,
    *,
    client_id: str | None = None,
    run_s: int = 300,
    protocol: str = "streams",
    version: str | None = None,
) -> tuple[MemberProcess, Path]:
    """One instance (one JVM, one stream thread) of the application `application_id`, with a state directory of
    its own (a restarted container without a volume: a new process id); returns it and its log file
    (`<out_dir>/<name>.log`). `client_id` defaults to `name`; `protocol` is its `group.protocol` (`classic`: the
    consumer group protocol, Streams' own assignor and its follow-up rebalances); `version` is its kafka-streams
    version (default: the broker's; an older one speaks only the classic protocol)."""
    java = shutil.which("java")
    assert java is not None, "java is not on PATH"
    log_file = out_dir / f"{name}.log"
    settings = out_dir / f"{name}.log4j2.properties"
    settings.write_text(log4j2_properties(log_file, "INFO", pattern=LOG_PATTERN))
    state_dir = Path(tempfile.mkdtemp(prefix=f"{name}-state-", dir=out_dir))
    classpath = streams_classpath(config, version)
    command = [
        java, "-Xmx256m", *QUICK_JVM, f"-Dlog4j2.configurationFile={settings}",
        "-cp", f"{compiled_classes(SOURCE, classpath)}:{classpath}", MAIN_CLASS,
        bootstrap, application_id, client_id or name, source_topic, sink_topic, str(state_dir), str(run_s), protocol,
    ]  # fmt: skip
    return MemberProcess(command, out_dir / f"{name}.jsonl"), log_file
