"""Taking turns to refresh one OAuth grant that several replicas share.

An authorization server that rotates refresh tokens accepts each one once. Two replicas whose
shared access token expires at the same moment would both send the same refresh token; the
second is refused, and a refused refresh ends the grant for everyone. So a replica first claims
the refresh in the grant's store, for a while (a lease: one that dies holding it delays the
others by that much, no more). A replica that finds the refresh claimed waits for the tokens the
claimant stores and uses them; storing or dropping the tokens ends the claim.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Protocol

from mcp.shared.auth import OAuthToken

# Far longer than a token request takes; an authorization server slower than this lets a
# second replica try its own refresh, as if there were no claim.
REFRESH_CLAIM_SECONDS = 45.0
# A concurrent refresh is rare (once per token lifetime, on a replica that met the expiry at the
# same moment), so waiting for one by asking the store again costs nothing measurable.
WAIT_STEP_SECONDS = 0.1


class RefreshClaims(Protocol):
    """The part of a grant store that lets replicas take turns."""

    async def get_tokens(self) -> OAuthToken | None: ...

    async def claim_refresh(self, seconds: float) -> bool:
        """Claims the refresh for ``seconds`` unless another claim is live; True if claimed."""
        ...

    async def release_refresh(self) -> None:
        """Ends this store's own claim, if it still holds one (storing tokens ends it too)."""
        ...


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store holds now, put there since the caller read its tokens: another replica's
    refresh, an administrator's reconnect, or None (the grant ended)."""

    tokens: OAuthToken | None


async def turn_to_refresh(store: RefreshClaims, used: str | None) -> Stored | None:
    """None when the caller holds the claim and should refresh with ``used`` (the refresh token
    it holds); otherwise the tokens that replaced ``used``. Waits while another replica holds
    the claim; past the claim's length (clocks may disagree) it lets the caller refresh."""
    deadline = time.monotonic() + REFRESH_CLAIM_SECONDS
    while True:
        claimed = await store.claim_refresh(REFRESH_CLAIM_SECONDS)
        tokens = await store.get_tokens()
        if tokens is None or tokens.refresh_token != used:
            if claimed:
                await store.release_refresh()
            return Stored(tokens)
        if claimed or time.monotonic() > deadline:
            return None
        await asyncio.sleep(WAIT_STEP_SECONDS)
