"""An Anthropic model with extended thinking keeps its signed thinking across tool rounds.

The wire-faithful fake refuses, as the API does, a tool loop whose assistant turn comes back
without its thinking block, or with the block altered.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.fake_anthropic import FakeAnthropic, FakeThinking
from tests.support.fake_openai import FakeReply, FakeToolCall
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.servers import serve
from tests.support.tool_loop import TRUSTED_LOCAL_TOOLS, make_catalog

THINKING = [
    FakeThinking("The user wants the time: call get_time.", signature="EqQBCkYIAxgCIkD"),
    FakeThinking("EmwKAhgBEgy3va3pzix", redacted=True),
]


@pytest.fixture
def claude(database_url: str) -> Iterator[tuple[RunningGateway, FakeAnthropic]]:
    fake = FakeAnthropic(thinking=THINKING)
    model = {
        "name": "claude",
        "provider": "anthropic",
        "model": "claude-x",
        "api_key_env": "ANTHROPIC_KEY",
    }
    with (
        serve(fake.app()) as url,
        running_gateway(
            database_url,
            environ={"ANTHROPIC_KEY": "sk-ant-test"},
            tools=make_catalog(),
            tool_pinning=TRUSTED_LOCAL_TOOLS,
            models=[{**model, "base_url": url}],
        ) as gateway,
    ):
        yield gateway, fake


def test_signed_thinking_goes_back_to_the_model_between_tool_rounds(
    claude: tuple[RunningGateway, FakeAnthropic],
) -> None:
    gateway, fake = claude
    fake.queue(
        FakeReply(tool_calls=[FakeToolCall("get_time", {}, id="toolu_01")]),
        FakeReply(text="It is noon."),
    )
    key = gateway.create_key("team", ["user"])
    with httpx.Client(
        base_url=gateway.url, headers={"authorization": f"Bearer {key}"}, timeout=30
    ) as client:
        conversation_id = client.post("/v1/conversations", json={"model": "claude"}).json()["id"]
        turn = client.post(
            f"/v1/conversations/{conversation_id}/messages", json={"content": "What time is it?"}
        ).json()
        history = client.get(f"/v1/conversations/{conversation_id}").json()["messages"]

    assert turn["status"] == "completed", turn["error"]
    assert turn["messages"][-1]["content"] == "It is noon."
    [_, second] = fake.requests
    assert second["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "The user wants the time: call get_time.",
                "signature": "EqQBCkYIAxgCIkD",
            },
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "tool_use", "id": "toolu_01", "name": "get_time", "input": {}},
        ],
    }
    assert history[1]["thinking"] == [
        {
            "text": "The user wants the time: call get_time.",
            "signature": "EqQBCkYIAxgCIkD",
            "redacted": False,
            "model": "claude-x",  # signed by it: only it takes the block back
        },
        {"text": "EmwKAhgBEgy3va3pzix", "signature": None, "redacted": True, "model": "claude-x"},
    ]


def test_the_fake_refuses_a_tool_loop_that_lost_its_thinking() -> None:
    """The check above is only as good as the fake: it must refuse what the API refuses."""
    fake = FakeAnthropic(thinking=THINKING)
    fake.queue(FakeReply(tool_calls=[FakeToolCall("get_time", {}, id="toolu_01")]))
    with serve(fake.app()) as url, httpx.Client(base_url=url) as client:
        first = client.post("/v1/messages", json=_request([_user("time?")])).json()
        answered = [_user("time?"), {"role": "assistant", "content": first["content"]}]
        result = _user_result("toolu_01")
        without_thinking = [
            _user("time?"),
            {"role": "assistant", "content": first["content"][2:]},
            result,
        ]
        altered = [
            _user("time?"),
            {
                "role": "assistant",
                "content": [
                    {**first["content"][0], "thinking": "something else"},
                    *first["content"][1:],
                ],
            },
            result,
        ]
        ok = client.post("/v1/messages", json=_request([*answered, result]))
        dropped = client.post("/v1/messages", json=_request(without_thinking))
        tampered = client.post("/v1/messages", json=_request(altered))

    assert ok.status_code == 200
    assert dropped.status_code == 400
    assert "must start with a thinking block" in dropped.json()["error"]["message"]
    assert tampered.status_code == 400
    assert "Invalid `signature`" in tampered.json()["error"]["message"]


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def _user_result(tool_use_id: str) -> dict[str, object]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "noon"}],
    }


def _request(messages: list[dict[str, object]]) -> dict[str, object]:
    return {"model": "claude-x", "max_tokens": 100, "messages": messages}
