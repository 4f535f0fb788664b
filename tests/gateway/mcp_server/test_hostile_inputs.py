"""What a caller sends that the database cannot hold, and the gateway's own failures: a clean
JSON-RPC error on every backend, never the database's words, and nothing half-stored."""

from __future__ import annotations

import asyncio

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy import func, select, text

from db.engine import create_engine, session_factory
from db.models import Conversation, ToolCallRecord
from gateway.mcp_server.handlers import MAX_TOOL_NAME
from tests.gateway.mcp_server.conftest import McpStack, call, mcp_session

DATABASE_WORDS = ("character varying", "varchar", "relation", "sqlalchemy", "asyncpg", "sqlite")


def json_rpc_error(stack: McpStack, name: str) -> types.ErrorData:
    async def run() -> types.ErrorData:
        async with mcp_session(stack.mcp_url, stack.user_key) as session:
            with pytest.raises(MCPError) as raised:
                await session.call_tool(name, {})
            return raised.value.error

    return anyio.run(run)


def stored(database_url: str) -> tuple[int, int]:
    async def count() -> tuple[int, int]:
        engine = create_engine(database_url)
        try:
            async with session_factory(engine)() as session:
                calls = await session.scalar(select(func.count()).select_from(ToolCallRecord))
                chats = await session.scalar(select(func.count()).select_from(Conversation))
                return calls or 0, chats or 0
        finally:
            await engine.dispose()

    return asyncio.run(count())


def test_a_tool_name_too_long_to_store_is_invalid_params(mcp_stack: McpStack) -> None:
    error = json_rpc_error(mcp_stack, "x" * (MAX_TOOL_NAME + 1))
    longest = call(mcp_stack, mcp_stack.user_key, "y" * MAX_TOOL_NAME, {})

    assert error.code == types.INVALID_PARAMS
    assert f"longer than {MAX_TOOL_NAME} characters" in error.message
    assert not any(word in error.message.lower() for word in DATABASE_WORDS)
    assert longest.is_error  # stored and refused by policy, as any unknown tool is
    assert "does not exist" in longest.content[0].text  # type: ignore[union-attr]
    assert stored(mcp_stack.gateway.database_url) == (1, 1)  # the refused one left no rows


def test_a_failure_of_the_gateways_own_is_an_internal_error_without_its_text(
    mcp_stack: McpStack,
) -> None:
    async def break_the_database() -> None:
        engine = create_engine(mcp_stack.gateway.database_url)
        try:
            async with engine.begin() as connection:
                await connection.execute(text("ALTER TABLE tool_calls RENAME TO tool_calls_gone"))
        finally:
            await engine.dispose()

    asyncio.run(break_the_database())
    error = json_rpc_error(mcp_stack, "lookup")

    assert error.code == types.INTERNAL_ERROR
    assert error.message == "The gateway could not handle this request; the failure is in its log."
