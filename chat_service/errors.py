"""Errors of conversations and approvals, reported by the HTTP edge by type."""

from __future__ import annotations

from llm_service.errors import GatewayError


class ConversationNotFound(GatewayError):
    status_code = 404
    error_type = "not_found_error"
    code = "conversation_not_found"


class ConversationBusy(GatewayError):
    status_code = 409
    error_type = "conflict"
    code = "turn_in_progress"


class ToolCallNotFound(GatewayError):
    status_code = 404
    error_type = "not_found_error"
    code = "tool_call_not_found"


class DecisionConflict(GatewayError):
    """The call is no longer awaiting a decision, or its tool changed since it was proposed."""

    status_code = 409
    error_type = "conflict"
    code = "decision_conflict"


class ApprovalRefused(DecisionConflict):
    """The one policy decision refused the call at approval: it ended ``denied_by_policy``.
    403 when the requester may no longer run it (key revoked, roles narrowed), 409 otherwise
    (the tool changed, was disabled, held, or its server is down)."""

    code = "approval_refused"

    def __init__(self, message: str, *, forbidden: bool) -> None:
        super().__init__(message)
        if forbidden:
            self.status_code = 403
            self.error_type = "permission_error"


class SelfApprovalForbidden(GatewayError):
    status_code = 403
    error_type = "permission_error"
    code = "self_approval_forbidden"


class TurnFailed(GatewayError):
    """A turn's failure, reported to a caller that waited on the turn (OpenAI-compatible server
    tools) as the error that ended it: the same status, type, code and ``Retry-After``."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        error_type: str,
        code: str | None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type
        self.code = code
        self.retry_after = retry_after


class InputNotPending(GatewayError):
    """The call is not waiting for input: never asked, already answered, expired or ended."""

    status_code = 409
    error_type = "conflict"
    code = "input_not_pending"


class InvalidInput(GatewayError):
    status_code = 400
    error_type = "invalid_request_error"
    code = "invalid_input"
