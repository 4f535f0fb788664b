"""Circuit breaker: a deployment that keeps failing leaves the rotation for a cooldown.

closed -> (``failure_threshold`` consecutive failures) -> open -> (cooldown elapsed) ->
half-open: exactly one probe call goes through; its success closes the circuit, its failure
opens it for another cooldown.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_service.config import CircuitBreakerConfig
from llm_service.retry import Clock


@dataclass
class CircuitBreaker:
    config: CircuitBreakerConfig
    clock: Clock
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False
    probe_started: float = 0.0

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        if self.clock() - self.opened_at < self.config.cooldown_seconds:
            return "open"
        return "half-open"

    def allows(self) -> bool:
        """Whether a call may go to this deployment now (without claiming the probe)."""
        state = self.state
        if state != "half-open":
            return state == "closed"
        # A probe whose outcome never arrived (its caller vanished) must not block the next one.
        stale = self.clock() - self.probe_started >= self.config.cooldown_seconds
        return not self.probing or stale

    def acquire(self) -> None:
        """The caller is about to call: in half-open state this call is the one probe."""
        if self.state == "half-open":
            self.probing = True
            self.probe_started = self.clock()

    def record_success(self) -> None:
        self.failures = 0
        self.opened_at = None
        self.probing = False

    def record_failure(self) -> None:
        self.failures += 1
        if self.probing or self.failures >= self.config.failure_threshold:
            self.opened_at = self.clock()
        self.probing = False

    def release(self) -> None:
        """The call ended without saying anything about the deployment's health."""
        self.probing = False
