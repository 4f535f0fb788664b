"""A local spool of usage entries that outlives the process holding them.

The recorder writes its entries to the database in batches (``accounts.usage``); without this, a
process killed between two batches (``kill -9``, the kernel's OOM killer) loses what it held. With
a spool directory, each entry is also appended to this process's current file as it is recorded:
one unbuffered ``os.write``, into the kernel's page cache, which survives the process (not the
node: no fsync per request, so a node crash still loses up to ``usage_flush_seconds``).

Each process owns its files through an exclusive ``flock`` held while they are open; the kernel
drops it when the process dies, however it dies. A batch always covers whole files and is one
transaction, so a file is either all in the database or none of it: a file whose first entry is
in ``usage_records`` was committed and only its unlink was lost. At start, files nobody holds are
those orphans, written (or dropped) before serving.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("accounts.usage")
_SUFFIX = ".jsonl"


@dataclass(frozen=True, slots=True)
class _File:
    path: Path
    fd: int


class UsageSpool:
    """This process's spool files in ``directory``: the current one, which ``append`` writes,
    and those sealed into the batch being written (or one that failed and will be retried)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._directory = directory
        self._current = self._open()
        self._sealed: list[_File] = []

    def _open(self) -> _File:
        # Locked under a name replay does not look at, then renamed: a file another process's
        # replay can see is always locked already (created as ``.jsonl``, it could be taken for
        # an orphan, found empty and removed between our ``open`` and our ``flock``).
        name = str(uuid.uuid4())
        hidden = self._directory / f".{name}.new"
        fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        path = self._directory / f"{name}{_SUFFIX}"
        hidden.rename(path)
        return _File(path, fd)

    def append(self, values: Mapping[str, object]) -> None:
        """One entry as a JSON line, in one ``write`` (a kill mid-write tears only the last
        line). A failing disk costs the entry its spool copy, never the request: it is still
        held in memory for its batch."""
        try:
            os.write(self._current.fd, json.dumps(values, separators=(",", ":")).encode() + b"\n")
        except OSError as exc:
            log.error("usage_spool_write_failed", error=str(exc))

    def rotate(self) -> None:
        """Seal the current file into the batch about to be written and open a new one."""
        self._sealed.append(self._current)
        self._current = self._open()

    def release(self) -> None:
        """The sealed files' batch committed: remove them."""
        done, self._sealed = self._sealed, []
        for file in done:
            _remove(file)

    def close(self) -> None:
        """On a clean stop, after the last flush: an empty current file is removed, anything
        else stays for the next start to replay."""
        for file in (*self._sealed, self._current):
            if os.fstat(file.fd).st_size == 0:
                _remove(file)
            else:
                os.close(file.fd)
        self._sealed = []

    def orphans(self) -> Generator[tuple[Path, list[dict[str, Any]]]]:
        """Each file of a dead process (no lock on it), with its entries, locked while the
        caller handles it; the caller removes it with ``remove_orphan``."""
        for path in sorted(self._directory.glob(f"*{_SUFFIX}")):
            if path == self._current.path or any(path == file.path for file in self._sealed):
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:  # another worker replayed it first
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its owner is alive
                os.close(fd)
                continue
            try:
                if not path.exists():  # replayed and removed while we waited to open it
                    continue
                yield path, _entries(fd)
            finally:
                os.close(fd)

    @staticmethod
    def remove_orphan(path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _entries(fd: int) -> list[dict[str, Any]]:
    with os.fdopen(os.dup(fd), "rb") as reader:
        data = reader.read()
    entries = []
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            entries.append(json.loads(line))
        except ValueError:  # torn: by the kill mid-write, or a write that failed (disk full)
            continue
    return entries


def _remove(file: _File) -> None:
    with contextlib.suppress(FileNotFoundError):
        file.path.unlink()
    os.close(file.fd)
