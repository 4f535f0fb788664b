"""A server's request for input during a call (``elicitation/create``), and the answer sent back."""

from __future__ import annotations

import mcp_types as types
import structlog

from mcp_client.hooks import DECLINED, InputAnswer, InputHook, InputRequest
from mcp_client.validation import ArgumentCheck

log = structlog.get_logger("mcp_client.inputs")


def input_request(params: types.ElicitRequestParams) -> InputRequest:
    if isinstance(params, types.ElicitRequestURLParams):
        return InputRequest(message=params.message, mode="url", url=params.url)
    return InputRequest(message=params.message, requested_schema=dict(params.requested_schema))


async def answer_input(
    request: InputRequest, hook: InputHook | None, server: str
) -> types.ElicitResult:
    """The hook's answer, or a decline when there is no hook or it fails."""
    answer = DECLINED
    if hook is not None:
        try:
            answer = await hook(request)
        except Exception as exc:  # a listener's bug declines; it must not fail the call
            log.warning("input_hook_failed", server=server, error=type(exc).__name__)
    if answer.action == "accept" and request.mode == "form":
        problems = ArgumentCheck(request.requested_schema).problems(answer.content or {})
        if problems:  # the server asked for this shape; anything else is not an answer
            log.warning("input_answer_invalid", server=server, problems=problems)
            answer = DECLINED
    log.info("mcp_input_requested", server=server, mode=request.mode, action=answer.action)
    return _result(answer)


def _result(answer: InputAnswer) -> types.ElicitResult:
    content = answer.content if answer.action == "accept" else None
    return types.ElicitResult(action=answer.action, content=content)
