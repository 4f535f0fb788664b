"""API keys: created once and shown once, stored as SHA-256, looked up with a short cache."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from accounts.key_usage import LastUsed
from accounts.limits.config import KeyLimits, TeamBudget
from accounts.principals import Principal
from db.base import utcnow
from db.idempotent import insert_or_ignore
from db.models import ApiKey, AuditEvent, Team
from db.transactions import Transactions, json_of, utc
from governance import KeyState

KEY_PREFIX = "gw-"
# What an admin may change on a key after creating it (roles and the secret stay as made).
EDITABLE = ("name", "owner", "team", "expires_at", "allowed_models", "limits")
_CACHE_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: int
    name: str
    owner: str
    prefix: str
    roles: tuple[str, ...]
    revoked: bool
    team: str | None = None
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    expires_at: datetime | None = None
    allowed_models: tuple[str, ...] | None = None
    limits: KeyLimits | None = None


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


_KEY_STATE = "SELECT id, roles, owner, revoked_at, expires_at FROM api_keys WHERE id = ?"


class KeyStore:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        cache_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        # The check before every tool call reads the key as plain SQL (db/transactions.py).
        self._transactions = Transactions.of(sessions)
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        # One database lookup per key at a time: when an entry expires under load, every
        # concurrent request for that key waits on the same lookup instead of making its own.
        self._lookups: dict[str, asyncio.Task[Principal | None]] = {}
        self.last_used = LastUsed(sessions)

    async def create(
        self,
        name: str,
        roles: Iterable[str],
        owner: str | None = None,
        actor_key_id: int | None = None,
        *,
        settings: Mapping[str, object] | None = None,
    ) -> tuple[str, KeyInfo]:
        """Returns the new key; only its hash is stored, so this is the one time it is seen.

        ``owner`` defaults to ``name``; ``actor_key_id`` is who created it (None: the CLI);
        ``settings`` are ``EDITABLE`` columns set from the start (team, expiry, limits...).
        """
        unknown = set(settings or {}) - set(EDITABLE)
        if unknown:  # sso_subject is set only by sso_person
            raise ValueError(f"not editable: {sorted(unknown)}")
        key = generate_key()
        info = await self._insert(key, name, roles, owner or name, actor_key_id, settings=settings)
        return key, info

    async def ensure(self, key: str, name: str, roles: Iterable[str]) -> None:
        """Make sure ``key`` exists and is active (the GATEWAY_ADMIN_KEY bootstrap).

        Every worker and replica runs this at start, often at the same moment: insert-or-ignore,
        then read, so whichever loses the race finds the winner's row instead of failing."""
        digest, wanted = hash_key(key), sorted(set(roles))
        values = {"name": name, "owner": name, "key_hash": digest, "prefix": key_prefix(key)}
        async with self._sessions.begin() as session:
            created = await insert_or_ignore(
                session, ApiKey, values | {"roles": wanted}, ["key_hash"]
            )
            row = await session.scalar(select(ApiKey).where(ApiKey.key_hash == digest))
            assert row is not None  # inserted here, or by whoever won the race
            if created:
                detail = {"key_id": row.id, "name": name, "owner": name, "roles": wanted}
                session.add(_audit("key.created", None, detail))
            elif row.revoked_at is not None or not set(wanted) <= set(row.roles):
                row.revoked_at = None
                row.roles = sorted(set(row.roles) | set(wanted))

    async def sso_person(self, subject: str, person: str, roles: Iterable[str]) -> KeyInfo | None:
        """The row standing for a person signed in with SSO, created on first sign-in and given
        the roles their groups map to now (so a group removed at the provider takes effect at
        the next sign-in). None when an admin revoked it: revocation outlives the provider."""
        wanted = sorted(set(roles))
        async with self._sessions.begin() as session:
            row = await session.scalar(select(ApiKey).where(ApiKey.sso_subject == subject))
            if row is not None:
                if row.revoked_at is not None:
                    return None
                if (row.owner, row.roles) != (person, wanted):
                    detail = {"key_id": row.id, "before": {"owner": row.owner, "roles": row.roles}}
                    row.owner, row.roles = person, wanted
                    detail["after"] = {"owner": person, "roles": wanted}
                    session.add(_audit("key.changed", row.id, detail))
                return _info(row)
        secret = generate_key()  # never shown: the row is an identity, not a usable key
        return await self._insert(
            secret, f"sso:{person}", wanted, person, None, settings={"sso_subject": subject}
        )

    async def authenticate(self, key: str) -> Principal | None:
        digest = hash_key(key)
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > now:
            principal = cached[1]
        else:
            principal = await self._shared_lookup(digest, ApiKey.key_hash == digest, now)
        if principal is None:
            return None
        if principal.expires_at is not None and principal.expired(utcnow()):
            return None
        self.last_used.touch(principal.key_id, now)
        return principal

    async def by_id(self, key_id: int) -> Principal | None:
        """An active key's principal by id (for work done later on a key's behalf)."""
        now = self._clock()
        cached = self._cache.get(f"id:{key_id}")
        if cached is not None and cached[0] > now:
            return cached[1]
        return await self._shared_lookup(f"id:{key_id}", ApiKey.id == key_id, now)

    async def _shared_lookup(
        self, cache_key: str, where: ColumnElement[bool], now: float
    ) -> Principal | None:
        lookup = self._lookups.get(cache_key)
        if lookup is None:
            lookup = asyncio.create_task(self._lookup(cache_key, where, now))
            self._lookups[cache_key] = lookup
            lookup.add_done_callback(lambda _: self._lookups.pop(cache_key, None))
        # shield: one caller giving up (client gone) must not cancel the others' lookup.
        return await asyncio.shield(lookup)

    async def _lookup(
        self, cache_key: str, where: ColumnElement[bool], now: float
    ) -> Principal | None:
        async with self._sessions() as session:
            found = (
                await session.execute(
                    select(ApiKey, Team)
                    .outerjoin(Team, Team.name == ApiKey.team)
                    .where(where, ApiKey.revoked_at.is_(None))
                )
            ).first()
        principal = _principal(found[0], found[1]) if found else None
        if self._cache_seconds > 0:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[cache_key] = (now + self._cache_seconds, principal)
        return principal

    def forget(self) -> None:
        """Drops cached lookups, so a change made on this replica applies at once here."""
        self._cache.clear()

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

    async def change(
        self, key_id: int, values: Mapping[str, object], actor_key_id: int | None
    ) -> KeyInfo | None:
        """Sets an active key's editable settings (``EDITABLE``; audited as ``key.changed``).

        None for an unknown or revoked key. Cached lookups here are dropped at once; other
        replicas see the change within ``auth_cache_seconds``.
        """
        unknown = set(values) - set(EDITABLE)
        if unknown:
            raise ValueError(f"not editable: {sorted(unknown)}")
        async with self._sessions.begin() as session:
            row = await session.get(ApiKey, key_id)
            if row is None or row.revoked_at is not None:
                return None
            before = _settings(row)
            for name, value in values.items():
                setattr(row, name, value)
            detail = {"key_id": key_id, "before": before, "after": _settings(row)}
            session.add(_audit("key.changed", actor_key_id, detail))
            await session.flush()
            info = _info(row)
        self.forget()
        return info

    async def key_state(self, key_id: int) -> KeyState | None:
        """Implements ``governance.KeyDirectory``: read from the database every time, never the
        cache, so a key revoked on any replica stops its calls at the next decision. An expired
        key is inactive too: it could not make the call now, so its calls stop the same way."""
        rows = await self._transactions.read(_KEY_STATE, key_id)
        if not rows:
            return None
        _, roles, owner, revoked_at, expires_at = rows[0]
        expired = expires_at is not None and utc(expires_at) <= utcnow()
        active = revoked_at is None and not expired
        return KeyState(key_id, active, frozenset(json_of(roles)), owner)

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
        await self.last_used.flush()  # so this replica's recent uses show at once
        async with self._sessions() as session:
            rows = await session.scalars(select(ApiKey).order_by(ApiKey.id))
            return [_info(row) for row in rows]

    async def _insert(
        self,
        key: str,
        name: str,
        roles: Iterable[str],
        owner: str,
        actor_key_id: int | None,
        *,
        settings: Mapping[str, object] | None = None,
    ) -> KeyInfo:
        row = ApiKey(
            name=name,
            owner=owner,
            key_hash=hash_key(key),
            prefix=key_prefix(key),
            roles=sorted(set(roles)),
        )
        for setting, value in (settings or {}).items():
            setattr(row, setting, value)
        async with self._sessions.begin() as session:
            session.add(row)
            await session.flush()
            detail = {"key_id": row.id, "name": name, "owner": owner, "roles": row.roles}
            detail |= {"settings": _settings(row)} if settings else {}
            session.add(_audit("key.created", actor_key_id, detail))
        return _info(row)


def key_prefix(key: str) -> str:
    """What lists show of a key: enough to tell keys apart, too little to use."""
    return key[: len(KEY_PREFIX) + 6]


def _info(row: ApiKey) -> KeyInfo:
    return KeyInfo(
        row.id,
        row.name,
        row.owner,
        row.prefix,
        tuple(row.roles),
        row.revoked_at is not None,
        team=row.team,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        expires_at=row.expires_at,
        allowed_models=tuple(row.allowed_models) if row.allowed_models is not None else None,
        limits=KeyLimits.model_validate(row.limits) if row.limits else None,
    )


def _settings(row: ApiKey) -> dict[str, object]:
    values = {name: getattr(row, name) for name in EDITABLE}
    expires = row.expires_at
    values["expires_at"] = expires.isoformat() if expires is not None else None
    return values


def _principal(row: ApiKey, team: Team | None) -> Principal:
    info = _info(row)
    budget = (
        TeamBudget(budget_per_day=team.budget_per_day, budget_per_month=team.budget_per_month)
        if team is not None
        else None
    )
    return Principal(
        row.id,
        row.name,
        frozenset(row.roles),
        row.owner,
        team=row.team,
        allowed_models=frozenset(info.allowed_models) if info.allowed_models is not None else None,
        limits=info.limits,
        team_budget=budget,
        expires_at=row.expires_at,
    )


def _audit(action: str, actor_key_id: int | None, detail: dict[str, object]) -> AuditEvent:
    return AuditEvent(actor_key_id=actor_key_id, action=action, detail=detail)
