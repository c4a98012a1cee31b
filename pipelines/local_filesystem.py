"""Hadoop's local file system without a process per file, for the local SparkSession.

pip's pyspark ships no Hadoop native library, so Hadoop 3.4 sets the permission of every file it creates on a local
disk (each Parquet file, Delta commit, checksum and checkpoint file) by starting `chmod`, and reads a path's link
status on each rename by starting `readlink`: ~5 ms each in Spark's JVM, ~510 of them in a replay of the bundled
sample and ~5,400 in `tests/pipelines/test_detect.py`. The classes in `pipelines/java/` do both through java.nio;
they are compiled once, with the JDK's `javac`, into the jar cache, against the Hadoop jar pyspark ships.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from pipelines.jvm import pyspark_jars_dir

SOURCES_DIR = Path(__file__).resolve().parent / "java"
JAR_PREFIX = "radar-local-fs-"
# Hadoop's local file system for FileSystem (Parquet files, streaming checkpoints) and for FileContext (Delta's log).
LOCAL_FILESYSTEM_CONF = {
    "spark.hadoop.fs.file.impl": "radar.hadoop.ShellFreeLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "radar.hadoop.ShellFreeLocalFs",
}
JAVA_RELEASE = "17"  # Spark 4's minimum


def java_sources() -> list[Path]:
    return sorted(SOURCES_DIR.rglob("*.java"))


def hadoop_api_jar() -> Path | None:
    """The Hadoop API jar pyspark ships (what the classes compile against), if this pyspark has one."""
    found = sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar"))
    return found[-1] if found else None


def jar_key(sources: list[Path], hadoop_jar: Path) -> str:
    """The jar's name follows its sources and the Hadoop jar they compile against."""
    digest = hashlib.sha256(hadoop_jar.name.encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:12]


def javac() -> str | None:
    """The JDK's compiler: beside the `java` Spark starts (JAVA_HOME), else on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def local_filesystem_jar(cache_dir: Path) -> Path | None:
    """The compiled classes' jar in `cache_dir`, built the first time. None where it cannot be built (no `javac`: a
    JRE only; a pyspark without Hadoop's jar); Hadoop's own local file system then serves, as it always did, and
    the first command says so once (a marker file beside where the jar would be)."""
    sources, hadoop_jar = java_sources(), hadoop_api_jar()
    if not sources or hadoop_jar is None:
        return None
    jar = cache_dir / f"{JAR_PREFIX}{jar_key(sources, hadoop_jar)}.jar"
    if jar.is_file():
        return jar
    compiler = javac()
    error = None
    if compiler is None:
        error = "no javac (the JDK's compiler) was found"
    else:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="radar-javac-") as work:
            classes = Path(work) / "classes"
            done = subprocess.run(
                [compiler, "--release", JAVA_RELEASE, "-nowarn", "-cp", str(hadoop_jar), "-d", str(classes)]
                + [str(s) for s in sources],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                first_line = next(iter((done.stderr or done.stdout).strip().splitlines()), "no output")
                error = f"javac failed ({first_line})"
            else:
                partial = jar.with_name(f"{jar.name}.{os.getpid()}.partial")  # same folder: a rename, not a copy
                with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                    for path in sorted(classes.rglob("*.class")):
                        archive.write(path, path.relative_to(classes).as_posix())
                os.replace(partial, jar)  # only ever complete under its final name
                return jar
    marker = jar.with_suffix(".unavailable")
    if not marker.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(error + "\n")
        print(
            f"radar: {error}, so Hadoop writes local files as it does by default, starting a `chmod` process per "
            "file (slower). Install a JDK (javac) for faster local runs.",
            file=sys.stderr,
        )
    return None
