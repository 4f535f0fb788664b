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
from db.models import ApiKey

KEY_PREFIX = "gw-"
_CACHE_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's identity and roles."""

    key_id: int
    name: str
    roles: frozenset[str]

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: int
    name: str
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

    async def create(self, name: str, roles: Iterable[str]) -> tuple[str, KeyInfo]:
        """Returns the new key; only its hash is stored, so this is the one time it is seen."""
        key = generate_key()
        info = await self._insert(key, name, roles)
        return key, info

    async def ensure(self, key: str, name: str, roles: Iterable[str]) -> None:
        """Make sure ``key`` exists and is active (the GATEWAY_ADMIN_KEY bootstrap)."""
        async with self._sessions.begin() as session:
            row = await session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(key)))
            if row is not None:
                row.revoked_at = None
                row.roles = sorted(set(row.roles) | set(roles))
                return
        await self._insert(key, name, roles)

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
        principal = Principal(row.id, row.name, frozenset(row.roles)) if row else None
        if self._cache_seconds > 0:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[digest] = (now + self._cache_seconds, principal)
        return principal

    async def revoke(self, key_id: int) -> bool:
        async with self._sessions.begin() as session:
            result = await session.execute(
                update(ApiKey)
                .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
        self._cache.clear()
        return bool(getattr(result, "rowcount", 0))

    async def list(self) -> list[KeyInfo]:
        async with self._sessions() as session:
            rows = await session.scalars(select(ApiKey).order_by(ApiKey.id))
            return [_info(row) for row in rows]

    async def _insert(self, key: str, name: str, roles: Iterable[str]) -> KeyInfo:
        row = ApiKey(
            name=name,
            key_hash=hash_key(key),
            prefix=key[: len(KEY_PREFIX) + 6],
            roles=sorted(set(roles)),
        )
        async with self._sessions.begin() as session:
            session.add(row)
        return _info(row)


def _info(row: ApiKey) -> KeyInfo:
    return KeyInfo(row.id, row.name, row.prefix, tuple(row.roles), row.revoked_at is not None)
