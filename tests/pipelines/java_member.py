"""Members on Apache Kafka's own Java client (`JavaGroupMember.java`, beside this file) for the live tests: the
Java client's real log lines (classic `ConsumerCoordinator` and KIP-848 `AsyncKafkaConsumer` wording), written by
log4j2 to a file that the test ships to the telemetry topic as a user's log shipper would. The classpath is the
embedded broker's (kafka-clients and a log4j2 binding are on it); Java 17 runs the single source file directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pipelines.config import RadarConfig
from pipelines.jvm import broker_classpath
from pipelines.local.broker import log4j2_properties
from pipelines.local.scenarios import MemberProcess

SOURCE = Path(__file__).with_name("JavaGroupMember.java")
JAVA_CLIENT_PREFIX = "[Consumer "
"""What every group line of the Java consumer carries (`[Consumer clientId=..., groupId=...]`): the keyword a user
ships its client log by."""
# A layout common in applications (logback's and log4j2's defaults look alike): time, level, thread, logger.
LOG_PATTERN = "%d{yyyy-MM-dd HH:mm:ss,SSS} %-5p [%t] %c - %m%n"


def start_java_member(
    config: RadarConfig,
    out_dir: Path,
    name: str,
    bootstrap: str,
    topic: str,
    group: str,
    *,
    protocol: str = "classic",
    session_timeout_ms: int = 3000,
    run_s: int = 120,
    extra: tuple[str, ...] = (),
) -> tuple[MemberProcess, Path]:
    """One Java member with client id `name` (`extra`: `name=value` arguments, see `JavaGroupMember.java`);
    returns it and its log file (`<out_dir>/<name>.log`)."""
    java = shutil.which("java")
    assert java is not None, "java is not on PATH"
    log_file = out_dir / f"{name}.log"
    settings = out_dir / f"{name}.log4j2.properties"
    settings.write_text(log4j2_properties(log_file, "INFO", pattern=LOG_PATTERN))
    classpath = ":".join(str(path) for path in broker_classpath(config))
    command = [
        java, "-Xmx256m", f"-Dlog4j2.configurationFile={settings}", "-cp", classpath, str(SOURCE),
        bootstrap, topic, group, name, protocol, str(session_timeout_ms), str(run_s), *extra,
    ]  # fmt: skip
    return MemberProcess(command, out_dir / f"{name}.jsonl"), log_file
