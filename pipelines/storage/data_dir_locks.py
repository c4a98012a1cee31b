"""Who may write a data dir, enforced with the operating system's file locks (`flock`), so that two radar processes
on one data dir never write a record twice and say so in a sentence where they must not run together.

- **A stream has one writer** (`hold_stream`): one lock file per checkpoint name (`checkpoints/.locks/NAME.lock`)
  for the life of the stages that use it. A second `radar run` on the same Kafka cluster, or a second replay of the same
  dump files, is refused with the pid and command of the one that holds it.
- **Tables are created by one process at a time** (`creating_tables`): two processes creating a fresh data dir's
  tables at once made one of them fail (`DELTA_PROTOCOL_CHANGED`).
- **Writes know whether they are alone** (`writing`): every process that writes the tables holds a shared lock on
  `tables/.radar-writers.lock` while it lives; a batch that can turn it exclusive is alone, and may use what this
  process knows the tables hold (its caches) to append blindly. Otherwise another radar writes too, and the batch's
  writes are MERGEs on the record key, whose conflicts Delta detects and radar retries: exactly once by Delta's own
  means, whatever the number of writers.

On a file system without `flock` (some network mounts) nothing is ever alone: the writes MERGE, and a stream's
second writer is left to Spark's own checkpoint checks; radar says so once.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rebalance_radar.pipelines.config import ConfigError

WRITERS_LOCK_NAME = ".radar-writers.lock"
TABLES_LOCK_NAME = ".radar-tables.lock"


class StreamInUse(ConfigError):
    """Another radar process writes this stream of the data dir."""


_said_unlockable: set[str] = set()


def _unlockable(path: Path, error: OSError) -> None:
    if str(path.parent) not in _said_unlockable:
        _said_unlockable.add(str(path.parent))
        print(
            f"radar: {path.parent} does not support file locks ({error.strerror}): two radar processes on this data "
            "dir are not kept apart; every table write MERGEs instead (slower, never duplicated)",
            file=sys.stderr,
        )


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    return text or "another process"


# --- one writer per stream -------------------------------------------------------------------------------------

_streams: dict[str, tuple[int, int]] = {}  # lock file -> (fd, users in this process)
_streams_guard = threading.Lock()


STREAM_LOCKS = ".locks"
"""Under the checkpoint dir, apart from the checkpoints (whose names others glob, e.g. `kafka-<cluster>-*`)."""


def stream_lock_file(checkpoint_dir: Path, checkpoint_name: str) -> Path:
    return checkpoint_dir / STREAM_LOCKS / f"{checkpoint_name}.lock"


def hold_stream(checkpoint_dir: Path, checkpoint_name: str) -> Path:
    """Take the stream's lock for this process (again, if it holds it: a run's stages share their stream), or raise
    `StreamInUse` naming who holds it. Returns the lock file, for `release_stream`."""
    path = stream_lock_file(checkpoint_dir, checkpoint_name)
    with _streams_guard:
        held = _streams.get(str(path))
        if held is not None:
            _streams[str(path)] = (held[0], held[1] + 1)
            return path
        fd = _open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StreamInUse(
                f"another radar ({_holder(path)}) is writing stream {checkpoint_name} of this data dir: wait for it "
                f"to end or stop it, or give this one another --data-dir (lock file {path})."
            ) from None
        except OSError as error:  # no locks on this file system: said once, Spark's checkpoint is all there is
            _unlockable(path, error)
            _streams[str(path)] = (fd, 1)
            return path
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {' '.join(['radar', *sys.argv[1:]])[:300]}\n".encode())
        _streams[str(path)] = (fd, 1)
        return path


def release_stream(path: Path) -> None:
    """Give back one use of a stream's lock; the last use closes it (which releases the lock)."""
    with _streams_guard:
        held = _streams.pop(str(path), None)
        if held is None:
            return
        fd, users = held
        if users > 1:
            _streams[str(path)] = (fd, users - 1)
            return
        os.ftruncate(fd, 0)
        os.close(fd)


# --- tables created by one process at a time -------------------------------------------------------------------


@contextmanager
def creating_tables(tables_dir: Path) -> Iterator[None]:
    """Hold the data dir's table-creation lock (waiting for another process's creation to finish). A read-only data
    dir has no lock file to open: its tables are only registered, never created."""
    path = tables_dir / TABLES_LOCK_NAME
    try:
        fd: int | None = _open(path)
    except OSError:
        fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as error:
                _unlockable(path, error)
        yield
    finally:
        if fd is not None:
            os.close(fd)


# --- whether a write is alone ----------------------------------------------------------------------------------


class WriterPresence:
    """This process's shared lock on a data dir's writers file, turned exclusive while its writes are alone.

    Linux converts a `flock` by removing the old lock first: an upgrade that fails leaves no lock at all, so the
    shared one is taken again (waiting) before the batch writes; and the exclusive lock is held across every
    concurrent alone batch of this process (`_alone`), turned back to shared when the last one ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._guard = threading.Lock()
        self._alone = 0
        self._fd: int | None = None
        self._lockable = True

    def _shared(self) -> None:
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def _join(self) -> None:
        if self._fd is not None:
            return
        self._fd = _open(self.path)
        try:
            self._shared()
        except OSError as error:
            _unlockable(self.path, error)
            self._lockable = False

    @contextmanager
    def writing(self) -> Iterator[bool]:
        """Around one batch's writes (its decisions included): True when no other process writes these tables
        until it ends."""
        with self._guard:
            self._join()
            alone = False
            if self._lockable and self._alone:
                alone = True
            elif self._lockable:
                assert self._fd is not None
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    alone = True
                except BlockingIOError:
                    self._shared()  # the failed upgrade dropped the shared lock: present again before writing
            if alone:
                self._alone += 1
        try:
            yield alone
        finally:
            if alone:
                with self._guard:
                    self._alone -= 1
                    if not self._alone:
                        self._shared()


_presences: dict[str, WriterPresence] = {}
_presences_guard = threading.Lock()


@contextmanager
def writing(tables_dir: Path | None) -> Iterator[bool]:
    """`WriterPresence.writing` of the data dir whose tables are in `tables_dir`; tables in a catalog (None) are
    never alone: another job may write them, and no file lock reaches there."""
    if tables_dir is None:
        yield False
        return
    with _presences_guard:
        presence = _presences.setdefault(str(tables_dir), WriterPresence(tables_dir / WRITERS_LOCK_NAME))
    with presence.writing() as alone:
        yield alone
