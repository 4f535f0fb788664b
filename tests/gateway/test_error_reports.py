"""One table reports every layer's errors: each error class of ours has its status, type and code
there, and no error below the HTTP edge carries an HTTP field of its own."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

from chat_service.errors import ApprovalForbidden, ApprovalRefused, ErrorReport, TurnFailed
from gateway.errors import REPORTS, report_of
from llm_service.errors import GatewayError, UpstreamError, UpstreamTimeout

PACKAGES = (
    "server",
    "admin",
    "gateway",
    "notifications",
    "accounts",
    "chat_service",
    "governance",
    "tool_servers",
    "llm_service",
    "mcp_client",
    "adapters",
)
EDGES = ("gateway.", "admin.", "server.")
HTTP_FIELDS = ("status_code", "error_type", "code")


def every_error() -> Iterator[type[GatewayError]]:
    for package in PACKAGES:
        root = importlib.import_module(package)
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            importlib.import_module(module.name)
    pending = [GatewayError]
    while pending:
        kind = pending.pop()
        yield kind
        pending.extend(kind.__subclasses__())


def test_every_error_of_ours_has_its_report_in_the_table() -> None:
    ours = [kind for kind in every_error() if kind.__module__.split(".")[0] in PACKAGES]
    missing = [kind.__qualname__ for kind in ours if kind not in REPORTS and kind is not TurnFailed]
    assert missing == []


def test_no_error_below_the_edge_carries_an_http_field() -> None:
    carrying = [
        f"{kind.__module__}.{kind.__qualname__}.{name}"
        for kind in every_error()
        if not kind.__module__.startswith(EDGES)
        for name in HTTP_FIELDS
        if name in vars(kind)
    ]
    assert carrying == []


def test_an_error_is_reported_as_its_nearest_class_and_a_turn_failure_as_it_was() -> None:
    class Unlisted(UpstreamTimeout):
        pass

    assert (
        report_of(Unlisted("slow"))
        == REPORTS[UpstreamTimeout]
        == (504, "timeout", "upstream_timeout")
    )
    assert report_of(UpstreamError("x")).status == 502
    assert report_of(ApprovalForbidden("no")).status == 403
    assert report_of(ApprovalRefused("no")).status == 409
    recorded = ErrorReport(429, "rate_limit_error", "upstream_rate_limited")
    assert report_of(TurnFailed("slow down", report=recorded)) == recorded
