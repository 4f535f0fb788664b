"""API keys: created once and shown once, stored as SHA-256, looked up with a short cache."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import ApiKey, AuditEvent
from governance import KeyState

KEY_PREFIX = "gw-"
_CACHE_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's identity and roles."""

    key_id: int
    name: str
    roles: frozenset[str]
    owner: str = ""  # the person or service the key belongs to

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: int
    name: str
    owner: str
    prefix: str
    roles: tuple[str, ...]
    revoked: bool


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class KeyStore:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        cache_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        # One database lookup per key at a time: when an entry expires under load, every
        # concurrent request for that key waits on the same lookup instead of making its own.
        self._lookups: dict[str, asyncio.Task[Principal | None]] = {}

    async def create(
        self,
        name: str,
        roles: Iterable[str],
        owner: str | None = None,
        actor_key_id: int | None = None,
    ) -> tuple[str, KeyInfo]:
        """Returns the new key; only its hash is stored, so this is the one time it is seen.

        ``owner`` defaults to ``name``; ``actor_key_id`` is who created it (None: the CLI).
        """
        key = generate_key()
        info = await self._insert(key, name, roles, owner or name, actor_key_id)
        return key, info

    async def ensure(self, key: str, name: str, roles: Iterable[str]) -> None:
        """Make sure ``key`` exists and is active (the GATEWAY_ADMIN_KEY bootstrap)."""
        async with self._sessions.begin() as session:
            row = await session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(key)))
            if row is not None:
                row.revoked_at = None
                row.roles = sorted(set(row.roles) | set(roles))
                return
        await self._insert(key, name, roles, name, None)

    async def authenticate(self, key: str) -> Principal | None:
        digest = hash_key(key)
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        lookup = self._lookups.get(digest)
        if lookup is None:
            lookup = asyncio.create_task(self._lookup(digest, now))
            self._lookups[digest] = lookup
            lookup.add_done_callback(lambda _: self._lookups.pop(digest, None))
        # shield: one caller giving up (client gone) must not cancel the others' lookup.
        return await asyncio.shield(lookup)

    async def _lookup(self, digest: str, now: float) -> Principal | None:
        async with self._sessions() as session:
            row = await session.scalar(
                select(ApiKey).where(ApiKey.key_hash == digest, ApiKey.revoked_at.is_(None))
            )
        principal = Principal(row.id, row.name, frozenset(row.roles), row.owner) if row else None
        if self._cache_seconds > 0:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[digest] = (now + self._cache_seconds, principal)
        return principal

    async def revoke(self, key_id: int, actor_key_id: int | None = None) -> bool:
        """Revokes an active key (audited with ``actor_key_id``; None: the CLI)."""
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(ApiKey)
                .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            revoked = bool(getattr(result, "rowcount", 0))
            if revoked:
                session.add(_audit("key.revoked", actor_key_id, {"key_id": key_id}))
        self._cache.clear()
        return revoked

    async def key_state(self, key_id: int) -> KeyState | None:
        """Implements ``governance.KeyDirectory``: read from the database every time, never the
        cache, so a key revoked on any replica stops its calls at the next decision."""
        async with self._sessions() as session:
            row = await session.get(ApiKey, key_id)
        if row is None:
            return None
        return KeyState(row.id, row.revoked_at is None, frozenset(row.roles), row.owner)

    async def owners(self, key_ids: Iterable[int]) -> dict[int, str]:
        """Key id -> owner, revoked keys included (an audit or a decision may name them)."""
        wanted = set(key_ids)
        if not wanted:
            return {}
        async with self._sessions() as session:
            rows = await session.execute(
                select(ApiKey.id, ApiKey.owner).where(ApiKey.id.in_(wanted))
            )
            return {key_id: owner for key_id, owner in rows.all()}

    async def list(self) -> list[KeyInfo]:
        async with self._sessions() as session:
            rows = await session.scalars(select(ApiKey).order_by(ApiKey.id))
            return [_info(row) for row in rows]

    async def _insert(
        self, key: str, name: str, roles: Iterable[str], owner: str, actor_key_id: int | None
    ) -> KeyInfo:
        row = ApiKey(
            name=name,
            owner=owner,
            key_hash=hash_key(key),
            prefix=key[: len(KEY_PREFIX) + 6],
            roles=sorted(set(roles)),
        )
        async with self._sessions.begin() as session:
            session.add(row)
            await session.flush()
            detail = {"key_id": row.id, "name": name, "owner": owner, "roles": row.roles}
            session.add(_audit("key.created", actor_key_id, detail))
        return _info(row)


def _info(row: ApiKey) -> KeyInfo:
    revoked = row.revoked_at is not None
    return KeyInfo(row.id, row.name, row.owner, row.prefix, tuple(row.roles), revoked)


def _audit(action: str, actor_key_id: int | None, detail: dict[str, object]) -> AuditEvent:
    return AuditEvent(actor_key_id=actor_key_id, action=action, detail=detail)
