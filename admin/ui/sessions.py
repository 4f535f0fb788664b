"""Server-side admin sessions: a random token in the cookie, its hash and a CSRF token in the
database, so a session works on every replica and ends at sign-out, expiry or key revocation."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from db.base import utcnow
from db.models import AdminSession, ApiKey, AuditEvent


@dataclass(frozen=True, slots=True)
class SessionInfo:
    key_id: int
    key_name: str
    owner: str
    csrf_token: str
    expires_at: datetime

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and same_token(presented, self.csrf_token)


def same_token(presented: str, expected: str) -> bool:
    """Compared in constant time, as bytes: ``hmac.compare_digest`` raises on a str holding
    anything but ASCII, and what a browser sends may hold anything."""
    return hmac.compare_digest(
        presented.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class AdminSessions:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        lifetime_seconds: float,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._sessions = sessions
        self._lifetime = timedelta(seconds=lifetime_seconds)
        self._clock = clock

    async def open(self, key_id: int, client: str) -> str:
        """Start a session for an authenticated admin key (audited with the client's address);
        returns the cookie's token."""
        token = secrets.token_urlsafe(32)
        now = self._clock()
        row = AdminSession(
            token_hash=_digest(token),
            api_key_id=key_id,
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + self._lifetime,
        )
        async with self._sessions.begin() as session:
            # Expired sessions are swept at each sign-in, so the table stays small.
            await session.execute(delete(AdminSession).where(AdminSession.expires_at <= now))
            session.add(row)
            session.add(_sign_in_audit("admin.signed_in", key_id, client, None))
        return token

    async def refused(self, key_id: int | None, client: str, reason: str) -> None:
        """Audit a refused sign-in: an unknown key, a key without the admin role, or throttled."""
        async with self._sessions.begin() as session:
            session.add(_sign_in_audit("admin.sign_in_refused", key_id, client, reason))

    async def find(self, token: str) -> SessionInfo | None:
        """The live session for this token; None when unknown, expired, or the key lost admin."""
        async with self._sessions() as session:
            found = (
                await session.execute(
                    select(AdminSession, ApiKey)
                    .join(ApiKey, ApiKey.id == AdminSession.api_key_id)
                    .where(AdminSession.token_hash == _digest(token))
                )
            ).first()
        if found is None:
            return None
        row, key = found
        if row.expires_at <= self._clock() or key.revoked_at is not None:
            return None
        if "admin" not in key.roles:
            return None
        return SessionInfo(key.id, key.name, key.owner, row.csrf_token, row.expires_at)

    async def close(self, token: str) -> None:
        async with self._sessions.begin() as session:
            await session.execute(
                delete(AdminSession).where(AdminSession.token_hash == _digest(token))
            )


def _sign_in_audit(action: str, key_id: int | None, client: str, reason: str | None) -> AuditEvent:
    detail = {"client": client} if reason is None else {"client": client, "reason": reason}
    return AuditEvent(actor_key_id=key_id, action=action, detail=detail)
