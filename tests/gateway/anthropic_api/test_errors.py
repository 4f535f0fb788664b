"""Errors on ``/v1/messages`` have Anthropic's shape, so the SDK raises its typed exceptions."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.anthropic_api.errors import anthropic_error_type
from tests.gateway.anthropic_api.conftest import AnthropicStack

HI: list[Any] = [{"role": "user", "content": "Hi"}]


def post(stack: AnthropicStack, body: str, key: str | None = None) -> httpx.Response:
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if key:
        headers["x-api-key"] = key
    return httpx.post(f"{stack.gateway.url}/v1/messages", content=body, headers=headers)


def assert_anthropic_error(response: httpx.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["type"] == "error"
    assert set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == error_type
    assert "Traceback" not in response.text
    return str(body["error"]["message"])


def test_missing_key_is_401(stack: AnthropicStack) -> None:
    response = post(
        stack, '{"model":"mock","max_tokens":5,"messages":[{"role":"user","content":"x"}]}'
    )
    assert_anthropic_error(response, 401, "authentication_error")


def test_wrong_key_raises_authentication_error(stack: AnthropicStack) -> None:
    with pytest.raises(anthropic.AuthenticationError) as caught:
        stack.client("gw-not-a-real-key").messages.create(model="mock", max_tokens=5, messages=HI)
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "Invalid or revoked API key."},
    }


def test_unknown_model_raises_not_found(stack: AnthropicStack) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        stack.client().messages.create(model="no-such-model", max_tokens=5, messages=HI)
    assert "no-such-model" in caught.value.message


def test_model_of_another_role_raises_permission_denied(stack: AnthropicStack) -> None:
    with pytest.raises(anthropic.PermissionDeniedError):
        stack.client().messages.create(model="analyst-only", max_tokens=5, messages=HI)


def test_unavailable_model_is_503_without_the_operators_reason(stack: AnthropicStack) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        stack.client().messages.create(model="keyless", max_tokens=5, messages=HI)
    assert caught.value.status_code == 503
    assert "`keyless` is unavailable" in caught.value.message
    # Which variable is unset is the operator's business: /readyz and the log say it.
    assert "NOT_SET_ANYWHERE" not in caught.value.message


def test_upstream_rate_limit_raises_rate_limit_error(stack: AnthropicStack) -> None:
    with pytest.raises(anthropic.RateLimitError) as caught:
        stack.client().messages.create(model="mock-limited", max_tokens=5, messages=HI)
    assert caught.value.body["error"]["type"] == "rate_limit_error"


def test_overloaded_upstream_is_overloaded_error_also_when_streaming(
    stack: AnthropicStack,
) -> None:
    # Failures before the first event still get their status, not a 200 with an error event.
    with (
        pytest.raises(anthropic.InternalServerError) as caught,
        stack.client().messages.stream(model="mock-overloaded", max_tokens=5, messages=HI) as s,
    ):
        s.until_done()
    assert caught.value.status_code == 503
    assert caught.value.body["error"]["type"] == "overloaded_error"


def test_failure_mid_stream_raises_from_the_sdk_after_the_first_words(
    stack: AnthropicStack,
) -> None:
    received: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        stack.client().messages.stream(model="gpt-cut", max_tokens=5, messages=HI) as stream,
    ):
        received.extend(stream.text_stream)

    assert received == ["Hel"]
    assert caught.value.body["error"]["type"] == "api_error"
    assert "the model crashed" in caught.value.body["error"]["message"]


def test_missing_max_tokens_is_400_naming_the_field(stack: AnthropicStack) -> None:
    body = '{"model":"mock","messages":[{"role":"user","content":"x"}]}'
    message = assert_anthropic_error(
        post(stack, body, stack.user_key), 400, "invalid_request_error"
    )
    assert "max_tokens" in message


def test_bad_bodies_raise_bad_request(stack: AnthropicStack) -> None:
    client = stack.client()
    bad_messages: list[Any] = [
        [{"role": "tool", "content": "x"}],  # a system message here is Anthropic's beta, and valid
        [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}],
        [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}],
        [],
    ]
    for messages in bad_messages:
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(model="mock", max_tokens=5, messages=messages)


def test_malformed_json_is_400(stack: AnthropicStack) -> None:
    message = assert_anthropic_error(
        post(stack, '{"model": "mock", "messages": [', stack.user_key), 400, "invalid_request_error"
    )
    assert "JSON" in message


def test_a_body_not_sent_as_json_is_400_in_anthropic_shape(stack: AnthropicStack) -> None:
    response = httpx.post(
        f"{stack.gateway.url}/v1/messages",
        content='{"model": "mock", "max_tokens": 5, "messages": []}',
        headers={"content-type": "text/plain", "x-api-key": stack.user_key},
    )
    message = assert_anthropic_error(response, 400, "invalid_request_error")
    assert "Content-Type: application/json" in message


def test_the_openapi_schema_documents_the_messages_body_once(stack: AnthropicStack) -> None:
    schema = httpx.get(f"{stack.gateway.url}/openapi.json").json()
    operation = schema["paths"]["/v1/messages"]

    assert list(operation) == ["post"]
    body = operation["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/MessagesRequest"}


def test_other_routes_keep_the_openai_shape(stack: AnthropicStack) -> None:
    response = httpx.post(f"{stack.gateway.url}/v1/chat/completions", json={"model": "mock"})
    assert response.status_code == 401
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, None, "invalid_request_error"),
        (401, None, "authentication_error"),
        (403, None, "permission_error"),
        (404, None, "not_found_error"),
        (413, None, "request_too_large"),
        (429, "upstream_quota_exceeded", "rate_limit_error"),
        (500, None, "api_error"),
        (502, "upstream_server_error", "api_error"),
        (503, "model_unavailable", "api_error"),
        (503, "upstream_overloaded", "overloaded_error"),
        (504, None, "timeout_error"),
        (529, None, "overloaded_error"),
    ],
)
def test_error_type_follows_status_and_code(status: int, code: str | None, expected: str) -> None:
    assert anthropic_error_type(status, code) == expected


def _upstream_errors(stack: AnthropicStack, model: str) -> float:
    text = httpx.get(f"{stack.gateway.url}/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "llm_gateway_upstream_errors_total"
        and sample.labels.get("model") == model
    )


def test_a_failure_mid_stream_is_counted_as_an_upstream_error(stack: AnthropicStack) -> None:
    before = _upstream_errors(stack, "gpt-cut")

    with (
        pytest.raises(anthropic.APIStatusError),
        stack.client().messages.stream(model="gpt-cut", max_tokens=5, messages=HI) as stream,
    ):
        list(stream.text_stream)

    assert _upstream_errors(stack, "gpt-cut") == before + 1
