"""Keys' run-time settings: team, expiry, model allow-list and own limits, set through
``PATCH /v1/admin/keys/{id}``, audited, and applied to the key's next request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from tests.accounts.limits.test_shared_limits import _admitted_before_429
from tests.support.gateway import RunningGateway, running_gateway

MODELS = [{"name": "mock", "provider": "mock"}, {"name": "other", "provider": "mock"}]


def _chat(gateway: RunningGateway, key: str, model: str = "mock") -> httpx.Response:
    return httpx.post(
        f"{gateway.v1}/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {key}"},
    )


def _admin(gateway: RunningGateway, admin: str) -> httpx.Client:
    return httpx.Client(base_url=gateway.v1, headers={"authorization": f"Bearer {admin}"})


def test_settings_are_edited_audited_and_enforced(database_url: str) -> None:
    with running_gateway(database_url, models=MODELS) as gateway:
        admin = gateway.create_key("ops", ["admin"])
        user = gateway.create_key("svc", ["user"])
        expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
        with _admin(gateway, admin) as client:
            changed = client.patch(
                "/admin/keys/2",
                json={
                    "team": "search",
                    "expires_at": expires.isoformat(),
                    "allowed_models": ["mock"],
                    "limits": {"requests_per_minute": 2, "budget_per_month": 50},
                },
            )
            assert changed.status_code == 200, changed.text

            refused_model = _chat(gateway, user, "other")
            admitted, limited = _admitted_before_429(lambda _: _chat(gateway, user))
            listed = {k["id"]: k for k in client.get("/admin/keys").json()["data"]}
            audit = client.get("/admin/audit", params={"action": "key.changed"}).json()["data"]

            client.patch("/admin/keys/2", json={"expires_at": "2020-01-01T00:00:00Z"})
            expired = _chat(gateway, user)

    key = changed.json()
    assert key["team"] == "search"
    assert key["allowed_models"] == ["mock"]
    assert datetime.fromisoformat(key["expires_at"]) == expires
    assert key["limits"]["requests_per_minute"] == 2
    assert key["limits"]["budget_per_month"] == 50
    assert refused_model.status_code == 403
    assert admitted == 2  # the key's own limit, where its role has none
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"
    assert listed[2]["last_used_at"] is not None
    assert listed[2]["created_at"] is not None
    assert audit[0]["detail"]["key_id"] == 2
    assert audit[0]["detail"]["before"]["team"] is None
    assert audit[0]["detail"]["after"]["team"] == "search"
    assert audit[0]["actor_key_id"] == 1
    assert expired.status_code == 401


def test_bad_settings_are_refused_with_the_field_named(database_url: str) -> None:
    with running_gateway(database_url, models=MODELS) as gateway:
        admin = gateway.create_key("ops", ["admin"])
        gateway.create_key("svc", ["user"])
        with _admin(gateway, admin) as client:
            bad = {
                "allowed_models": client.patch("/admin/keys/2", json={"allowed_models": ["x"]}),
                "expires_at": client.patch(
                    "/admin/keys/2", json={"expires_at": "2030-01-01T00:00:00"}
                ),
                "name": client.patch("/admin/keys/2", json={"name": None}),
                "limits": client.patch("/admin/keys/2", json={"limits": {"budget_per_day": -1}}),
                "team": client.patch("/admin/keys/2", json={"team": "../etc"}),
                "colour": client.patch("/admin/keys/2", json={"colour": "red"}),
            }
            missing = client.patch("/admin/keys/99", json={"team": "x"})
            unchanged = client.get("/admin/keys").json()["data"][1]

    for field, response in bad.items():
        assert response.status_code == 400, (field, response.text)
        assert field in (response.json()["error"]["param"] or ""), (field, response.text)
    assert missing.status_code == 404
    assert unchanged["team"] is None
    assert unchanged["allowed_models"] is None


def test_a_key_is_created_with_its_settings_and_lists_only_its_models(database_url: str) -> None:
    with running_gateway(database_url, models=MODELS) as gateway:
        admin = gateway.create_key("ops", ["admin"])
        with _admin(gateway, admin) as client:
            created = client.post(
                "/admin/keys",
                json={
                    "name": "svc",
                    "roles": ["user"],
                    "team": "search",
                    "allowed_models": ["mock"],
                    "limits": {"requests_per_minute": 5},
                },
            )
            unknown_model = client.post(
                "/admin/keys", json={"name": "x", "roles": ["user"], "allowed_models": ["nope"]}
            )
            audit = client.get("/admin/audit", params={"action": "key.created"}).json()["data"]
        key = created.json()["key"]
        headers = {"authorization": f"Bearer {key}"}
        listed = httpx.get(f"{gateway.v1}/models", headers=headers).json()["data"]
        allowed = httpx.get(f"{gateway.v1}/models/mock", headers=headers)
        hidden = httpx.get(f"{gateway.v1}/models/other", headers=headers)
        everything = httpx.get(f"{gateway.v1}/models", headers={"authorization": f"Bearer {admin}"})

    assert created.status_code == 201, created.text
    assert created.json()["team"] == "search"
    assert created.json()["limits"]["requests_per_minute"] == 5
    assert [model["id"] for model in listed] == ["mock"]
    assert allowed.status_code == 200
    assert hidden.status_code == 404
    assert {model["id"] for model in everything.json()["data"]} == {"mock", "other"}
    assert unknown_model.status_code == 400
    assert unknown_model.json()["error"]["param"] == "allowed_models"
    assert audit[0]["detail"]["settings"]["team"] == "search"
