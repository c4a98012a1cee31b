"""Members on Apache Kafka's own Java client (`JavaGroupMember.java`, beside this file) for the live tests: the
Java client's real log lines (classic `ConsumerCoordinator` and KIP-848 `AsyncKafkaConsumer` wording), written by
log4j2 to a file that the test ships to the telemetry topic as a user's log shipper would. The classpath is the
embedded broker's (kafka-clients and a log4j2 binding are on it). The source is compiled once per test run: Java's
single-file launcher compiled it again in every member's JVM (ten a live recording; `javac` of it: 1.7 CPU s).
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from rebalance_radar.pipelines.config import RadarConfig
from rebalance_radar.pipelines.local.broker import log4j2_properties
from rebalance_radar.pipelines.local.scenarios import MemberProcess
from rebalance_radar.pipelines.runtime.jvm import broker_classpath

SOURCE = Path(__file__).with_name("JavaGroupMember.java")
JAVA_CLIENT_PREFIX = "[Consumer "
"""What every group line of the Java consumer carries (`[Consumer clientId=..., groupId=...]`): the keyword a user
ships its client log by."""
MAIN_CLASS = "JavaGroupMember"
# A member's work is a poll every 100 ms: the quick compiler alone and one GC thread serve it, and a recording's ten
# members then take less of the cores the rest of the suite runs on.
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
_compiled: dict[tuple[Path, str], Path] = {}  # (source, classpath) -> the folder of its classes
_compiling = threading.Lock()  # the live recording's lanes start members side by side

# A layout common in applications (logback's and log4j2's defaults look alike): time, level, thread, logger.
LOG_PATTERN = "%d{yyyy-MM-dd HH:mm:ss,SSS} %-5p [%t] %c - %m%n"


def compiled_classes(source: Path, classpath: str) -> Path:
    """The folder holding the classes of the Java file `source` (a test's member or application), compiled against
    `classpath` the first time they are asked for."""
    with _compiling:
        found = _compiled.get((source, classpath))
        if found is None:
            javac = shutil.which("javac")
            assert javac is not None, f"javac is not on PATH (a JDK 17+ is needed to compile {source.name})"
            found = Path(tempfile.mkdtemp(prefix=f"{source.stem}-"))
            atexit.register(shutil.rmtree, found, ignore_errors=True)
            done = subprocess.run(
                [javac, "-nowarn", "-cp", classpath, "-d", str(found), str(source)],
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"compiling {source.name} failed: {done.stderr[-2000:]}"
            _compiled[(source, classpath)] = found
        return found


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
    member_classpath = f"{compiled_classes(SOURCE, classpath)}:{classpath}"
    command = [
        java, "-Xmx256m", *QUICK_JVM, f"-Dlog4j2.configurationFile={settings}", "-cp", member_classpath, MAIN_CLASS,
        bootstrap, topic, group, name, protocol, str(session_timeout_ms), str(run_s), *extra,
    ]  # fmt: skip
    return MemberProcess(command, out_dir / f"{name}.jsonl"), log_file
