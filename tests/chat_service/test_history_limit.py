"""``max_history_bytes``: a conversation, and a ``previous_response_id`` chain, stop growing at
the limit with a 413 naming it (six 3 MB messages made a 37.7 MB history, sent upstream on
every turn)."""

from __future__ import annotations

import httpx

from tests.support.gateway import running_gateway

LIMIT = 6000
MODELS = [{"name": "mock", "provider": "mock"}]


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "history_too_large"
    assert error["type"] == "invalid_request_error"
    assert f"max_history_bytes ({LIMIT} bytes" in error["message"]


def test_a_conversation_stops_growing_at_the_limit(database_url: str) -> None:
    with running_gateway(database_url, models=MODELS, max_history_bytes=LIMIT) as gateway:
        key = gateway.create_key("talker", ["user"])
        with httpx.Client(
            base_url=gateway.v1, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client:
            conversation_id = client.post("/conversations", json={"model": "mock"}).json()["id"]
            turns = []
            for _ in range(8):
                turn = client.post(
                    f"/conversations/{conversation_id}/messages", json={"content": "x" * 1500}
                )
                turns.append(turn.status_code)
            stored = client.get(f"/conversations/{conversation_id}").json()["messages"]
            refused = client.post(
                f"/conversations/{conversation_id}/messages", json={"content": "y" * 1500}
            )

    assert 200 in turns
    assert turns[-1] == 413
    _refused(refused)
    # A refused turn stores nothing: the history is what the accepted turns left.
    assert len(stored) == 2 * turns.count(200)
    # The check comes before the caller's message: the model's answer may pass the limit.
    asked = [m for m in stored if m["role"] == "user"]
    assert sum(len(message["content"]) for message in asked) < LIMIT


def test_a_responses_chain_stops_growing_at_the_limit(sqlite_url: str) -> None:
    with running_gateway(sqlite_url, models=MODELS, max_history_bytes=LIMIT) as gateway:
        key = gateway.create_key("chainer", ["user"])
        with httpx.Client(
            base_url=gateway.v1, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client:
            previous: str | None = None
            answers = []
            for _ in range(8):
                body = {"model": "mock", "input": "x" * 1500, "previous_response_id": previous}
                answer = client.post("/responses", json=body)
                answers.append(answer)
                if answer.status_code != 200:
                    break
                previous = answer.json()["id"]

    assert answers[0].status_code == 200
    assert len(answers) < 8
    _refused(answers[-1])
