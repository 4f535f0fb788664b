"""What the decision needs to know of a caller's key, and the port it asks through.

The gateway owns API keys; governance must not import it, so the gateway hands in a
``KeyDirectory`` (its ``KeyStore``) and the decision asks it for the key's state *now*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class KeyState:
    """A key as it is now: revoked and expired keys are not active; roles and owner as last
    stored."""

    key_id: int
    active: bool
    roles: frozenset[str]
    owner: str


class KeyDirectory(Protocol):
    async def key_state(self, key_id: int) -> KeyState | None:
        """The key's current state; None when no key has this id."""
        ...
