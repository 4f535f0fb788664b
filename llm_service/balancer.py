"""Picks the upstream behind an alias: weighted, least in-flight, skipping open circuits."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from llm_service.circuit import CircuitBreaker
from llm_service.errors import ModelUnavailable
from llm_service.registry import Deployment, ModelRegistry
from llm_service.retry import Timing


@dataclass
class Upstream:
    """One deployment's live state: calls under way and its circuit."""

    alias: str
    deployment: Deployment
    breaker: CircuitBreaker
    in_flight: int = 0

    @property
    def load(self) -> float:
        return self.in_flight / self.deployment.weight

    def begin(self) -> None:
        self.in_flight += 1
        self.breaker.acquire()

    def end(self) -> None:
        self.in_flight -= 1


class Balancer:
    def __init__(self, registry: ModelRegistry, timing: Timing) -> None:
        self._registry = registry
        self._timing = timing
        self._upstreams: dict[tuple[str, str], Upstream] = {}

    def upstreams(self, alias: str) -> list[Upstream]:
        return [self._upstream(alias, member) for member in self._registry.members(alias)]

    def pick(self, alias: str, avoid: Collection[str] = ()) -> Upstream:
        """The least loaded healthy upstream, preferring those not in ``avoid`` (ids)."""
        available = [u for u in self.upstreams(alias) if u.deployment.available]
        if not available:
            reason = self._registry.get(alias).unavailable_reason or "no adapter"
            raise ModelUnavailable(alias, reason)
        healthy = [u for u in available if u.breaker.allows()]
        if not healthy:
            raise ModelUnavailable(
                alias, "its deployments are failing; they are out of rotation for a cooldown"
            )
        fresh = [u for u in healthy if u.deployment.id not in avoid] or healthy
        if len(fresh) == 1:  # most aliases have one deployment
            return fresh[0]
        lightest = min(u.load for u in fresh)
        tied = [u for u in fresh if u.load == lightest]
        weights = [u.deployment.weight for u in tied]
        return self._timing.random.choices(tied, weights)[0]

    def _upstream(self, alias: str, member: Deployment) -> Upstream:
        key = (alias, member.id)
        upstream = self._upstreams.get(key)
        if upstream is None:
            breaker = CircuitBreaker(member.config.circuit_breaker, self._timing.clock)
            upstream = self._upstreams[key] = Upstream(alias, member, breaker)
        return upstream
