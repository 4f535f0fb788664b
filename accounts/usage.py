"""Usage accounting, written in batches off the request path and flushed on shutdown; each batch
also adds to the hourly rollups (``accounts.usage_rollup``) that reports read. With a spool
directory (``accounts.usage_spool``), the entries a killed process held are written at the next
start."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import String

from accounts.pricing import PriceBook
from accounts.usage_rollup import rollup_statements, rollups
from accounts.usage_spool import UsageSpool
from db.transactions import DATABASE_ERRORS, Operation, Transactions, insert_sql
from db.usage_models import UsageRecord
from llm_service.types import Usage

log = structlog.get_logger("accounts.usage")
_MAX_PENDING = 100_000
# Rows per INSERT: 1,700 values, within both databases' limit on a statement's parameters.
_SLICE = 100


@dataclass(frozen=True, slots=True)
class UsageEntry:
    request_id: str
    api_key_id: int | None
    key_name: str | None
    route: str
    model: str
    provider: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    status_code: int
    error_type: str | None
    team: str | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    at: float = field(default_factory=time.time)  # when it happened: the row's created_at


# Plain getattr: ``dataclasses.asdict`` deep-copies every value and was half of a flush's CPU,
# which runs on the event loop and so shows in the latency of the requests it interrupts.
_FIELDS = tuple(field.name for field in fields(UsageEntry))
_COLUMNS = tuple(name for name in _FIELDS if name != "at")
_ROW_COLUMNS = (*_COLUMNS, "cost_usd", "created_at")
# Each text column's length. A value past it (a caller's model name, ``tool:`` and an MCP tool's
# name) is cut to fit: PostgreSQL would refuse the whole batch, and keep refusing it at every
# flush, so one such entry would stop all accounting.
_LENGTHS = tuple(
    (column.name, column.type.length)
    for column in UsageRecord.__table__.columns
    if isinstance(column.type, String) and column.type.length and column.name in _COLUMNS
)


def _row(entry: UsageEntry, prices: PriceBook) -> dict[str, object]:
    row = {name: getattr(entry, name) for name in _COLUMNS}
    # Priced here, at flush, rather than on the request path; None when the model is unpriced.
    usage = Usage(
        entry.prompt_tokens,
        entry.completion_tokens,
        entry.cached_tokens,
        entry.cache_write_tokens,
        entry.reasoning_tokens,
    )
    row["cost_usd"] = 0.0 if _refused(entry) else prices.cost(entry.model, usage)
    row["created_at"] = datetime.fromtimestamp(entry.at, UTC)
    for name, length in _LENGTHS:
        value = row[name]
        if isinstance(value, str) and len(value) > length:
            row[name] = value[:length]
    return row


def _refused(entry: UsageEntry) -> bool:
    """An error answer that used no tokens was refused (401, 403, 404, 413, 429, a 400) or
    failed before any provider did work for it (a 5xx, an upstream error): it costs nothing,
    not even a model's ``per_request`` price."""
    return entry.status_code >= 400 and not (entry.prompt_tokens or entry.completion_tokens)


class UsageRecorder:
    """``on_record`` sees every entry as it is recorded (the token metrics), so metrics and
    usage_records count the same traffic by construction."""

    def __init__(
        self,
        transactions: Transactions,
        flush_seconds: float,
        prices: PriceBook,
        *,
        batch: int = 500,
        on_record: Callable[[UsageEntry], None] | None = None,
        spool_dir: Path | None = None,
    ) -> None:
        self._transactions = transactions
        self._prices = prices
        self._on_record = on_record
        self._flush_seconds = flush_seconds
        self._batch = batch
        self._pending: list[UsageEntry] = []
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._spool = UsageSpool(spool_dir) if spool_dir is not None else None
        self._replayed = self._spool is None
        # With a spool: how many entries at the front of ``_pending`` its sealed files hold (a
        # failed batch's). The next batch retries just those, so that an outage opens no file
        # per attempt (nor holds one descriptor each).
        self._sealed = 0

    def record(self, entry: UsageEntry) -> None:
        if len(self._pending) >= _MAX_PENDING:
            # The database has been failing for a long time; keep memory bounded, say so loudly.
            dropped = self._pending.pop(0)
            log.error("usage_dropped", request_id=dropped.request_id)
            self._sealed = max(self._sealed - 1, 0)
        elif self._spool is not None:
            # Not past the bound either: the spool holds at most what memory does.
            self._spool.append({name: getattr(entry, name) for name in _FIELDS})
        self._pending.append(entry)
        if self._on_record is not None:
            self._on_record(entry)
        if len(self._pending) >= self._batch:
            self._wake.set()

    async def start(self) -> None:
        """Before serving: the spool's orphans (entries of killed processes) are written first;
        with the database unreachable, the periodic flush tries again until they are."""
        await self._replay()
        self._task = asyncio.create_task(self._run(), name="usage-recorder")

    async def flush(self) -> None:
        async with self._lock:
            # A retried failed batch is followed at once by the entries recorded since.
            while self._pending and await self._write_batch():
                pass

    async def _write_batch(self) -> bool:
        """Writes the pending entries (or only a failed batch's, retried); True when that
        retry succeeded and others wait."""
        retry = self._sealed
        count = retry or len(self._pending)
        if self._spool is not None and not retry:
            # A batch covers whole files: this one, sealed now; later entries go to a new one.
            self._spool.rotate()
        entries, self._pending = self._pending[:count], self._pending[count:]
        self._sealed = 0
        rows = [_row(entry, self._prices) for entry in entries]
        try:
            # One transaction, a statement per slice of rows: on SQLite a single hand-off to
            # aiosqlite's thread, which binds each statement's values in one go. Its
            # executemany took the GIL back for every row; under load each waited for the
            # switch interval and the batch cost the event loop about a quarter of its CPU
            # (docs/performance.md).
            await self._transactions.run(_write(rows))
        except DATABASE_ERRORS as exc:
            # Keep them for the next flush rather than lose accounting.
            self._pending[:0] = entries
            if self._spool is not None:
                self._sealed = len(entries)
            log.error("usage_flush_failed", pending=len(self._pending), error=str(exc))
            return False
        if self._spool is not None:
            self._spool.release()
        return bool(retry)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._replay()  # orphans the database refused so far: a last try
        await self.flush()
        if self._spool is not None:
            # Entries recorded after this (none should be) are only kept in memory.
            spool, self._spool = self._spool, None
            spool.close()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._flush_seconds):
                    await self._wake.wait()
            self._wake.clear()
            if not self._replayed:
                await asyncio.shield(self._replay())
            # Shielded: stopping (``aclose``) must not cancel a write under way, whose entries
            # would be lost (taken from the queue) or, had it committed, written twice.
            await asyncio.shield(self.flush())

    async def _replay(self) -> None:
        """Each orphaned spool file, written whole in one transaction unless it was already
        (its batch committed, its removal did not happen: its first row is in the table), then
        removed."""
        if self._spool is None or self._replayed:
            return
        files = written = skipped = 0
        try:
            with contextlib.closing(self._spool.orphans()) as orphans:
                for path, values in orphans:
                    rows = [_row(entry, self._prices) for entry in _spooled(values)]
                    if rows and not await self._transactions.run(_has(rows[0]), write=False):
                        await self._transactions.run(_write(rows))
                        written += len(rows)
                    else:
                        skipped += len(rows)
                    self._spool.remove_orphan(path)
                    files += 1
        except DATABASE_ERRORS as exc:
            log.error("usage_spool_replay_failed", files=files, rows=written, error=str(exc))
            return
        if files:
            # A warning: a process died without its clean stop (killed, out of memory).
            log.warning("usage_spool_replayed", files=files, rows=written, already_written=skipped)
        self._replayed = True


def _spooled(values: list[dict[str, Any]]) -> list[UsageEntry]:
    # Only known fields: a file written by another version of the gateway still replays.
    return [UsageEntry(**{k: v for k, v in value.items() if k in _FIELDS}) for value in values]


def _has(row: dict[str, object]) -> Operation[bool]:
    # created_at first: ix_usage_records_created finds the few rows of that instant.
    found = yield (
        "SELECT 1 FROM usage_records WHERE created_at = ? AND request_id = ? AND route = ?",
        (row["created_at"], row["request_id"], row["route"]),
    )
    return bool(found)


def _write(rows: list[dict[str, object]]) -> Operation[None]:
    for start in range(0, len(rows), _SLICE):
        part = rows[start : start + _SLICE]
        parameters = tuple(row[name] for row in part for name in _ROW_COLUMNS)
        yield insert_sql("usage_records", _ROW_COLUMNS, len(part)), parameters
    yield from rollup_statements(rollups(rows))
