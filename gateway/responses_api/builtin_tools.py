"""Built-in tools (``web_search``, ``file_search``, ``code_interpreter``, ``computer_use``...) as
MCP tools of the caller's catalog.

OpenAI runs its built-in tools on its own servers, outside the gateway's policy; the gateway runs
none of them, not even for OpenAI models. An operator may map a built-in tool type to an MCP tool
(``responses_builtin_tools: {web_search: search_web}``): a request naming that type is offered
that tool as a function tool, under its catalog name, description and input schema, if the key
may use it. The model's calls come back to the caller as ``function_call`` items, like any
function call; the caller runs them through the gateway's governed tool path (policy, approval,
audit). An unmapped type is not offered to the model: agents such as Codex send
``web_search`` with every request, and a model without the tool answers without searching.
``namespace`` groups of function tools are not built-in tools (``convert.py`` reads them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from llm_service.errors import InvalidRequest
from llm_service.types import JSON, ToolSpec
from mcp_client.types import StandardizedTool

# Tool types the caller's own code runs (function tools, alone or grouped).
CALLER_TOOL_TYPES = frozenset({"function", "namespace"})


def mapped_builtins(
    tools: Sequence[JSON],
    mapping: Mapping[str, str],
    catalog: Callable[[], Sequence[StandardizedTool]],
) -> dict[int, ToolSpec | None]:
    """The MCP tool each built-in tool of the request stands for, by its index in ``tools``
    (None: not mapped, so not offered)."""
    builtins = {
        index: str(tool.get("type"))
        for index, tool in enumerate(tools)
        if tool.get("type") not in CALLER_TOOL_TYPES
    }
    if not builtins:
        return {}
    visible = {tool.name: tool for tool in catalog()}
    specs: dict[int, ToolSpec | None] = {}
    for index, kind in builtins.items():
        target = mapping.get(kind)
        if target is None:
            specs[index] = None
            continue
        tool = visible.get(target)
        if tool is None:
            raise InvalidRequest(
                f"The tool type `{kind}` is served here by the MCP tool `{target}`, which this "
                "key may not use (or which is not in the catalog now).",
                param=f"tools[{index}]",
            )
        specs[index] = ToolSpec(tool.name, tool.description, tool.parameters)
    return specs
