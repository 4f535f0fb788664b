"""approval rules and two approvers

An admin's approval rules per tool (``tool_policy_overrides.approval_rules``), and on each tool
call the approvals it needs and those given so far, so a partial approval holds across replicas.

Revision ID: 0080
Revises: 0050
Create Date: 2026-11-26 17:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0080'
down_revision: str | None = '0050'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('tool_policy_overrides') as batch:
        batch.add_column(sa.Column('approval_rules', sa.JSON(), nullable=True))
    with op.batch_alter_table('tool_calls') as batch:
        batch.add_column(
            sa.Column('approvals_required', sa.Integer(), server_default='1', nullable=False)
        )
        batch.add_column(sa.Column('approvals', sa.JSON(), nullable=True))
        batch.add_column(
            sa.Column('approval_count', sa.Integer(), server_default='0', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('tool_calls') as batch:
        batch.drop_column('approval_count')
        batch.drop_column('approvals')
        batch.drop_column('approvals_required')
    with op.batch_alter_table('tool_policy_overrides') as batch:
        batch.drop_column('approval_rules')
