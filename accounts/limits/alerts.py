"""Budget alerts as audit events (``budget.threshold_crossed``), the one sink wired today.

A notification channel (the approvers' webhooks) is another ``BudgetAlertSink`` to add beside it.
"""

from __future__ import annotations

import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from accounts.limits.budgets import BudgetAlert, BudgetAlertSink
from db.models import AuditEvent

log = structlog.get_logger("accounts.limits")
ACTION = "budget.threshold_crossed"


def audit_budget_alert(sessions: async_sessionmaker[AsyncSession]) -> BudgetAlertSink:
    async def write(alert: BudgetAlert) -> None:
        detail = {
            "scope": alert.scope,
            "subject": alert.subject,
            "period": alert.period,
            "window": alert.window,
            "threshold": alert.threshold,
            "budget": alert.budget,
            "spent": round(alert.spent, 6),
        }
        try:
            async with sessions.begin() as session:
                session.add(AuditEvent(actor_key_id=None, action=ACTION, detail=detail))
        except SQLAlchemyError as exc:
            # The alert is in the log line already; losing the row must not fail the request.
            log.error("budget_alert_not_audited", error=str(exc), **detail)

    return write
