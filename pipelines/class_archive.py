"""A class-data archive (Java's AppCDS) for the JVM of a short query command (`radar sql`, `radar detections`):
classes a previous command loaded are mapped from one file instead of being read, verified and parsed again, which
is most of a cold Spark start. (A short `radar replay` measured no faster with one: 51.6 and 58.5 s against ~58 s;
its time is its queries.)

Measured on 2 cores (quiet machine, `radar sql "SELECT count(*) FROM offset_commits"`): 17.6 s and 18.1 s without,
12.1, 11.7 and 10.2 s with the archive. The archive belongs to one Java installation and one classpath (the key
hashes both), so each set of connector jars has its own.

The first such command with no archive for its key dumps one when its JVM exits (`-XX:ArchiveClassesAtExit`, into a
file named after this process), waits for that exit and renames the file into place; the dump costs that one command
~28 s more (measured: 46.5 s for a `radar sql` of ~18 s). Only a complete archive is ever under the final name: a
truncated one makes the JVM that maps it crash (seen with Java 17). A clean exit without a dump leaves a marker, and
no archive is tried again for the key; a JVM killed by Ctrl-C leaves nothing, and the next command tries again.
`spark.class_archive: false` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ARCHIVE_SUFFIX = ".jsa"
FAILED_SUFFIX = ".failed"
KEPT_ARCHIVES = 4  # a few classpaths (delta only for sql, every connector for a replay); older ones are removed
DUMP_WAIT_S = 180.0
STALE_DUMP_S = 3600.0
# Java's own notes about classes it cannot archive (signed jars, old class versions) are not for users.
QUIET_CDS_LOGGING = "-Xlog:cds*=off"


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one Java + classpath: mapped when it exists, else dumped by this process's JVM at exit."""

    path: Path
    pending: Path | None  # where this JVM dumps, when there is no archive yet

    @property
    def java_options(self) -> str:
        if self.pending is None:
            return f"-XX:SharedArchiveFile={self.path} {QUIET_CDS_LOGGING}"
        return f"-XX:ArchiveClassesAtExit={self.pending} {QUIET_CDS_LOGGING}"


def java_identity() -> str:
    """What the Spark launcher will run: `$JAVA_HOME/bin/java`, else `java` on the PATH, with its size and time."""
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not found or not Path(found).exists():
        return "java: not found"
    real = Path(found).resolve()
    stat = real.stat()
    return f"{real}:{stat.st_size}:{stat.st_mtime_ns}"


def archive_key(jars: Sequence[Path], spark_home: Path) -> str:
    """A hash of the Java installation, Spark's own jars and the connector jars (names and sizes, in order)."""
    digest = hashlib.sha256(java_identity().encode())
    for jar in [*sorted((spark_home / "jars").glob("*.jar")), *jars]:
        size = jar.stat().st_size if jar.exists() else -1
        digest.update(f"\n{jar.name}:{size}".encode())
    return digest.hexdigest()[:24]


def class_archive(archive_dir: Path, jars: Sequence[Path], spark_home: Path) -> ClassArchive | None:
    """The archive to map or to dump for this classpath; None when a dump for it failed before."""
    key = archive_key(jars, spark_home)
    path = archive_dir / f"{key}{ARCHIVE_SUFFIX}"
    if path.is_file():
        return ClassArchive(path, None)
    if (archive_dir / f"{key}{FAILED_SUFFIX}").exists():
        return None
    archive_dir.mkdir(parents=True, exist_ok=True)
    return ClassArchive(path, archive_dir / f"{key}.{os.getpid()}.dumping")


def settle_class_archive(archive: ClassArchive, jvm: subprocess.Popen[bytes], wait_s: float = DUMP_WAIT_S) -> bool:
    """After the command: end the JVM (its stdin closes, as at this process's exit), wait while it writes the
    archive, and move a complete archive into place. True when an archive now exists for the key."""
    if archive.pending is None:
        return True
    if jvm.stdin is not None and not jvm.stdin.closed:
        jvm.stdin.close()  # the gateway's JVM exits with code 0 when its stdin closes
    try:
        code = jvm.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        code = None
    dumped = archive.pending.is_file() and archive.pending.stat().st_size > 0
    if code == 0 and dumped:
        os.replace(archive.pending, archive.path)  # atomic: never a partial file under the final name
        _remove_old_files(archive.path.parent)
        return True
    if code == 0:  # a clean exit without an archive: this Java cannot dump one, do not pay for another attempt
        archive.path.with_suffix(FAILED_SUFFIX).touch()
    archive.pending.unlink(missing_ok=True)  # killed (Ctrl-C) or still running: the next command tries again
    return False


def _remove_old_files(archive_dir: Path) -> None:
    """Keep the newest `KEPT_ARCHIVES` archives; drop dumps left by processes that were killed an hour ago or more."""
    archives = sorted(archive_dir.glob(f"*{ARCHIVE_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEPT_ARCHIVES:]:
        old.unlink(missing_ok=True)
    for left in archive_dir.glob("*.dumping"):
        if time.time() - left.stat().st_mtime > STALE_DUMP_S:
            left.unlink(missing_ok=True)
