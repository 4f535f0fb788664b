"""usage daily rollups

Revision ID: 0100
Revises: 0030
Create Date: 2026-11-26 17:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0100'
down_revision: str | None = '0030'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BUCKETS = (100, 250, 500, 1000, 2500, 5000, 10000, 30000)
LATENCY = [f'latency_le_{ms}' for ms in BUCKETS] + ['latency_over_30000']
COUNTS = [
    'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'cached_tokens',
    'reasoning_tokens', 'unpriced_requests', 'latency_ms_sum', *LATENCY,
]
GROUP = ['api_key_id', 'team', 'model', 'provider']


def upgrade() -> None:
    op.create_table(
        'usage_daily',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('day', sa.DateTime(timezone=True), nullable=False),
        sa.Column('api_key_id', sa.Integer(), nullable=False),
        sa.Column('team', sa.String(length=200), nullable=False),
        sa.Column('model', sa.String(length=200), nullable=False),
        sa.Column('provider', sa.String(length=50), nullable=False),
        *[sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTS[:7]],
        sa.Column('cost_usd', sa.Float(), nullable=False),
        *[sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTS[7:]],
        sa.PrimaryKeyConstraint('id', name=op.f('pk_usage_daily')),
        sa.UniqueConstraint('day', 'api_key_id', 'team', 'model', 'provider', name='uq_usage_daily'),
    )
    op.create_index('ix_usage_daily_day', 'usage_daily', ['day'])
    _backfill()


def _backfill() -> None:
    """Sums the hourly rollups already stored into days, so reports lose nothing before this."""
    postgres = op.get_bind().dialect.name == 'postgresql'
    day = (
        "date_trunc('day', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'" if postgres
        else "strftime('%Y-%m-%d 00:00:00.000000', hour)"
    )
    summed = [*COUNTS, 'cost_usd']
    op.execute(
        f"""
        INSERT INTO usage_daily (day, {', '.join(GROUP)}, {', '.join(summed)})
        SELECT {day}, {', '.join(GROUP)}, {', '.join(f'SUM({name})' for name in summed)}
        FROM usage_hourly
        GROUP BY {day}, {', '.join(GROUP)}
        """
    )


def downgrade() -> None:
    op.drop_index('ix_usage_daily_day', table_name='usage_daily')
    op.drop_table('usage_daily')
