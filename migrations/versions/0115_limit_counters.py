"""limit counters

Budgets' counters in the database, for gateways without Redis: every worker and replica on the
database shares them (accounts/limits/database_counters.py). A counter's window is in its name;
``expires_at`` (epoch seconds) is when its row may be deleted.

Revision ID: 0115
Revises: 0114
Create Date: 2026-11-28 23:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0115'
down_revision: str | None = '0114'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'limit_counters',
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('value', sa.Float(), nullable=False),
        sa.Column('expires_at', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('name', name=op.f('pk_limit_counters')),
    )
    op.create_index(
        op.f('ix_limit_counters_expires_at'), 'limit_counters', ['expires_at'], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f('ix_limit_counters_expires_at'), table_name='limit_counters')
    op.drop_table('limit_counters')
