"""audit chain, tool guardrails

Each audit event gets its place in a hash chain once sealed (db/audit_chain.py): ``seq`` (unique:
one sealer wins each place), the previous event's hash and its own. Existing events are sealed by
the first sealer after the upgrade, in id order. An admin's guardrail actions per tool are
stored with the tool's policy.

Revision ID: 0114
Revises: 0112
Create Date: 2026-11-28 22:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0114'
down_revision: str | None = '0112'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('audit_events') as batch:
        batch.add_column(sa.Column('seq', sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column('prev_hash', sa.String(length=64), nullable=True))
        batch.add_column(sa.Column('chain_hash', sa.String(length=64), nullable=True))
    op.create_index('ix_audit_events_seq', 'audit_events', ['seq'], unique=True)
    with op.batch_alter_table('tool_policy_overrides') as batch:
        batch.add_column(sa.Column('guardrails', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('tool_policy_overrides') as batch:
        batch.drop_column('guardrails')
    op.drop_index('ix_audit_events_seq', table_name='audit_events')
    with op.batch_alter_table('audit_events') as batch:
        batch.drop_column('chain_hash')
        batch.drop_column('prev_hash')
        batch.drop_column('seq')
