"""The circuit breaker's states, on a controlled clock."""

from __future__ import annotations

from llm_service.circuit import CircuitBreaker
from llm_service.config import CircuitBreakerConfig


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def breaker(clock: Clock) -> CircuitBreaker:
    return CircuitBreaker(CircuitBreakerConfig(failure_threshold=2, cooldown_seconds=10), clock)


def test_opens_after_consecutive_failures_and_a_success_resets_the_count() -> None:
    circuit = breaker(Clock())
    circuit.record_failure()
    circuit.record_success()
    circuit.record_failure()
    assert circuit.state == "closed"

    circuit.record_failure()

    assert circuit.state == "open"
    assert not circuit.allows()


def test_half_open_lets_exactly_one_probe_through() -> None:
    clock = Clock()
    circuit = breaker(clock)
    circuit.record_failure()
    circuit.record_failure()
    clock.now = 10

    assert circuit.allows()
    circuit.acquire()
    assert not circuit.allows()  # the probe is under way
    circuit.record_failure()
    assert circuit.state == "open"  # a failed probe starts another cooldown

    clock.now = 20
    circuit.acquire()
    circuit.record_success()
    assert circuit.state == "closed"


def test_a_probe_that_never_reports_does_not_block_the_next_forever() -> None:
    clock = Clock()
    circuit = breaker(clock)
    circuit.record_failure()
    circuit.record_failure()
    clock.now = 10
    circuit.acquire()

    clock.now = 20

    assert circuit.allows()
