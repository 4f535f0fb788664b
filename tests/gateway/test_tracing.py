"""Traces reach a configured OTLP/HTTP endpoint: a span per request, model call and tool call."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.chat_service.test_tool_loop import decide, follow, pending_call, start
from tests.support.servers import serve
from tests.support.tool_loop import loop_stack_on


class Collector:
    """A fake OTLP/HTTP collector that decodes what it receives."""

    def __init__(self) -> None:
        self.spans: list[str] = []
        self.received = threading.Event()

    def app(self) -> Starlette:
        async def traces(request: Request) -> Response:
            export = ExportTraceServiceRequest.FromString(await request.body())
            for resource in export.resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend(span.name for span in scope.spans)
            self.received.set()
            return Response(b"", media_type="application/x-protobuf")

        return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])


@pytest.fixture
def collector() -> Iterator[tuple[Collector, str]]:
    fake = Collector()
    with serve(fake.app()) as url:
        yield fake, f"{url}/v1/traces"


def test_spans_for_requests_model_calls_and_tool_calls(
    sqlite_url: str, collector: tuple[Collector, str]
) -> None:
    fake, endpoint = collector
    with loop_stack_on(sqlite_url, settings={"tracing": {"otlp_endpoint": endpoint}}) as stack:
        conversation_id, turn = start(stack, "loop")
        assert decide(stack, pending_call(turn)["record_id"], "approve").status_code == 200
        follow(stack, conversation_id)
    # Stopping the gateway flushes its spans.
    assert fake.received.wait(10)

    assert "POST /v1/conversations/{conversation_id}/messages" in fake.spans
    assert "chat loop (stream)" in fake.spans
    assert "tool get_time" in fake.spans
    assert "tool transfer_money" in fake.spans
