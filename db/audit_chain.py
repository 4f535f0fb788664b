"""The audit log as a hash chain: each sealed event carries the hash of the one before it, in a
sequence the database assigns, so an event changed or removed afterwards is found.

Design: events are written as before, by every writer (ORM rows, the tool-call store's plain
SQL), with no lock on the hot path. A sealer (``AuditSealer``, on every replica) then takes the
unsealed events in id order and gives each the next ``seq``, the previous event's hash
(``prev_hash``) and its own (``chain_hash``: SHA-256 of the previous hash and the event's
canonical JSON). One sealer works at a time: a transaction-scoped advisory lock on PostgreSQL
(replicas), SQLite's single writer there, and a unique ``seq`` behind both, so a sealer that
lost a race fails its transaction and seals on its next turn. Sealing after the fact is what
makes the chain safe under concurrent writers: ids on PostgreSQL are handed out before commit,
so an id order is not a commit order, but the sealer's order is.

What it does not protect: an event in its first seconds, before it is sealed (``verify`` counts
them); and the chain's ends: deleting the oldest events (retention does) or the newest ones
leaves an intact chain. Export the head (``verify`` prints it) elsewhere to anchor it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.models import AuditEvent
from db.refresher import Refresher

GENESIS = "0" * 64
# pg_advisory_xact_lock's key for the sealer: any constant no other lock of ours uses.
_SEAL_LOCK = 0x6C6C6D_A0D1


def event_hash(event: AuditEvent, prev_hash: str) -> str:
    """The hash an event is sealed with: of its previous hash and its canonical content."""
    content = [
        event.seq,
        event.id,
        event.created_at.isoformat(),
        event.actor_key_id,
        event.action,
        event.conversation_id,
        event.tool_call_id,
        event.tool_name,
        event.detail,
    ]
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{prev_hash}:{canonical}".encode()).hexdigest()


async def seal(sessions: async_sessionmaker[AsyncSession], batch: int = 500) -> int:
    """Seals up to ``batch`` events not sealed yet; returns how many (0 when another sealer
    took the same places first)."""
    try:
        async with sessions.begin() as session:
            if session.get_bind().dialect.name == "postgresql":
                await session.execute(_LOCK, {"key": _SEAL_LOCK})
            seq, prev = await _head(session)
            events = await session.scalars(
                select(AuditEvent)
                .where(AuditEvent.seq.is_(None))
                .order_by(AuditEvent.id)
                .limit(batch)
            )
            count = 0
            for event in events:
                seq += 1
                event.seq, event.prev_hash = seq, prev
                event.chain_hash = prev = event_hash(event, prev)
                count += 1
            return count
    except IntegrityError:
        return 0  # another sealer sealed the same places first


_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


async def _head(session: AsyncSession) -> tuple[int, str]:
    """The last sealed place and its hash (0 and the genesis hash before the first)."""
    head = (
        await session.execute(
            select(AuditEvent.seq, AuditEvent.chain_hash)
            .where(AuditEvent.seq.is_not(None))
            .order_by(AuditEvent.seq.desc())
            .limit(1)
        )
    ).first()
    if head is None or head[0] is None:
        return 0, GENESIS
    return head[0], head[1] or GENESIS


@dataclass(frozen=True, slots=True)
class ChainState:
    """What ``verify`` found. ``broken_at``: the ``seq`` of the first event that does not
    follow from the one before it (None: intact), with ``problem`` saying how."""

    sealed: int
    unsealed: int
    head_seq: int | None
    head_hash: str | None
    broken_at: int | None = None
    broken_event_id: int | None = None
    problem: str | None = None

    @property
    def intact(self) -> bool:
        return self.broken_at is None

    def as_json(self) -> dict[str, Any]:
        return {
            "intact": self.intact,
            "sealed": self.sealed,
            "unsealed": self.unsealed,
            "head_seq": self.head_seq,
            "head_hash": self.head_hash,
            "broken_at": self.broken_at,
            "broken_event_id": self.broken_event_id,
            "problem": self.problem,
        }


async def verify(
    sessions: async_sessionmaker[AsyncSession], latest: int | None = None, page: int = 2000
) -> ChainState:
    """Walks the sealed events in ``seq`` order from the oldest kept (its ``prev_hash`` is
    trusted: older events may have been removed by retention) and recomputes every hash.
    ``latest``: only the newest this many (the admin UI's bounded check; None: all)."""
    async with sessions() as session:
        unsealed = await session.scalar(
            select(func.count()).select_from(AuditEvent).where(AuditEvent.seq.is_(None))
        )
        expected_seq: int | None = None
        prev: str | None = None
        sealed = 0
        after = -1 if latest is None else (await _head(session))[0] - latest
        while True:
            events = list(
                await session.scalars(
                    select(AuditEvent)
                    .where(AuditEvent.seq.is_not(None), AuditEvent.seq > after)
                    .order_by(AuditEvent.seq)
                    .limit(page)
                )
            )
            for event in events:
                problem = _problem(event, expected_seq, prev)
                if problem is not None:
                    good = None if expected_seq is None else expected_seq - 1
                    return ChainState(
                        sealed, unsealed or 0, good, prev, event.seq, event.id, problem
                    )
                sealed += 1
                expected_seq, prev = (event.seq or 0) + 1, event.chain_hash
            if len(events) < page:
                head = None if expected_seq is None else expected_seq - 1
                return ChainState(sealed, unsealed or 0, head, prev)
            after = events[-1].seq or 0
            session.expunge_all()


def _problem(event: AuditEvent, expected_seq: int | None, prev: str | None) -> str | None:
    if expected_seq is not None and event.seq != expected_seq:
        return f"events {expected_seq} to {(event.seq or 0) - 1} are missing"
    if prev is not None and event.prev_hash != prev:
        return "its previous hash is not the previous event's hash"
    if event.chain_hash != event_hash(event, event.prev_hash or ""):
        return "its content does not match its hash (changed after it was sealed)"
    return None


class AuditSealer:
    """Seals new audit events every ``seconds`` on every replica (they take turns: ``seal``)."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], seconds: float, batch: int = 500
    ) -> None:
        self._sessions = sessions
        self._batch = batch
        self._refresher = Refresher("audit-chain", self.seal_all, seconds)

    async def seal_all(self) -> None:
        while await seal(self._sessions, self._batch) == self._batch:
            pass

    def start(self) -> None:
        self._refresher.start()

    async def aclose(self) -> None:
        await self._refresher.aclose()
