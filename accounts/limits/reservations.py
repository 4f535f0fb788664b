"""A request's hold on its key's and team's budgets while it is in flight.

Spend is known only once the answer is in, so a budget checked before and charged after lets
every simultaneous request through. Instead the limiter adds each request's worst-case cost to
its budget counters before the request goes upstream (one atomic hold per budget, which is also
the check: added only while the counter is below the budget, so a refused request adds nothing,
not even for a moment) and settles the hold to the real cost after. Simultaneous requests
therefore see each other's holds: a budget overshoots by at most one request's reserved cost, on
one replica or across replicas sharing Redis.

The worst case is deliberately simple: the model's ``per_request`` price, plus the output
tokens the request may produce (its ``max_tokens``, else ``KeyLimitsConfig.reserve_max_tokens``)
at the output price, plus an estimate of its prompt (``prompt_tokens``: four bytes of request a
token) at the input price. An unpriced model reserves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accounts.limits.budgets import Budget
from accounts.pricing import ModelPrice
from accounts.principals import Principal

BYTES_PER_TOKEN = 4


@dataclass(slots=True)
class Reservation:
    """What ``KeyLimiter.reserve`` held for one request; ``KeyLimiter.settle`` ends it once."""

    principal: Principal | None  # None: nothing is counted for this key
    alias: str = ""
    held: float = 0.0  # USD added to each of ``budgets``
    budgets: list[Budget] = field(default_factory=list)
    counts_tokens: bool = False
    settled: bool = False


def worst_case_cost(price: ModelPrice | None, max_tokens: int, prompt_tokens: int) -> float:
    """USD a request can cost at most (see the module's docstring); 0 when unpriced."""
    if price is None:
        return 0.0
    return price.per_request + max_tokens * price.output + prompt_tokens * price.input


def prompt_tokens_of(body_bytes: int) -> int:
    """A prompt's tokens, estimated from its size: generous, for a worst case."""
    return body_bytes // BYTES_PER_TOKEN + 1
