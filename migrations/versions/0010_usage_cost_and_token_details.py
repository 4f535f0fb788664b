"""usage cost and token details

Revision ID: 0010
Revises: 0007
Create Date: 2026-11-25 16:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Rows written before this have no cost: null, as for an unpriced model, never 0.
    with op.batch_alter_table('usage_records') as batch:
        batch.add_column(sa.Column('team', sa.String(length=200), nullable=True))
        for name in ('cached_tokens', 'cache_write_tokens', 'reasoning_tokens'):
            batch.add_column(sa.Column(name, sa.Integer(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('cost_usd', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('usage_records') as batch:
        for name in ('cost_usd', 'reasoning_tokens', 'cache_write_tokens', 'cached_tokens', 'team'):
            batch.drop_column(name)
