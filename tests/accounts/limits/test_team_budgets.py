"""A team's budget, shared by its keys on two replicas through Redis, and its alerts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.accounts.limits.test_shared_limits import REDIS_URL, _redis_or_skip
from tests.support.gateway import RunningGateway, running_gateway

# Mock usage is estimated at four characters a token; at 0.1 USD a token each call costs dollars.
PRICED_MOCK = [
    {"name": "mock", "provider": "mock", "price": {"input_per_1k": 100, "output_per_1k": 100}}
]
PROMPT = "x" * 40


@pytest.fixture
def two_gateways(tmp_path: Path) -> Iterator[tuple[RunningGateway, RunningGateway]]:
    _redis_or_skip()
    database = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    shared = {
        "models": PRICED_MOCK,
        "redis_url": REDIS_URL,
        "redis_key_prefix": f"test-{uuid.uuid4().hex}:",
    }
    with running_gateway(database, **shared) as one, running_gateway(database, **shared) as two:
        yield one, two


def _chat(gateway: RunningGateway, key: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.v1}/chat/completions",
        json={"model": "mock", "messages": [{"role": "user", "content": PROMPT}]},
        headers={"authorization": f"Bearer {key}"},
    )


def _admin(gateway: RunningGateway, admin: str, method: str, path: str, body: object) -> None:
    response = httpx.request(
        method,
        f"{gateway.v1}/admin/{path}",
        json=body,
        headers={"authorization": f"Bearer {admin}"},
    )
    assert response.status_code == 200, response.text


def test_a_team_budget_crossed_on_one_replica_stops_the_next_request_on_the_other(
    two_gateways: tuple[RunningGateway, RunningGateway],
) -> None:
    one, two = two_gateways
    admin = one.create_key("ops", ["admin"])
    first, second, outsider = (one.create_key(n, ["user"]) for n in ("a", "b", "outsider"))
    _admin(one, admin, "PUT", "teams/search", {"budget_per_day": 10})
    for key_id in (2, 3):  # the team's two keys (the admin key is 1)
        _admin(one, admin, "PATCH", f"keys/{key_id}", {"team": "search"})

    calls = 0
    while (reply := _chat((one, two)[calls % 2], (first, second)[calls % 2])).status_code == 200:
        calls += 1
        assert calls < 20, "the team was never stopped"
    refused_on = (one, two)[calls % 2]
    other = (one, two)[(calls + 1) % 2]

    assert calls >= 2  # several calls, from both keys, on both replicas, shared one budget
    assert reply.status_code == 429
    assert reply.json()["error"]["code"] == "budget_exceeded"
    assert "search" in reply.json()["error"]["message"]
    assert 1 <= int(reply.headers["retry-after"]) <= 86_400
    # Every key of the team is stopped on every replica; keys of no team are not.
    assert _chat(other, first).status_code == 429
    assert _chat(refused_on, second).status_code == 429
    assert _chat(other, outsider).status_code == 200

    audit = httpx.get(
        f"{one.v1}/admin/audit",
        params={"action": "budget.threshold_crossed"},
        headers={"authorization": f"Bearer {admin}"},
    ).json()["data"]
    crossings = sorted((e["detail"]["threshold"], e["detail"]["subject"]) for e in audit)
    assert crossings == [(0.8, "search"), (1.0, "search")]  # once each, whichever replica
    assert all(e["detail"]["period"] == "day" and e["detail"]["budget"] == 10 for e in audit)
