"""Keys belong to an owner; creating and revoking them is audited with the acting admin; ids out
of the database's range are refused as input, never a server error."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.tool_loop import LoopStack


def audit(stack: LoopStack, action: str) -> list[dict[str, Any]]:
    with stack.client(stack.admin_key) as client:
        page = client.get("/v1/admin/audit", params={"action": action, "limit": 200})
    assert page.status_code == 200, page.text
    events: list[dict[str, Any]] = page.json()["data"]
    return events


def test_a_key_has_an_owner_defaulting_to_its_name(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.admin_key) as client:
        owned = client.post(
            "/v1/admin/keys", json={"name": "ci-bot", "roles": ["user"], "owner": "platform-team"}
        )
        plain = client.post("/v1/admin/keys", json={"name": "alice-laptop", "roles": ["user"]})
        listed = {key["id"]: key for key in client.get("/v1/admin/keys").json()["data"]}
    assert owned.status_code == 201, owned.text
    assert owned.json()["owner"] == "platform-team"
    assert plain.json()["owner"] == "alice-laptop"
    assert listed[owned.json()["id"]]["owner"] == "platform-team"


def test_key_creation_and_revocation_are_audited_with_the_actor(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.admin_key) as client:
        me = client.get("/v1/admin/keys").json()["data"]
        admin_id = next(key["id"] for key in me if key["name"] == "reviewer")
        created = client.post(
            "/v1/admin/keys", json={"name": "temp", "roles": ["admin"], "owner": "mallory"}
        ).json()
        assert client.post(f"/v1/admin/keys/{created['id']}/revoke").status_code == 200

    made = next(
        e for e in audit(admin_stack, "key.created") if e["detail"]["key_id"] == created["id"]
    )
    assert made["actor_key_id"] == admin_id
    assert made["actor_owner"] == "reviewer"
    assert made["detail"]["owner"] == "mallory"
    assert made["detail"]["roles"] == ["admin"]
    revoked = next(
        e for e in audit(admin_stack, "key.revoked") if e["detail"]["key_id"] == created["id"]
    )
    assert revoked["actor_key_id"] == admin_id


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/admin/audit?before=99999999999999999999"),
        ("GET", "/v1/admin/audit?actor=99999999999999999999"),
        ("GET", "/v1/admin/audit?before=0"),
        ("POST", "/v1/admin/keys/99999999999999999999/revoke"),
        ("POST", "/v1/admin/keys/2147483648/revoke"),
        ("POST", "/v1/admin/keys/0/revoke"),
    ],
)
def test_ids_out_of_range_are_a_clear_400(admin_stack: LoopStack, method: str, path: str) -> None:
    with admin_stack.client(admin_stack.admin_key) as client:
        response = client.request(method, path)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "Traceback" not in response.text


def test_the_largest_valid_id_is_simply_not_found(admin_stack: LoopStack) -> None:
    with admin_stack.client(admin_stack.admin_key) as client:
        response = client.post("/v1/admin/keys/2147483647/revoke")
        page = client.get("/v1/admin/audit", params={"before": 2147483647})
    assert response.status_code == 404
    assert page.status_code == 200
