"""Errors of keys, limits and budgets, one tree (reported by the HTTP edge by type: the statuses
and wire codes are ``gateway/errors.py``'s table).

    GatewayError (llm_service.errors)
    ├── RateLimited       a key's requests or tokens per minute are used up (``retry_after``)
    │   └── BudgetExceeded   a key's or team's spend for the day or month is used up
    ├── KeyNotFound       no API key of that id
    └── OwnKeyRevocation  an admin may not revoke the key it is using
"""

from __future__ import annotations

from llm_service.errors import GatewayError


class RateLimited(GatewayError):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BudgetExceeded(RateLimited):
    pass


class KeyNotFound(GatewayError):
    pass


class OwnKeyRevocation(GatewayError):
    pass
