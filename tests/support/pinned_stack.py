"""The tool-loop gateway with tool pinning as shipped (on, nothing trusted): every tool definition
starts held for review."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.gateway import running_gateway
from tests.support.tool_loop import MODELS, LoopStack, make_catalog


@contextmanager
def pinned_stack_on(database_url: str) -> Iterator[LoopStack]:
    catalog = make_catalog()
    with running_gateway(
        database_url,
        tools=catalog,
        models=MODELS,
        tool_loop={"follow_poll_seconds": 0.02, "sweep_interval_seconds": 0.05},
        # Refreshed explicitly by listing reviews; the timer stays out of the tests' way.
        tool_pinning={"refresh_seconds": 3600},
    ) as gateway:
        yield LoopStack(
            gateway,
            catalog,
            user_key=gateway.create_key("product-team", ["user"]),
            admin_key=gateway.create_key("reviewer", ["admin"]),
            other_admin_key=gateway.create_key("reviewer-2", ["admin"]),
        )
