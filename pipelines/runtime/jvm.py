"""Every JVM artifact the project needs, declared once, resolved from Maven Central with Maven.

Two classpaths: the Spark connectors (Kafka source, Delta) that go into `spark.jars` at JVM start, and
the Kafka broker's own classpath for the embedded broker. Resolved jars are copied into a cache folder
with a manifest, so the second call is instant and offline; `radar jars --export DIR` writes the same
layout, which `spark.jars_dir` (`--jars-dir`) then uses without touching the network.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from rebalance_radar.pipelines.config import BrokerConfig, RadarConfig
from rebalance_radar.pipelines.runtime.console import CountLine, kept_in_library_log

SCALA_BINARY_VERSION = "2.13"
MAVEN_CENTRAL_URL = "https://repo.maven.apache.org/maven2"
# Pinned so resolution does not depend on whichever plugin version a local Maven defaults to.
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# Broker logging. Kafka 4.x logs through log4j2 (slf4j 1.7 binding), Kafka 3.x through reload4j.
LOG4J2_VERSION = "2.25.4"
SLF4J_1_VERSION = "1.7.36"
RELOAD4J_VERSION = "1.2.25"
MANIFEST_NAME = "manifest.json"
SPARK_SET_NAME = "spark-connectors"


class MissingArtifactError(RuntimeError):
    """A JVM artifact could not be found; the message names the coordinates and how to get them."""


@dataclass(frozen=True)
class MavenArtifact:
    """One Maven coordinate (jar packaging)."""

    group_id: str
    artifact_id: str
    version: str
    # groupId:artifactId of transitive dependencies to leave out (because another root supplies them).
    exclusions: tuple[str, ...] = ()

    @property
    def coordinates(self) -> str:
        return f"{self.group_id}:{self.artifact_id}:{self.version}"


@dataclass(frozen=True)
class ArtifactSet:
    """Root artifacts of one classpath; their runtime dependencies are resolved transitively."""

    name: str
    purpose: str
    roots: tuple[MavenArtifact, ...]
    # Skip dependencies whose jar pyspark already ships (same artifactId), to keep one copy per library.
    skip_jars_in: Path | None = None

    @property
    def cache_key(self) -> str:
        digest = hashlib.sha256("\n".join(f"{r.coordinates}{r.exclusions}" for r in self.roots).encode()).hexdigest()
        return f"{self.name}-{digest[:12]}"


@dataclass(frozen=True)
class ResolvedJar:
    """A jar file on disk and the coordinates it came from."""

    coordinates: str
    path: Path
    size: int


@dataclass(frozen=True)
class ResolvedSet:
    """The jars of one classpath, in classpath order."""

    artifact_set: ArtifactSet
    jars: tuple[ResolvedJar, ...]
    source: str  # "maven", "cache" or "jars_dir"

    @property
    def paths(self) -> list[Path]:
        return [jar.path for jar in self.jars]


# --- declarations -----------------------------------------------------------------------------------


def installed_version(distribution: str) -> str:
    """Version of an installed pip distribution, with a clear error when it is missing."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError as error:
        raise MissingArtifactError(
            f"The Python package {distribution} is not installed; run `pip install -e .` in the repository."
        ) from error


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def spark_connector_artifacts(config: RadarConfig) -> ArtifactSet:
    """spark-sql-kafka (same version as pyspark) and delta-spark (same as the delta-spark pip package).

    The delta artifact name carries the Spark major.minor, as delta's configure_spark_with_delta_pip does.
    """
    spark_version = config.spark.kafka_connector_version or installed_version("pyspark")
    pyspark_major_minor = ".".join(installed_version("pyspark").split(".")[:2])
    delta_version = config.spark.delta_version or installed_version("delta-spark")
    token_provider = f"spark-token-provider-kafka-0-10_{SCALA_BINARY_VERSION}"
    token_version = config.spark.kafka_token_provider_version or spark_version
    roots: dict[str, tuple[MavenArtifact, ...]] = {
        "kafka": (
            # The token provider is pinned on its own: some Maven Central snapshots lack it for the
            # connector's exact version, and its classes (KafkaConfigUpdater, KafkaTokenUtil) are stable.
            MavenArtifact(
                "org.apache.spark",
                f"spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}",
                spark_version,
                exclusions=(f"org.apache.spark:{token_provider}",),
            ),
            MavenArtifact("org.apache.spark", token_provider, token_version),
        ),
        "delta": (
            MavenArtifact("io.delta", f"delta-spark_{pyspark_major_minor}_{SCALA_BINARY_VERSION}", delta_version),
        ),
    }
    connectors = config.spark.connectors
    return ArtifactSet(
        name=SPARK_SET_NAME,
        purpose="Spark connectors: " + " and ".join(f"format('{name}')" for name in connectors),
        roots=tuple(root for name in connectors for root in roots[name]),
        skip_jars_in=pyspark_jars_dir(),
    )


def broker_artifacts(broker: BrokerConfig) -> ArtifactSet:
    """Apache Kafka's server (kafka_2.13 pulls kafka-server, storage, raft, group coordinator, tools)
    plus the logging backend the distribution ships: log4j2 for 4.x, reload4j for 3.x."""
    kafka = MavenArtifact("org.apache.kafka", f"kafka_{SCALA_BINARY_VERSION}", broker.version)
    if broker.major >= 4:
        logging_roots = tuple(
            MavenArtifact("org.apache.logging.log4j", name, LOG4J2_VERSION)
            for name in ("log4j-api", "log4j-core", "log4j-slf4j-impl")
        )
    else:
        logging_roots = (
            MavenArtifact("org.slf4j", "slf4j-reload4j", SLF4J_1_VERSION),
            MavenArtifact("ch.qos.reload4j", "reload4j", RELOAD4J_VERSION),
        )
    return ArtifactSet(
        name=f"kafka-broker-{broker.version}",
        purpose=f"embedded Apache Kafka {broker.version} broker (KRaft)",
        roots=(kafka, *logging_roots),
    )


def all_artifact_sets(config: RadarConfig) -> list[ArtifactSet]:
    return [spark_connector_artifacts(config), broker_artifacts(config.broker)]


# --- resolution -------------------------------------------------------------------------------------


def default_cache_dir(config: RadarConfig) -> Path:
    if config.spark.jars_cache_dir is not None:
        return config.spark.jars_cache_dir.expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "rebalance-radar" / "jars"


def how_to_get(artifact_set: ArtifactSet) -> str:
    return (
        "To get it: run `radar jars --export DIR` on a machine with Maven and access to Maven Central, "
        "copy DIR here and pass --jars-dir DIR (or set spark.jars_dir)"
        + (
            "; or pin spark.kafka_connector_version / spark.delta_version to a version that exists on Maven Central."
            if artifact_set.name == SPARK_SET_NAME
            else "; or set broker.version to a release whose artifacts are on Maven Central."
        )
    )


def write_manifest(folder: Path, resolved: ResolvedSet) -> None:
    manifest = {
        "set": resolved.artifact_set.name,
        "roots": [root.coordinates for root in resolved.artifact_set.roots],
        "jars": [{"coordinates": jar.coordinates, "file": jar.path.name, "size": jar.size} for jar in resolved.jars],
    }
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")


def read_manifest(folder: Path, artifact_set: ArtifactSet, source: str) -> ResolvedSet | None:
    """The set from a folder with a manifest, or None when the folder lacks it or any of its files."""
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        return None
    manifest = json.loads(manifest_path.read_text())
    jars = tuple(ResolvedJar(entry["coordinates"], folder / entry["file"], entry["size"]) for entry in manifest["jars"])
    if not all(jar.path.is_file() for jar in jars):
        return None
    return ResolvedSet(artifact_set, jars, source)


def from_jars_dir(artifact_set: ArtifactSet, jars_dir: Path) -> ResolvedSet:
    """Offline: the exported folder must hold every root of the set; never falls back to the network."""
    folder = jars_dir / artifact_set.name
    resolved = read_manifest(folder, artifact_set, "jars_dir")
    present = {jar.coordinates for jar in resolved.jars} if resolved else set()
    missing = [root.coordinates for root in artifact_set.roots if root.coordinates not in present]
    if resolved is None or missing:
        names = ", ".join(missing or [root.coordinates for root in artifact_set.roots])
        raise MissingArtifactError(
            f"The jars dir {jars_dir} does not hold {names} ({artifact_set.purpose}); expected "
            f"{folder}/{MANIFEST_NAME} and its jars as written by `radar jars --export`. " + how_to_get(artifact_set)
        )
    return resolved


def maven_pom(artifact_set: ArtifactSet) -> str:
    def exclusions(a: MavenArtifact) -> str:
        if not a.exclusions:
            return ""
        inner = "".join(
            f"<exclusion><groupId>{escape(g)}</groupId><artifactId>{escape(n)}</artifactId></exclusion>"
            for g, n in (e.split(":") for e in a.exclusions)
        )
        return f"<exclusions>{inner}</exclusions>"

    dependencies = "".join(
        f"<dependency><groupId>{escape(a.group_id)}</groupId><artifactId>{escape(a.artifact_id)}"
        f"</artifactId><version>{escape(a.version)}</version>{exclusions(a)}</dependency>\n"
        for a in artifact_set.roots
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>\n'
        "<groupId>rebalance-radar</groupId><artifactId>radar-jars</artifactId><version>0</version>\n"
        f"<dependencies>\n{dependencies}</dependencies></project>\n"
    )


# Every repository (including ones declared in third-party poms, e.g. Spark's GCS mirror, which is not
# reachable everywhere) is routed to Maven Central, so resolution never waits on an unreachable host.
MAVEN_SETTINGS = (
    f"<settings><mirrors><mirror><id>maven-central</id><name>Maven Central</name>"
    f"<url>{MAVEN_CENTRAL_URL}</url><mirrorOf>*</mirrorOf></mirror></mirrors></settings>\n"
)
LISTED_JAR = re.compile(r"^\s+([^:\s]+):([^:\s]+):jar:(?:([^:\s]+):)?([^:\s]+):(compile|runtime):(/\S+?\.jar)")


def run_maven(artifact_set: ArtifactSet, work_dir: Path) -> list[tuple[str, Path]]:
    """`mvn dependency:list` on a generated pom: downloads into ~/.m2 and lists (coordinates, jar path)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingArtifactError(
            f"{artifact_set.purpose} is not in the jar cache and Maven (mvn) is not on PATH. "
            "Install Maven (e.g. apt-get install maven). " + how_to_get(artifact_set)
        )
    (work_dir / "pom.xml").write_text(maven_pom(artifact_set))
    (work_dir / "settings.xml").write_text(MAVEN_SETTINGS)
    listing = work_dir / "dependencies.txt"
    command = [
        mvn,
        "-B",
        "-U",
        "-s",
        str(work_dir / "settings.xml"),
        "-f",
        str(work_dir / "pom.xml"),
        f"{MAVEN_DEPENDENCY_PLUGIN}:list",
        "-DincludeScope=runtime",
        f"-DoutputFile={listing}",
        "-DoutputAbsoluteArtifactFilename=true",
    ]
    print(
        f"resolving {artifact_set.purpose} from Maven Central with Maven "
        f"({', '.join(root.coordinates for root in artifact_set.roots)}) ...",
        file=sys.stderr,
        flush=True,
    )
    started = time.monotonic()
    output: list[str] = []
    # Maven's own lines go to the command's log of library messages; the console gets a count of the files
    # downloaded, redrawn on a terminal, a line every few seconds on a pipe (`console.CountLine`)
    downloads = CountLine("files downloaded")
    with (
        kept_in_library_log("maven") as keep,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work_dir) as process,
    ):
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            keep(line.rstrip("\n"))
            if "Downloaded from" in line:
                downloads.add()
    downloads.done()
    if process.returncode != 0:
        missing = sorted(
            set(
                re.findall(
                    r"([\w.\-]+:[\w.\-]+):(?:jar|pom):([\w.\-]+)(?=[,:\s])",
                    " ".join(line for line in output if "[ERROR]" in line),
                )
            )
        )
        what = (
            ", ".join(f"{name}:{version}" for name, version in missing if not name.startswith("rebalance-radar:"))
            or "some artifacts"
        )
        first_error = next(
            (line.strip() for line in output if line.startswith("[ERROR]")), f"mvn exited {process.returncode}"
        )
        raise MissingArtifactError(
            f"Maven Central does not have {what} (needed for {artifact_set.purpose}); "
            f"Maven said: {first_error[:400]}. " + how_to_get(artifact_set)
        )
    jars = []
    for line in listing.read_text().splitlines():
        match = LISTED_JAR.match(line)
        if match:
            group, artifact, classifier, version, _scope, path = match.groups()
            coordinates = f"{group}:{artifact}:{version}" + (f":{classifier}" if classifier else "")
            jars.append((coordinates, Path(path)))
    print(f"  resolved {len(jars)} jars in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return jars


def provided_by(folder: Path | None) -> set[str]:
    """artifactIds of the jars in a folder (pyspark/jars), from names like `zstd-jni-1.5.7-6.jar`."""
    if folder is None or not folder.is_dir():
        return set()
    return {re.sub(r"-\d[^-]*(-[^-]+)*\.jar$", "", jar.name) for jar in folder.glob("*.jar")}


def resolve_from_maven(artifact_set: ArtifactSet, cache_dir: Path) -> ResolvedSet:
    """Resolve with Maven, then copy the jars into a fresh cache folder with a manifest (atomically)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / artifact_set.cache_key
    skip = provided_by(artifact_set.skip_jars_in)
    with tempfile.TemporaryDirectory(prefix=f".{artifact_set.cache_key}-", dir=cache_dir) as work:
        work_dir = Path(work)
        listed = run_maven(artifact_set, work_dir)
        staging = work_dir / "jars"
        staging.mkdir()
        jars = []
        for coordinates, source in listed:
            artifact_id = coordinates.split(":")[1]
            if artifact_id in skip:
                continue
            name = source.name if not (staging / source.name).exists() else f"{coordinates.split(':')[0]}-{source.name}"
            shutil.copy2(source, staging / name)
            jars.append(ResolvedJar(coordinates, target / name, (staging / name).stat().st_size))
        resolved = ResolvedSet(artifact_set, tuple(jars), "maven")
        write_manifest(staging, resolved)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    return resolved


# One resolution at a time in a process: two threads asking for one set (a broker started in the background
# beside another, or beside a session) would each run Maven and replace the folder the other's JVM reads.
_RESOLVING = threading.Lock()


def resolve_artifact_set(artifact_set: ArtifactSet, config: RadarConfig) -> ResolvedSet:
    """The jars of one set: from --jars-dir only, else from the cache, else from Maven Central."""
    if config.spark.jars_dir is not None:
        return from_jars_dir(artifact_set, config.spark.jars_dir.expanduser())
    cache_dir = default_cache_dir(config)
    cached = read_manifest(cache_dir / artifact_set.cache_key, artifact_set, "cache")
    if cached is not None:
        return cached
    cache_dir.mkdir(parents=True, exist_ok=True)
    # and one at a time on the machine: two radar processes starting on a cold cache (a run and a `radar sql`)
    # must not both run Maven and replace the folder the other's JVM is reading; the second finds the first's
    with _RESOLVING, (cache_dir / f".{artifact_set.cache_key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = read_manifest(cache_dir / artifact_set.cache_key, artifact_set, "cache")
        if cached is not None:
            return cached
        return resolve_from_maven(artifact_set, cache_dir)


def spark_connector_jars(config: RadarConfig) -> list[Path]:
    """Files for `spark.jars`: the Kafka and Delta connectors with their non-Spark dependencies."""
    return resolve_artifact_set(spark_connector_artifacts(config), config).paths


def broker_classpath(config: RadarConfig) -> list[Path]:
    """The embedded broker's `java -cp` entries."""
    return resolve_artifact_set(broker_artifacts(config.broker), config).paths


def run_jars(config: RadarConfig, export_dir: Path | None) -> int:
    """`radar jars [--export DIR]`: resolve every set, list coordinates/file/size, optionally copy them.

    Returns the process exit code: 0, or 1 with the reason on stderr when an artifact is missing.
    """
    failures = 0
    for artifact_set in all_artifact_sets(config):
        try:
            resolved = resolve_artifact_set(artifact_set, config)
        except MissingArtifactError as error:
            print(f"error: {error}", file=sys.stderr)
            failures += 1
            continue
        total = sum(jar.size for jar in resolved.jars)
        print(
            f"{artifact_set.name}: {artifact_set.purpose} — {len(resolved.jars)} jars, "
            f"{total / 1e6:.1f} MB, from {resolved.source}"
        )
        for jar in resolved.jars:
            print(f"  {jar.coordinates:<75} {jar.size:>11,d}  {jar.path}")
        if export_dir is not None:
            folder = Path(export_dir) / artifact_set.name
            folder.mkdir(parents=True, exist_ok=True)
            for jar in resolved.jars:
                shutil.copy2(jar.path, folder / jar.path.name)
            exported = ResolvedSet(
                artifact_set,
                tuple(ResolvedJar(jar.coordinates, folder / jar.path.name, jar.size) for jar in resolved.jars),
                "export",
            )
            write_manifest(folder, exported)
            print(f"  exported to {folder} (use it offline with --jars-dir {export_dir})")
    return 1 if failures else 0
