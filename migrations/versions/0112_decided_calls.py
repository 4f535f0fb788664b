"""decided calls

"Recently decided" lists the calls a decision was asked for, whatever state they moved on to
(an approved call that ran included), newest first, by ``decided_at``: an expiry is a decision
too and now sets it; calls that expired before this revision get their finishing time.

Revision ID: 0112
Revises: 0111
Create Date: 2026-11-28 21:50:00.000000
"""

from collections.abc import Sequence

from alembic import op


revision: str = '0112'
down_revision: str | None = '0111'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "UPDATE tool_calls SET decided_at = finished_at "
        "WHERE state = 'expired' AND decided_at IS NULL"
    )
    op.create_index('ix_tool_calls_decided_at', 'tool_calls', ['decided_at'])


def downgrade() -> None:
    op.drop_index('ix_tool_calls_decided_at', table_name='tool_calls')
