"""``/mcp`` given JSON-RPC as anyone may write it (hypothesis: any method, params of any shape,
tool names of any length, arguments of any JSON, task ids made up), on SQLite and PostgreSQL: never
a 5xx, a traceback or the database's words, whether the answer is a result or a JSON-RPC error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gateway.mcp_server.conftest import McpStack, desk_server, stack_on
from tests.gateway.test_path_fuzz import LEAKS
from tests.support.databases import fresh_database
from tests.support.servers import serve

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=60),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=12,
)
# Never `hang` (it answers only when cancelled) nor `wipe`.
TOOL_NAMES = (
    st.sampled_from(["lookup", "payroll", "transfer", "count"])
    | st.text(max_size=60)
    | st.text(min_size=195, max_size=400)  # about the longest a call can be stored under
)
CALL = st.fixed_dictionaries(
    {"name": TOOL_NAMES},
    optional={
        "arguments": st.dictionaries(st.text(max_size=20), JSON, max_size=4) | JSON,
        "task": st.just({}) | JSON,
        "_meta": st.dictionaries(st.sampled_from(["progressToken"]), JSON, max_size=1),
    },
)
TASK = st.fixed_dictionaries({"taskId": st.text(max_size=300) | JSON})
REQUESTS = st.one_of(
    st.tuples(st.just("tools/call"), CALL),
    st.tuples(st.sampled_from(["tasks/get", "tasks/result", "tasks/cancel"]), TASK),
    st.tuples(st.sampled_from(["tasks/list", "tools/list"]), st.just({}) | JSON),
    st.tuples(st.just("notifications/cancelled"), st.fixed_dictionaries({"requestId": JSON})),
    st.tuples(st.text(max_size=40), JSON),
)
# A call held for approval waits only briefly here.
WAIT_BRIEFLY = {"approval_wait_seconds": 0.1, "approval_poll_seconds": 0.05}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpStack]:
    desk = desk_server()
    with (
        serve(desk.server.streamable_http_app()) as desk_url,
        fresh_database(request.param, tmp_path_factory.mktemp("db")) as database_url,
        stack_on(database_url, (desk, desk_url), mcp_server=WAIT_BRIEFLY) as running,
    ):
        yield running


def test_any_json_rpc_request_is_answered_cleanly(stack: McpStack) -> None:
    headers = {**HEADERS, "authorization": f"Bearer {stack.user_key}"}

    @given(
        request=REQUESTS,
        request_id=st.integers(0, 2**31) | st.text(max_size=20) | st.none(),
        version=st.sampled_from(["2025-06-18", "2025-11-25", "1999-01-01"]),
    )
    @settings(
        max_examples=120,
        deadline=None,
        derandomize=True,  # the same cases every run: `make test` must not flake
        suppress_health_check=list(HealthCheck),
    )
    def exercise(request: tuple[str, Any], request_id: int | str | None, version: str) -> None:
        method, params = request
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request_id is not None:
            body["id"] = request_id
        answer = httpx.post(
            stack.mcp_url,
            content=json.dumps(body),
            headers={**headers, "mcp-protocol-version": version},
            timeout=60,
        )
        assert answer.status_code < 500, (body, answer.status_code, answer.text[:500])
        assert not LEAKS.search(answer.text), (body, answer.text[:500])

    exercise()
