"""The tool loop end to end over HTTP: policy, approvals, resumption, limits."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx

from tests.support.tool_loop import LoopStack, loop_stack_on
from tests.support.waiting import eventually


def start(stack: LoopStack, model: str, content: str = "go") -> tuple[str, dict[str, Any]]:
    with stack.client(stack.user_key) as client:
        created = client.post("/v1/conversations", json={"model": model})
        assert created.status_code == 201, created.text
        conversation_id = created.json()["id"]
        turn = client.post(
            f"/v1/conversations/{conversation_id}/messages", json={"content": content}
        )
        assert turn.status_code == 200, turn.text
        return conversation_id, turn.json()


def follow(
    stack: LoopStack, conversation_id: str, key: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Read the durable events until the turn completes (the server ends the stream)."""
    events: list[tuple[str, dict[str, Any]]] = []
    with (
        stack.client(key or stack.user_key) as client,
        client.stream("GET", f"/v1/conversations/{conversation_id}/events") as response,
    ):
        assert response.status_code == 200
        kind = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((kind, json.loads(line.removeprefix("data: "))))
    return events


def pending_call(turn: dict[str, Any]) -> dict[str, Any]:
    [call] = [c for c in turn["tool_calls"] if c["state"] == "awaiting_approval"]
    return call


def decide(
    stack: LoopStack,
    record_id: str,
    verdict: str,
    reason: str | None = None,
    key: str | None = None,
) -> httpx.Response:
    with stack.client(key or stack.admin_key) as client:
        return client.post(f"/v1/admin/approvals/{record_id}/{verdict}", json={"reason": reason})


def conversation(stack: LoopStack, conversation_id: str) -> dict[str, Any]:
    with stack.client(stack.user_key) as client:
        return client.get(f"/v1/conversations/{conversation_id}").json()  # type: ignore[no-any-return]


def test_multi_round_turn_pauses_for_approval_then_completes(loop_stack: LoopStack) -> None:
    conversation_id, turn = start(loop_stack, "loop")

    assert turn["status"] == "awaiting_approval"
    states = {c["tool"]: c["state"] for c in turn["tool_calls"]}
    assert states == {"get_time": "succeeded", "transfer_money": "awaiting_approval"}
    assert loop_stack.catalog.calls == [("get_time", {})]
    with loop_stack.client(loop_stack.admin_key) as admin:
        queue = admin.get("/v1/admin/approvals", params={"status": "pending"}).json()["data"]
    assert [c["tool"] for c in queue] == ["transfer_money"]

    assert decide(loop_stack, pending_call(turn)["record_id"], "approve").status_code == 200
    events = follow(loop_stack, conversation_id)

    assert events[-1] == ("turn.finished", {"status": "completed"})
    final = conversation(loop_stack, conversation_id)
    assert final["status"] == "idle"
    assert final["messages"][-1]["content"] == "Done: transferred"
    assert loop_stack.catalog.calls == [("get_time", {}), ("transfer_money", {"amount": 5})]
    assert {c["state"] for c in final["tool_calls"]} == {"succeeded"}


def test_an_approved_call_that_ran_stays_decided_with_its_outcome(loop_stack: LoopStack) -> None:
    # "Decided" is the calls a decision was asked for, whatever state they moved on to: an
    # approved call that ran is listed with its result, a rejected one too; a call no one was
    # asked about (get_time runs at once) is not.
    conversation_id, turn = start(loop_stack, "loop")
    approved = pending_call(turn)["record_id"]
    ran = next(c["record_id"] for c in turn["tool_calls"] if c["tool"] == "get_time")
    assert decide(loop_stack, approved, "approve", "fine").status_code == 200
    follow(loop_stack, conversation_id)
    conversation_id, turn = start(loop_stack, "loop")
    rejected = pending_call(turn)["record_id"]
    assert decide(loop_stack, rejected, "reject", "no").status_code == 200
    follow(loop_stack, conversation_id)

    with loop_stack.client(loop_stack.admin_key) as admin:
        listed = admin.get("/v1/admin/approvals", params={"status": "decided"}).json()["data"]
    decided = {c["record_id"]: c for c in listed}

    assert (decided[approved]["state"], decided[approved]["result"]) == ("succeeded", "transferred")
    assert decided[approved]["decision_reason"] == "fine"
    assert decided[rejected]["state"] == "rejected"
    assert ran not in decided
    order = [c["record_id"] for c in listed]
    assert order.index(rejected) < order.index(approved)  # newest decision first


def test_rejection_becomes_an_error_result_for_the_model(loop_stack: LoopStack) -> None:
    conversation_id, turn = start(loop_stack, "loop")

    assert (
        decide(loop_stack, pending_call(turn)["record_id"], "reject", "too risky").status_code
        == 200
    )
    follow(loop_stack, conversation_id)

    final = conversation(loop_stack, conversation_id)
    assert final["messages"][-1]["content"] == "Done: Rejected by reviewer: too risky"
    assert ("transfer_money", {"amount": 5}) not in loop_stack.catalog.calls


def test_out_of_role_and_unknown_tools_never_run(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "rogue")

    assert turn["status"] == "completed"
    assert {c["tool"]: c["state"] for c in turn["tool_calls"]} == {
        "admin_only": "denied_by_policy",
        "no_such_tool": "denied_by_policy",
    }
    assert loop_stack.catalog.calls == []
    assert "does not exist" in turn["messages"][-1]["content"]


def test_a_tool_name_longer_than_any_tool_is_denied_and_stored(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "long-name")

    assert turn["status"] == "completed"
    [call] = turn["tool_calls"]
    assert call["state"] == "denied_by_policy"
    assert loop_stack.catalog.calls == []


def test_arguments_failing_the_schema_never_run(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "bad-args")

    [call] = turn["tool_calls"]
    assert call["state"] == "denied_by_policy"
    assert "amount" in call["policy_reason"]
    assert loop_stack.catalog.calls == []


def test_instructions_inside_a_tool_result_still_need_approval(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "injected")

    assert turn["status"] == "awaiting_approval"
    assert pending_call(turn)["arguments"] == {"amount": 999}
    assert loop_stack.catalog.calls == [("read_email", {})]


def test_round_limit_ends_the_turn_with_an_error(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "looper")

    assert turn["status"] == "failed"
    assert turn["error"]["code"] == "max_tool_rounds"
    assert len(loop_stack.catalog.calls) == 3


def test_a_round_failing_before_its_proposals_leaves_no_unanswered_calls(
    database_url: str,
) -> None:
    # The model's message asking for tools is stored with the round's proposals: a round that
    # fails before them (here the second call's policy check) stores neither, and the history
    # never holds calls without results; the stale-turn sweep ends the turn.
    with loop_stack_on(database_url, turn_timeout_seconds=1) as stack:
        stack.catalog.unreachable.add("unreachable")
        with stack.client(stack.user_key) as client:
            conversation_id = client.post("/v1/conversations", json={"model": "unlucky"}).json()[
                "id"
            ]
            with contextlib.suppress(httpx.HTTPError):  # the turn's task died; no answer
                client.post(f"/v1/conversations/{conversation_id}/messages", json={"content": "go"})

        def ended() -> bool:
            return bool(conversation(stack, conversation_id)["status"] == "idle")

        eventually(ended, "the sweeper ended the stale turn")
        final = conversation(stack, conversation_id)
        assert [m["role"] for m in final["messages"]] == ["user"]
        assert final["tool_calls"] == []
        assert stack.catalog.calls == []
        kinds = [kind for kind, _ in follow(stack, conversation_id)]
        assert kinds == ["message.completed", "error", "turn.finished"]


def test_a_second_message_during_a_paused_turn_is_409(loop_stack: LoopStack) -> None:
    conversation_id, _ = start(loop_stack, "loop")
    with loop_stack.client(loop_stack.user_key) as client:
        again = client.post(f"/v1/conversations/{conversation_id}/messages", json={"content": "hi"})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "turn_in_progress"


def test_fifty_concurrent_approvals_execute_once(loop_stack: LoopStack) -> None:
    conversation_id, turn = start(loop_stack, "loop")
    record_id = pending_call(turn)["record_id"]

    async def storm() -> list[int]:
        headers = {"authorization": f"Bearer {loop_stack.admin_key}"}
        async with httpx.AsyncClient(
            base_url=loop_stack.gateway.url, headers=headers, timeout=60
        ) as client:
            responses = await asyncio.gather(
                *(client.post(f"/v1/admin/approvals/{record_id}/approve") for _ in range(50))
            )
        return [r.status_code for r in responses]

    statuses = asyncio.run(storm())
    follow(loop_stack, conversation_id)

    assert statuses.count(200) == 1
    assert statuses.count(409) == 49
    assert loop_stack.catalog.calls.count(("transfer_money", {"amount": 5})) == 1


def test_approve_racing_reject_has_one_winner(loop_stack: LoopStack) -> None:
    conversation_id, turn = start(loop_stack, "loop")
    record_id = pending_call(turn)["record_id"]

    async def race() -> list[int]:
        async with httpx.AsyncClient(base_url=loop_stack.gateway.url, timeout=60) as client:
            responses = await asyncio.gather(
                client.post(
                    f"/v1/admin/approvals/{record_id}/approve",
                    headers={"authorization": f"Bearer {loop_stack.admin_key}"},
                ),
                client.post(
                    f"/v1/admin/approvals/{record_id}/reject",
                    headers={"authorization": f"Bearer {loop_stack.other_admin_key}"},
                    json={"reason": "no"},
                ),
            )
        return sorted(r.status_code for r in responses)

    assert asyncio.run(race()) == [200, 409]
    follow(loop_stack, conversation_id)
    final_state = next(
        c["state"]
        for c in conversation(loop_stack, conversation_id)["tool_calls"]
        if c["tool"] == "transfer_money"
    )
    executions = loop_stack.catalog.calls.count(("transfer_money", {"amount": 5}))
    assert (final_state, executions) in {("succeeded", 1), ("rejected", 0)}


def test_requester_cannot_approve_its_own_call(loop_stack: LoopStack) -> None:
    requester = loop_stack.gateway.create_key("admin-and-user", ["user", "admin"])
    with loop_stack.client(requester) as client:
        conversation_id = client.post("/v1/conversations", json={"model": "loop"}).json()["id"]
        turn = client.post(
            f"/v1/conversations/{conversation_id}/messages", json={"content": "go"}
        ).json()
    response = decide(loop_stack, pending_call(turn)["record_id"], "approve", key=requester)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "self_approval_forbidden"


def test_changed_tool_definition_cannot_be_approved(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "loop")
    loop_stack.catalog.change_definition("transfer_money", "now sends money abroad")

    response = decide(loop_stack, pending_call(turn)["record_id"], "approve")

    assert response.status_code == 409
    assert "changed since the call was proposed" in response.json()["error"]["message"]
    assert response.json()["error"]["code"] == "approval_refused"


def test_non_admin_cannot_decide(loop_stack: LoopStack) -> None:
    _, turn = start(loop_stack, "loop")
    response = decide(
        loop_stack, pending_call(turn)["record_id"], "approve", key=loop_stack.user_key
    )
    assert response.status_code == 403
    with loop_stack.client(loop_stack.user_key) as client:
        assert client.get("/v1/admin/approvals").status_code == 403


def test_streamed_turn_has_typed_events(loop_stack: LoopStack) -> None:
    with loop_stack.client(loop_stack.user_key) as client:
        conversation_id = client.post("/v1/conversations", json={"model": "loop"}).json()["id"]
        with client.stream(
            "POST",
            f"/v1/conversations/{conversation_id}/messages",
            json={"content": "go", "stream": True},
        ) as response:
            kinds = [
                line.removeprefix("event: ")
                for line in response.iter_lines()
                if line.startswith("event: ")
            ]
    assert kinds[0] == "message.completed"  # the user's message
    for kind in (
        "tool_call.created",
        "tool_call.started",
        "tool_call.completed",
        "tool_call.awaiting_approval",
    ):
        assert kind in kinds
    assert kinds[-1] == "turn.finished"


def test_other_keys_cannot_see_a_conversation(loop_stack: LoopStack) -> None:
    conversation_id, _ = start(loop_stack, "rogue")
    stranger = loop_stack.gateway.create_key("stranger", ["user"])
    with loop_stack.client(stranger) as client:
        assert client.get(f"/v1/conversations/{conversation_id}").status_code == 404


def test_stored_events_are_the_streamed_ones_in_order_once(loop_stack: LoopStack) -> None:
    # The tool calls' events are written with their moves, the rest as they are streamed: a
    # follower must read exactly the stream, in its order, nothing twice.
    with loop_stack.client(loop_stack.user_key) as client:
        conversation_id = client.post("/v1/conversations", json={"model": "loop"}).json()["id"]
        streamed: list[tuple[str, dict[str, Any]]] = []
        with client.stream(
            "POST",
            f"/v1/conversations/{conversation_id}/messages",
            json={"content": "go", "stream": True},
        ) as response:
            kind = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind != "message.delta":
                    streamed.append((kind, json.loads(line.removeprefix("data: "))))
    assert streamed[-1][0] == "turn.finished"
    [paused] = [
        c["record_id"]
        for c in conversation(loop_stack, conversation_id)["tool_calls"]
        if c["state"] == "awaiting_approval"
    ]
    assert decide(loop_stack, paused, "approve").status_code == 200
    stored = follow(loop_stack, conversation_id)
    assert stored[: len(streamed)] == streamed
    tool_events = [
        (kind, data["tool_call"]["record_id"]) for kind, data in stored if "tool_call" in data
    ]
    assert len(tool_events) == len(set(tool_events))
