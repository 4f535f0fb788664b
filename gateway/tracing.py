"""Optional OpenTelemetry traces: a span per request, per model call and per tool call.

Without an endpoint the tracer is a no-op. The provider is owned by the app, never installed as
the process-wide global, so tests and several apps in one process do not share it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


class TracingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    otlp_endpoint: str | None = Field(
        None, description="OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces"
    )
    service_name: str = "llm-gateway"


class Tracing:
    def __init__(self, settings: TracingSettings) -> None:
        self._provider: TracerProvider | None = None
        self.tracer: trace.Tracer = trace.NoOpTracer()
        if settings.otlp_endpoint:
            # The SDK and its exporter (protobuf) are imported only when traces are configured.
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            resource = Resource.create({"service.name": settings.service_name})
            self._provider = TracerProvider(resource=resource)
            exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint)
            self._provider.add_span_processor(BatchSpanProcessor(exporter))
            self.tracer = self._provider.get_tracer("llm-gateway")

    def shutdown(self) -> None:
        """Exports what is buffered; called when the app stops."""
        if self._provider is not None:
            self._provider.shutdown()
