"""What a running tool call tells the conversation's caller, through the conversations API, with
real MCP servers over streamable HTTP: progress, a task's status, the admin queue's running
view, requests for input forwarded and answered (on another replica), declined, timed out; and
a call that times out is cancelled on the server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.admin_ui import signed_in_client
from tests.support.databases import fresh_database
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import DemoServer, demo_server, features_server
from tests.support.mcp_task_server import TaskServer
from tests.support.mcp_traffic import MethodLog
from tests.support.servers import serve
from tests.support.waiting import eventually

Event = tuple[str, dict[str, Any]]


def _calling(name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A scripted model that calls one tool, then answers with what it returned."""
    call = {"name": name, "arguments": arguments or {}}
    return {
        "provider": "mock",
        "script": [{"tool_calls": [call]}, {"text": "Result: {last_tool_result}"}],
        **extra,
    }


MODELS = {
    "progress": _calling("steps"),
    "tasks": _calling("slow_sum", {"a": 2, "b": 3}),
    "forever": _calling("forever"),
    "hang": _calling("hang"),
    "asker": _calling("ask_name", forward_elicitation=True),
    "asker-closed": _calling("ask_name"),
}


# Two replicas on one database: the first waits up to 30 s for an answer to a request for input
# and reports every progress step; the second waits 0.5 s and reports progress at the default pace.
REPLICAS: list[dict[str, Any]] = [
    {"input_timeout_seconds": 30, "progress_interval_seconds": 0},
    {"input_timeout_seconds": 0.5},
]


@dataclass
class Stack:
    first: RunningGateway
    second: RunningGateway
    user: str
    stranger: str
    admin: str
    demo: DemoServer
    demo_traffic: MethodLog
    jobs: TaskServer


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    demo, jobs = demo_server("demo"), TaskServer()
    traffic = MethodLog(demo.server.streamable_http_app())
    with ExitStack() as stack:
        features_url = stack.enter_context(serve(features_server().streamable_http_app()))
        demo_url = stack.enter_context(serve(traffic))
        jobs_url = stack.enter_context(serve(jobs.build().streamable_http_app()))
        servers = [
            _server("features", features_url),
            _server("demo", demo_url, call_timeout=1),
            _server("jobs", jobs_url, call_timeout=3),
        ]
        models = [{"name": name, **config} for name, config in MODELS.items()]
        database = stack.enter_context(fresh_database(request.param, tmp_path_factory.mktemp("db")))
        replicas = [
            stack.enter_context(
                running_gateway(
                    database,
                    models=models,
                    mcp_servers=servers,
                    tool_loop={"follow_poll_seconds": 0.05, **tool_loop},
                )
            )
            for tool_loop in REPLICAS
        ]
        first = replicas[0]
        yield Stack(
            first,
            replicas[1],
            user=first.create_key("asker", ["user"]),
            stranger=first.create_key("stranger", ["user"]),
            admin=first.create_key("operator", ["admin"]),
            demo=demo,
            demo_traffic=traffic,
            jobs=jobs,
        )


def _server(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "transport": "streamable_http",
        "url": f"{url}/mcp",
        "roles": ["user"],
        "trusted": True,  # offered without review: this module is about running calls
        **extra,
    }


def _client(gateway: RunningGateway, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=60
    )


def _conversation(gateway: RunningGateway, key: str, model: str) -> str:
    with _client(gateway, key) as client:
        made = client.post("/v1/conversations", json={"model": model})
        assert made.status_code == 201, made.text
        return str(made.json()["id"])


def _parse(lines: Iterator[str]) -> Iterator[Event]:
    kind = ""
    for line in lines:
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield kind, json.loads(line.removeprefix("data: "))


def _turn(
    gateway: RunningGateway,
    key: str,
    conversation_id: str,
    on_event: Callable[[Event], None] | None = None,
) -> list[Event]:
    """Streams one turn's events; ``on_event`` sees each as it arrives."""
    seen: list[Event] = []
    with (
        _client(gateway, key) as client,
        client.stream(
            "POST",
            f"/v1/conversations/{conversation_id}/messages",
            json={"content": "go", "stream": True},
        ) as response,
    ):
        assert response.status_code == 200
        for event in _parse(response.iter_lines()):
            seen.append(event)
            if on_event is not None:
                on_event(event)
    return seen


def _kinds(events: list[Event]) -> list[str]:
    return [kind for kind, _ in events if kind != "message.delta"]


def _answer(events: list[Event]) -> str:
    completed = [data for kind, data in events if kind == "message.completed"]
    return str(completed[-1]["message"]["content"])


def _stored(gateway: RunningGateway, key: str, conversation_id: str) -> list[Event]:
    with (
        _client(gateway, key) as client,
        client.stream("GET", f"/v1/conversations/{conversation_id}/events") as response,
    ):
        return list(_parse(response.iter_lines()))


def _running_page(gateway: RunningGateway, admin_key: str) -> str:
    with signed_in_client(gateway.url, admin_key) as admin:
        page = admin.get("/admin")
        assert page.status_code == 200
        return page.text


def _first_running_event(gateway: RunningGateway, admin_key: str) -> str:
    with (
        signed_in_client(gateway.url, admin_key) as admin,
        admin.stream("GET", "/admin/queue/events") as feed,
    ):
        for kind, data in _parse(feed.iter_lines()):
            if kind == "running":
                return str(data["html"])
    raise AssertionError("the live queue sent no running view")


def test_progress_reaches_the_stream_and_the_stored_events(stack: Stack) -> None:
    conversation_id = _conversation(stack.first, stack.user, "progress")
    events = _turn(stack.first, stack.user, conversation_id)

    kinds = _kinds(events)
    assert kinds.index("tool_call.started") < kinds.index("tool_call.progress")
    assert kinds.index("tool_call.progress") < kinds.index("tool_call.completed")
    progress = [data for kind, data in events if kind == "tool_call.progress"]
    assert [(p["progress"], p["total"], p["message"], p["tool"]) for p in progress] == [
        (1, 3, "step 1 of 3", "steps"),
        (2, 3, "step 2 of 3", "steps"),
        (3, 3, "step 3 of 3", "steps"),
    ]
    assert _answer(events) == "Result: done"
    # Persisted: a caller who follows the conversation later reads the same progress.
    stored = [data for kind, data in _stored(stack.first, stack.user, conversation_id)]
    assert [p for p in stored if p.get("progress") is not None] == progress


def test_a_flood_of_progress_is_thinned_but_keeps_the_last_step(stack: Stack) -> None:
    conversation_id = _conversation(stack.second, stack.user, "progress")
    events = _turn(stack.second, stack.user, conversation_id)

    # `steps` reports three steps at once: within the default 0.25 s only the first and the
    # last pass.
    progress = [data for kind, data in events if kind == "tool_call.progress"]
    assert [p["message"] for p in progress] == ["step 1 of 3", "step 3 of 3"]
    assert _answer(events) == "Result: done"


def test_a_task_required_tool_runs_as_a_task_and_shows_its_status(stack: Stack) -> None:
    conversation_id = _conversation(stack.first, stack.user, "tasks")
    events = _turn(stack.first, stack.user, conversation_id)

    progress = [data for kind, data in events if kind == "tool_call.progress"]
    statuses = [p["task_status"] for p in progress if p["task_status"]]
    assert statuses[0] == "working"
    assert statuses[-1] == "completed"
    steps = [p["message"] for p in progress if p["progress"] is not None]
    assert steps == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert _answer(events) == "Result: sum=5"


def test_a_running_task_shows_on_the_admin_queue_and_is_cancelled_at_its_timeout(
    stack: Stack,
) -> None:
    conversation_id = _conversation(stack.first, stack.user, "forever")
    done: list[list[Event]] = []
    turn = threading.Thread(
        target=lambda: done.append(_turn(stack.first, stack.user, conversation_id))
    )
    turn.start()
    try:
        pages: list[str] = []

        def shows_it_running() -> bool:
            # The page that showed it is the one checked: the task ends at its timeout, which
            # a loaded machine may reach before a second look.
            pages.append(_running_page(stack.first, stack.admin))
            return "task working" in pages[-1]

        eventually(shows_it_running, "the admin queue shows the task running")
        assert "<code>forever</code>" in pages[-1].split("<h2>Running</h2>")[1]
        # The open page hears it live too, rendered by the server.
        assert "task working" in _first_running_event(stack.first, stack.admin)
    finally:
        turn.join(30)
    events = done[0]
    finished = [data for kind, data in events if kind == "tool_call.completed"]
    assert finished[-1]["tool_call"]["state"] == "timed_out"
    assert stack.jobs.forever_cancelled.wait(10)  # tasks/cancel reached the server
    assert "No tool call is running." in _running_page(stack.first, stack.admin)


def test_a_call_that_times_out_sends_notifications_cancelled(stack: Stack) -> None:
    conversation_id = _conversation(stack.first, stack.user, "hang")
    events = _turn(stack.first, stack.user, conversation_id)

    finished = [data for kind, data in events if kind == "tool_call.completed"]
    assert finished[-1]["tool_call"]["state"] == "timed_out"
    assert "did not answer within 1 s" in finished[-1]["tool_call"]["result"]
    assert stack.demo_traffic.seen("notifications/cancelled")
    assert stack.demo.hang_cancelled.wait(10)


def test_a_call_cut_short_by_the_turn_timeout_sends_notifications_cancelled(
    stack: Stack,
) -> None:
    demo = next(s for s in stack.first.settings.mcp_servers if s.name == "demo")
    patient = {**demo.model_dump(mode="json", exclude_unset=True), "call_timeout": 60}
    cancels = stack.demo_traffic.methods.count("notifications/cancelled")
    with running_gateway(
        stack.first.database_url,
        models=[{"name": "hang", **MODELS["hang"]}],
        mcp_servers=[patient],
        tool_loop={"turn_timeout_seconds": 1},
    ) as impatient:
        conversation_id = _conversation(impatient, stack.user, "hang")
        events = _turn(impatient, stack.user, conversation_id)

    errors = [data for kind, data in events if kind == "error"]
    assert [error["code"] for error in errors] == ["turn_timeout"]
    assert stack.demo_traffic.seen("notifications/cancelled", times=cancels + 1)


def test_a_forwarded_request_for_input_is_answered_on_another_replica(stack: Stack) -> None:
    conversation_id = _conversation(stack.first, stack.user, "asker")
    checks: list[str] = []

    def answer(event: Event) -> None:
        kind, data = event
        if kind != "tool_call.input_required":
            return
        assert (data["tool"], data["message"], data["mode"]) == (
            "ask_name",
            "What is your name?",
            "form",
        )
        assert data["requested_schema"]["properties"]["name"]["type"] == "string"
        running = _running_page(stack.second, stack.admin).split("<h2>Running</h2>")[1]
        assert "the caller's input: What is your name?" in running, running
        path = f"/v1/conversations/{conversation_id}/tool-calls/{data['record_id']}/input"
        with _client(stack.second, stack.stranger) as stranger:
            assert stranger.post(path, json={"action": "accept"}).status_code == 404
        with _client(stack.second, stack.user) as other_replica:
            invalid = other_replica.post(path, json={"action": "accept", "content": {"name": 42}})
            assert invalid.status_code == 400, invalid.text
            assert invalid.json()["error"]["code"] == "invalid_input"
            assert invalid.json()["error"]["param"] == "content"
            missing = other_replica.post(path, json={"action": "accept"})
            assert missing.status_code == 400
            accepted = other_replica.post(
                path, json={"action": "accept", "content": {"name": "Ana"}}
            )
            assert accepted.status_code == 200, accepted.text
            assert accepted.json()["state"] == "accept"
            again = other_replica.post(path, json={"action": "decline"})
            assert again.status_code == 409
            assert again.json()["error"]["code"] == "input_not_pending"
        checks.append("answered")

    events = _turn(stack.first, stack.user, conversation_id, on_event=answer)

    assert checks == ["answered"]
    answered = [data for kind, data in events if kind == "tool_call.input_answered"]
    assert [(a["action"], a["expired"]) for a in answered] == [("accept", False)]
    assert _answer(events) == "Result: hello Ana"


def test_a_request_for_input_is_declined_when_the_model_does_not_forward_it(
    stack: Stack,
) -> None:
    conversation_id = _conversation(stack.first, stack.user, "asker-closed")
    events = _turn(stack.first, stack.user, conversation_id)

    assert "tool_call.input_required" not in _kinds(events)
    assert _answer(events) == "Result: no name (decline)"


def test_a_request_for_input_nobody_answers_is_declined_at_the_timeout(stack: Stack) -> None:
    conversation_id = _conversation(stack.second, stack.user, "asker")
    events = _turn(stack.second, stack.user, conversation_id)

    kinds = _kinds(events)
    assert kinds.index("tool_call.input_required") < kinds.index("tool_call.input_answered")
    answered = [data for kind, data in events if kind == "tool_call.input_answered"]
    assert [(a["action"], a["expired"]) for a in answered] == [("decline", True)]
    assert _answer(events) == "Result: no name (decline)"
    record_id = answered[0]["record_id"]
    with _client(stack.first, stack.user) as client:
        late = client.post(
            f"/v1/conversations/{conversation_id}/tool-calls/{record_id}/input",
            json={"action": "accept", "content": {"name": "Ana"}},
        )
    assert late.status_code == 409
