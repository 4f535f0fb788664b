"""Authentication, model access, and bad input: clear OpenAI-style errors, never a 500."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.gateway.conftest import Stack


def sdk(stack: Stack, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.gateway.v1, api_key=key, max_retries=0)


def post(stack: Stack, body: bytes | str, key: str | None = None) -> httpx.Response:
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return httpx.post(f"{stack.gateway.v1}/chat/completions", content=body, headers=headers)


def assert_openai_error(response: httpx.Response, status: int) -> dict[str, object]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert "Traceback" not in response.text
    return error  # type: ignore[no-any-return]


def test_missing_key_is_401(stack: Stack) -> None:
    response = post(stack, '{"model":"mock","messages":[{"role":"user","content":"x"}]}')
    error = assert_openai_error(response, 401)
    assert error["code"] == "invalid_api_key"


def test_wrong_key_is_401_through_the_sdk(stack: Stack) -> None:
    with pytest.raises(openai.AuthenticationError):
        sdk(stack, "gw-not-a-real-key").models.list()


def test_key_without_access_to_model_is_403(stack: Stack) -> None:
    with pytest.raises(openai.PermissionDeniedError) as caught:
        sdk(stack, stack.user_key).chat.completions.create(
            model="analyst-only", messages=[{"role": "user", "content": "x"}]
        )
    assert "analyst-only" in caught.value.message


def test_models_lists_only_what_the_key_may_use(stack: Stack) -> None:
    user_models = {m.id for m in sdk(stack, stack.user_key).models.list()}
    analyst_models = {m.id for m in sdk(stack, stack.analyst_key).models.list()}

    assert "analyst-only" not in user_models
    assert {"gpt", "mock", "keyless"} <= user_models
    assert "analyst-only" in analyst_models
    assert sdk(stack, stack.analyst_key).models.retrieve("analyst-only").id == "analyst-only"
    with pytest.raises(openai.NotFoundError):
        sdk(stack, stack.user_key).models.retrieve("analyst-only")


def test_model_without_its_key_answers_503_without_naming_the_variable(stack: Stack) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        sdk(stack, stack.user_key).chat.completions.create(
            model="keyless", messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.status_code == 503
    assert "`keyless` is unavailable" in caught.value.message
    # The unset variable is the operator's business: /readyz (below) and the log name it.
    assert "NOT_SET_ANYWHERE" not in caught.value.message


def test_malformed_json_is_400(stack: Stack) -> None:
    error = assert_openai_error(post(stack, '{"model": "mock", "messages": [', stack.user_key), 400)
    assert error["type"] == "invalid_request_error"
    assert "JSON" in str(error["message"])


def test_unknown_model_is_404(stack: Stack) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        sdk(stack, stack.user_key).chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.code == "model_not_found"


def test_missing_messages_is_400_naming_the_field(stack: Stack) -> None:
    error = assert_openai_error(post(stack, '{"model":"mock"}', stack.user_key), 400)
    assert error["param"] == "messages"


def test_bad_role_is_400(stack: Stack) -> None:
    body = '{"model":"mock","messages":[{"role":"wizard","content":"x"}]}'
    assert_openai_error(post(stack, body, stack.user_key), 400)


def test_oversized_body_is_413(stack: Stack) -> None:
    size = stack.gateway.settings.max_request_bytes + 1
    body = '{"model":"mock","messages":[{"role":"user","content":"' + "x" * size + '"}]}'
    error = assert_openai_error(post(stack, body, stack.user_key), 413)
    assert error["code"] == "request_too_large"


def test_unknown_route_is_404_in_openai_shape(stack: Stack) -> None:
    assert_openai_error(httpx.get(f"{stack.gateway.v1}/nothing-here"), 404)


def test_health_and_readiness(stack: Stack) -> None:
    assert httpx.get(f"{stack.gateway.url}/healthz").json() == {"status": "ok"}
    # Callers (and probes) read the status; which variable is unset is for admins alone.
    for headers in ({}, {"authorization": f"Bearer {stack.user_key}"}):
        status_only = httpx.get(f"{stack.gateway.url}/readyz", headers=headers)
        assert (status_only.status_code, status_only.json()) == (200, {"status": "degraded"})
    operator = {"authorization": f"Bearer {stack.gateway.create_key('ops', ['admin'])}"}
    ready = httpx.get(f"{stack.gateway.url}/readyz", headers=operator)
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "degraded"  # the keyless model
    assert body["database"]["revision"] == body["database"]["expected"]
    assert body["models"]["keyless"]["available"] is False
    assert "NOT_SET_ANYWHERE" in body["models"]["keyless"]["reason"]
    assert body["models"]["mock"]["available"] is True


def test_the_openapi_schema_documents_the_chat_body_once(stack: Stack) -> None:
    schema = httpx.get(f"{stack.gateway.url}/openapi.json").json()
    operation = schema["paths"]["/v1/chat/completions"]
    body = operation["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert list(operation) == ["post"]
    assert body == {"$ref": "#/components/schemas/ChatCompletionRequest"}
    assert "messages" in schema["components"]["schemas"]["ChatCompletionRequest"]["required"]
