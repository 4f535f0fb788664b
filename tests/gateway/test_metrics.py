"""/metrics exports requests, latency, tokens and upstream errors from the app's own registry."""

from __future__ import annotations

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.metrics import GatewayMetrics
from server.app import create_app
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.gateway import running_gateway, settings_for
from tests.support.tool_loop import LoopStack


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _labels(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def test_requests_tokens_and_upstream_errors_are_counted(
    sqlite_url: str, fake_openai: tuple[FakeOpenAI, str]
) -> None:
    fake, fake_url = fake_openai
    fake.queue(FakeReply(text="hi", prompt_tokens=11, completion_tokens=7), FakeReply(status=500))
    models = [
        {
            "name": "gpt",
            "provider": "openai",
            "base_url": fake_url,
            "api_key_env": "UP_KEY",
            "retry": {"max_attempts": 1},  # the scripted 500 must reach the caller
        },
    ]
    with running_gateway(sqlite_url, environ={"UP_KEY": "sk-test"}, models=models) as gateway:
        key = gateway.create_key("metrics", ["user"])
        sdk = openai.OpenAI(base_url=gateway.v1, api_key=key, max_retries=0)
        messages: list[openai.types.chat.ChatCompletionMessageParam] = [
            {"role": "user", "content": "x"}
        ]
        sdk.chat.completions.create(model="gpt", messages=messages)
        with pytest.raises(openai.APIStatusError):
            sdk.chat.completions.create(model="gpt", messages=messages)
        response = httpx.get(f"{gateway.url}/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = _samples(response.text)
    route = "/v1/chat/completions"
    ok = _labels(route=route, model="gpt", provider="openai", status="200")
    failed = _labels(route=route, model="gpt", provider="openai", status="502")
    assert samples[("llm_gateway_requests_total", ok)] == 1
    assert samples[("llm_gateway_requests_total", failed)] == 1
    assert samples[("llm_gateway_request_duration_seconds_count", ok)] == 1
    assert (
        samples[
            ("llm_gateway_tokens_total", _labels(model="gpt", provider="openai", kind="prompt"))
        ]
        == 11
    )
    completion = _labels(model="gpt", provider="openai", kind="completion")
    assert samples[("llm_gateway_tokens_total", completion)] == 7
    error = _labels(model="gpt", provider="openai", error="UpstreamServerError")
    assert samples[("llm_gateway_upstream_errors_total", error)] == 1
    # Tool-loop metrics are exported (empty) before the loop records anything.
    names = {family.name for family in text_string_to_metric_families(response.text)}
    assert {"llm_gateway_approvals_pending", "llm_gateway_requests_in_flight"} <= names


def test_unmatched_paths_share_one_label_value(sqlite_url: str) -> None:
    with running_gateway(sqlite_url) as gateway:
        for path in ("/nope/1", "/nope/2"):
            assert httpx.get(f"{gateway.url}{path}").status_code == 404
        text = httpx.get(f"{gateway.url}/metrics").text

    unmatched = _labels(route="unmatched", model="", provider="", status="404")
    assert _samples(text)[("llm_gateway_requests_total", unmatched)] == 2


def test_each_app_owns_its_registry(sqlite_url: str) -> None:
    first = create_app(settings_for(sqlite_url), {})
    second = create_app(settings_for(sqlite_url), {})
    first_metrics: GatewayMetrics = first.state.metrics
    first_metrics.observe_tool_call("get_time", "succeeded", in_catalog=True)

    second_metrics: GatewayMetrics = second.state.metrics
    assert b'tool="get_time"' in first_metrics.exposition()
    assert b'tool="get_time"' not in second_metrics.exposition()


def test_tool_calls_approvals_and_tool_servers_are_measured(loop_stack: LoopStack) -> None:
    from tests.chat_service.test_tool_loop import decide, follow, pending_call, start

    conversation_id, turn = start(loop_stack, "loop")
    before = httpx.get(f"{loop_stack.gateway.url}/metrics").text
    assert "llm_gateway_approvals_pending 1.0" in before

    assert decide(loop_stack, pending_call(turn)["record_id"], "approve").status_code == 200
    follow(loop_stack, conversation_id)
    after = httpx.get(f"{loop_stack.gateway.url}/metrics").text

    assert 'llm_gateway_tool_calls_total{state="succeeded",tool="transfer_money"} 1.0' in after
    assert (
        'llm_gateway_tool_calls_total{state="awaiting_approval",tool="transfer_money"} 1.0' in after
    )
    assert 'llm_gateway_approval_decision_seconds_count{decision="approved"} 1.0' in after
    assert "llm_gateway_approvals_pending 0.0" in after


def test_invented_model_names_do_not_grow_metrics(sqlite_url: str) -> None:
    # /metrics needs no key and callers choose `model`: each name kept as a label was a series
    # forever (2,000 names grew the page from 0.48 MB to 7.3 MB).
    models = [{"name": "mock", "provider": "mock"}]
    with running_gateway(sqlite_url, models=models) as gateway:
        key = gateway.create_key("metrics", ["user"])
        headers = {"Authorization": f"Bearer {key}"}

        def invent(names: range) -> int:
            with httpx.Client(base_url=gateway.v1, headers=headers) as client:
                for number in names:
                    body = {
                        "model": f"made-up-{number}",
                        "messages": [{"role": "user", "content": "x"}],
                    }
                    assert client.post("/chat/completions", json=body).status_code == 404
                    assert (
                        client.post(
                            "/embeddings", json={"model": f"e-{number}", "input": "x"}
                        ).status_code
                        == 404
                    )
            # Series, not bytes: counts and sums grow a digit now and then.
            return len(_samples(httpx.get(f"{gateway.url}/metrics").text))

        invent(range(3))  # and the first scrape, which counts itself in the next one
        warm = invent(range(3, 6))
        after = invent(range(6, 206))
        text = httpx.get(f"{gateway.url}/metrics").text

    assert after == warm
    assert "made-up" not in text
    other = _labels(route="/v1/chat/completions", model="other", provider="", status="404")
    assert _samples(text)[("llm_gateway_requests_total", other)] == 206


def test_tool_labels_are_the_catalogs_and_capped(sqlite_url: str) -> None:
    metrics = create_app(settings_for(sqlite_url, metrics_max_tool_labels=2), {}).state.metrics
    assert isinstance(metrics, GatewayMetrics)
    metrics.observe_tool_call("invented", "failed", in_catalog=False)
    for tool in ("one", "two", "three"):
        metrics.observe_tool_call(tool, "succeeded", in_catalog=True)
    text = metrics.exposition().decode()

    assert 'tool="invented"' not in text
    assert 'tool="three"' not in text
    assert 'llm_gateway_tool_calls_total{state="succeeded",tool="one"} 1.0' in text
    assert 'llm_gateway_tool_calls_total{state="succeeded",tool="other"} 1.0' in text
    assert 'llm_gateway_tool_calls_total{state="failed",tool="other"} 1.0' in text
