"""Prometheus metrics in a registry the app owns, so two apps (or two tests) never collide.

Under ``serve --workers N`` every worker writes its values to files in a directory the CLI
prepares (prometheus_client's multiprocess mode) and ``/metrics``, on whichever worker answers,
adds up all workers' files: counts are the whole server's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)
from starlette.requests import Request
from starlette.responses import Response

from chat_service.tool_call_view import CallState
from gateway.shutdown import Drain
from guardrails import Screening

# From 1 ms (the gateway's own answers: 401s, /v1/models, the mock; it adds well under one to a
# model call) to minutes (long generations).
_LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
)  # fmt: skip
_FIRST_TOKEN_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
_DECISION_BUCKETS = (1, 5, 15, 30, 60, 300, 900, 3600, 14400, 86400)

# The label value for a model or tool that is not one of the config's own: callers choose model
# names and models choose tool names, and every distinct label value is a series kept forever.
OTHER = "other"


class LabelVocabulary:
    """The label values a metric may take: the config's models, and the tool names the catalog
    offers, the latter capped because administrators add tool servers at run time and a server
    lists what tools it likes. Anything else is ``other``, so the series count is a function of
    the configuration, never of traffic."""

    def __init__(self, models: Iterable[str], max_tools: int) -> None:
        self._models = frozenset(models)
        self._tools: set[str] = set()
        self._max_tools = max_tools

    def model(self, name: str | None) -> str:
        if name is None:
            return ""
        return name if name in self._models else OTHER

    def tool(self, name: str, in_catalog: bool) -> str:
        if name in self._tools:
            return name
        if not in_catalog or len(self._tools) >= self._max_tools:
            return OTHER
        self._tools.add(name)
        return name


class GatewayMetrics:
    """Every metric the gateway exports. Label values are bounded: routes are templates, models
    and tools come from the configuration (``LabelVocabulary``), the rest are our own words."""

    def __init__(
        self,
        multiprocess_dir: Path | None = None,
        *,
        models: Iterable[str] = (),
        max_tool_labels: int = 1000,
    ) -> None:
        self._multiprocess_dir = multiprocess_dir
        self.labels = LabelVocabulary(models, max_tool_labels)
        self._servers_up: set[str] = set()
        # The labelled series of the per-request metrics, by their label values: ``labels()``
        # checks, stringifies and looks up under a lock every time, four times a request.
        self._request_series: dict[tuple[str, str, str, int], tuple[Counter, Histogram]] = {}
        self._token_series: dict[tuple[str, str], tuple[Counter, Counter]] = {}
        self._first_token_series: dict[tuple[str, str, str], Histogram] = {}
        # A `_created` twin of every counter and histogram doubles the output and no dashboard
        # reads it. prometheus_client keeps this switch process-wide; setting it is idempotent.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ("route", "model", "provider", "status")
        self.requests = Counter(
            "llm_gateway_requests",
            "Requests by route template, model, provider and HTTP status.",
            labels,
            registry=self.registry,
        )
        self.latency = Histogram(
            "llm_gateway_request_duration_seconds",
            "Request latency, until the last byte of the response (streams included).",
            labels,
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.first_token = Histogram(
            "llm_gateway_time_to_first_token_seconds",
            "Streamed responses: time from the request to the first event of the stream.",
            ("route", "model", "provider"),
            buckets=_FIRST_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "llm_gateway_tokens",
            "Tokens by model, provider and kind, counted from the same entries as usage_records "
            "(API requests and conversation turns' model calls).",
            ("model", "provider", "kind"),
            registry=self.registry,
        )
        self.upstream_errors = Counter(
            "llm_gateway_upstream_errors",
            "Upstream failures by model, provider and typed error.",
            ("model", "provider", "error"),
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "llm_gateway_requests_in_flight",
            "Requests being served (streams until their last event).",
            multiprocess_mode="livesum",
            registry=self.registry,
        )
        self.draining = Gauge(
            "llm_gateway_draining",
            "1 while the process drains after SIGTERM.",
            multiprocess_mode="livemax",
            registry=self.registry,
        )
        # Hooks for the tool loop: defined here so dashboards and alerts exist before it does.
        self.tool_calls = Counter(
            "llm_gateway_tool_calls",
            "Tool-call state transitions by tool and the state entered.",
            ("tool", "state"),
            registry=self.registry,
        )
        self.guardrail_findings = Counter(
            "llm_gateway_guardrail_findings",
            "Guardrail findings by detector, the action set for it, and what was scanned "
            "(arguments or results); observe-mode findings count too.",
            ("detector", "action", "direction"),
            registry=self.registry,
        )
        self.approvals_pending = Gauge(
            "llm_gateway_approvals_pending",
            "Tool calls waiting for a human decision.",
            multiprocess_mode="livemostrecent",
            registry=self.registry,
        )
        self.approval_decision = Histogram(
            "llm_gateway_approval_decision_seconds",
            "Time from a call awaiting approval to its decision.",
            ("decision",),
            buckets=_DECISION_BUCKETS,
            registry=self.registry,
        )
        self.webhook_deliveries = Counter(
            "llm_gateway_webhook_deliveries",
            "Webhook delivery attempts by event and outcome (delivered, failed, gave_up).",
            ("event", "outcome"),
            registry=self.registry,
        )
        self.webhooks_pending = Gauge(
            "llm_gateway_webhooks_pending",
            "Webhook deliveries not yet delivered or given up (the outbox).",
            multiprocess_mode="livemostrecent",
            registry=self.registry,
        )
        self.mcp_server_up = Gauge(
            "llm_gateway_mcp_server_up",
            "1 when the MCP server is connected and its tools are listed, else 0.",
            ("server",),
            multiprocess_mode="livemostrecent",
            registry=self.registry,
        )

    def track(self, drain: Drain) -> None:
        """In-flight requests and the draining flag, read from the drain."""
        if self._multiprocess_dir is None:
            self.in_flight.set_function(lambda: drain.in_flight)
            self.draining.set_function(lambda: float(drain.draining))
            return

        # A function gauge is read at scrape time in its own process only: each worker writes
        # its values as they change instead, for the scrape to add up.
        def changed(drain: Drain) -> None:
            self.in_flight.set(drain.in_flight)
            self.draining.set(float(drain.draining))

        drain.on_change = changed

    def observe_request(
        self,
        route: str,
        model: str | None,
        provider: str | None,
        status: int,
        seconds: float,
    ) -> None:
        key = (route, self.labels.model(model), provider or "", status)
        series = self._request_series.get(key)
        if series is None:
            labels = (*key[:3], str(status))
            series = self.requests.labels(*labels), self.latency.labels(*labels)
            self._request_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def observe_tokens(
        self, model: str, provider: str | None, prompt_tokens: int, completion_tokens: int
    ) -> None:
        key = (self.labels.model(model), provider or "")
        series = self._token_series.get(key)
        if series is None:
            series = self.tokens.labels(*key, "prompt"), self.tokens.labels(*key, "completion")
            self._token_series[key] = series
        series[0].inc(prompt_tokens)
        series[1].inc(completion_tokens)

    def observe_first_token(
        self, route: str, model: str | None, provider: str | None, seconds: float
    ) -> None:
        key = (route, self.labels.model(model), provider or "")
        series = self._first_token_series.get(key)
        if series is None:
            series = self._first_token_series[key] = self.first_token.labels(*key)
        series.observe(seconds)

    def observe_webhook_delivery(self, event: str, outcome: str) -> None:
        self.webhook_deliveries.labels(event, outcome).inc()

    def observe_upstream_error(self, model: str | None, provider: str | None, error: str) -> None:
        self.upstream_errors.labels(self.labels.model(model), provider or "", error).inc()

    def observe_tool_call(self, tool: str, state: str, *, in_catalog: bool) -> None:
        self.tool_calls.labels(self.labels.tool(tool, in_catalog), state).inc()

    def observe_screening(self, screening: Screening) -> None:
        """Each finding, by detector, the action its detector had and what was scanned."""
        for finding in screening.findings:
            action = screening.actions[finding.detector][0]
            self.guardrail_findings.labels(
                finding.detector.value, action.value, screening.direction.value
            ).inc()

    def observe_approval_decision(self, decision: str, seconds: float) -> None:
        self.approval_decision.labels(decision).observe(seconds)

    def set_mcp_servers_up(self, servers: Mapping[str, bool]) -> None:
        """The catalog's servers, replacing the last scrape's: a removed server's series goes."""
        for server in self._servers_up - servers.keys():
            self.mcp_server_up.remove(server)
        for server, up in servers.items():
            self.mcp_server_up.labels(server).set(1 if up else 0)
        self._servers_up = set(servers)

    def exposition(self) -> bytes:
        if self._multiprocess_dir is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, str(self._multiprocess_dir))  # type: ignore[no-untyped-call]
        return generate_latest(registry)


async def metrics_endpoint(request: Request) -> Response:
    metrics: GatewayMetrics = request.app.state.metrics
    services = getattr(request.app.state, "services", None)
    if services is not None:
        # Read at scrape time: the database and the catalog are the truth, on every replica.
        metrics.set_mcp_servers_up(
            {
                server: status.as_dict()["state"] == "ready"
                for server, status in services.tool_servers.status().items()
            }
        )
        metrics.approvals_pending.set(await services.tool_calls.count(CallState.AWAITING_APPROVAL))
        metrics.webhooks_pending.set(await services.notifier.outbox.pending())
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
