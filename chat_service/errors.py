"""Errors of conversations, tool calls and approvals, one tree (reported by the HTTP edge by
type: the statuses and wire codes are ``gateway/errors.py``'s table).

    GatewayError (llm_service.errors)
    ├── ConversationNotFound
    ├── ConversationBusy        a turn is already in progress in the conversation
    ├── HistoryTooLarge         the history would pass ``max_history_bytes``
    ├── ToolCallNotFound
    ├── DecisionConflict        the call is no longer awaiting a decision, or its tool changed
    │   └── ApprovalRefused     the policy decision refused the call at approval
    │       └── ApprovalForbidden   ... because the requester may no longer run it
    ├── SelfApprovalForbidden
    ├── InputNotPending         the call is not waiting for input
    ├── InvalidInput            the answer breaks the requested schema
    └── TurnFailed              a turn's failure, as it was reported when it happened

``ErrorReport`` is how an error was reported (status, type, code): a turn keeps it with its
``error`` event, so a caller that waited on the turn answers as the failure was reported.
"""

from __future__ import annotations

from typing import NamedTuple

from llm_service.errors import GatewayError


class ErrorReport(NamedTuple):
    """An error as reported to a caller: HTTP status, OpenAI error type and code."""

    status: int
    error_type: str
    code: str | None = None


class ConversationNotFound(GatewayError):
    pass


class ConversationBusy(GatewayError):
    pass


class HistoryTooLarge(GatewayError):
    """A conversation (or a Responses ``previous_response_id`` chain) at ``max_history_bytes``:
    every turn sends the whole history upstream and stores it, so it has a limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The conversation's history would exceed max_history_bytes ({limit} bytes of "
            "JSON); start a new conversation."
        )


class ToolCallNotFound(GatewayError):
    pass


class DecisionConflict(GatewayError):
    """The call is no longer awaiting a decision, or its tool changed since it was proposed."""


class ApprovalRefused(DecisionConflict):
    """The one policy decision refused the call at approval: it ended ``denied_by_policy``
    (the tool changed, was disabled, held, or its server is down)."""


class ApprovalForbidden(ApprovalRefused):
    """Refused at approval because the requester may no longer run the call (key revoked or
    expired, roles narrowed)."""


class SelfApprovalForbidden(GatewayError):
    pass


class TurnFailed(GatewayError):
    """A turn's failure, reported to a caller that waited on the turn (OpenAI-compatible server
    tools) as the error that ended it was: the same ``report`` and ``Retry-After``."""

    def __init__(
        self, message: str, *, report: ErrorReport, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.report = report
        self.retry_after = retry_after


class InputNotPending(GatewayError):
    """The call is not waiting for input: never asked, already answered, expired or ended."""


class InvalidInput(GatewayError):
    pass
