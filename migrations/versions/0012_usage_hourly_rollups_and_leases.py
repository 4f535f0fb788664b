"""usage hourly rollups and maintenance leases

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 17:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BUCKETS = (100, 250, 500, 1000, 2500, 5000, 10000, 30000)
LATENCY = [f'latency_le_{ms}' for ms in BUCKETS] + ['latency_over_30000']
COUNTS = [
    'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'cached_tokens',
    'reasoning_tokens', 'unpriced_requests', 'latency_ms_sum', *LATENCY,
]


def upgrade() -> None:
    op.create_table(
        'usage_hourly',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('hour', sa.DateTime(timezone=True), nullable=False),
        sa.Column('api_key_id', sa.Integer(), nullable=False),
        sa.Column('team', sa.String(length=200), nullable=False),
        sa.Column('model', sa.String(length=200), nullable=False),
        sa.Column('provider', sa.String(length=50), nullable=False),
        *[sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTS[:7]],
        sa.Column('cost_usd', sa.Float(), nullable=False),
        *[sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTS[7:]],
        sa.PrimaryKeyConstraint('id', name=op.f('pk_usage_hourly')),
        sa.UniqueConstraint('hour', 'api_key_id', 'team', 'model', 'provider', name='uq_usage_hourly'),
    )
    op.create_index('ix_usage_hourly_hour', 'usage_hourly', ['hour'])
    op.create_table(
        'maintenance_leases',
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('holder', sa.String(length=64), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('name', name=op.f('pk_maintenance_leases')),
    )
    op.create_index('ix_usage_records_created', 'usage_records', ['created_at'])
    _backfill()


def _backfill() -> None:
    """Rolls up the raw rows already stored, so reports lose nothing written before this."""
    postgres = op.get_bind().dialect.name == 'postgresql'
    hour = (
        "date_trunc('hour', created_at)" if postgres
        else "strftime('%Y-%m-%d %H:00:00.000000', created_at)"
    )
    bounds = [f"latency_ms <= {BUCKETS[0]}"]
    bounds += [f"latency_ms > {low} AND latency_ms <= {high}" for low, high in zip(BUCKETS, BUCKETS[1:])]
    bounds.append(f"latency_ms > {BUCKETS[-1]}")
    buckets = [f"SUM(CASE WHEN {bound} THEN 1 ELSE 0 END)" for bound in bounds]
    op.execute(
        f"""
        INSERT INTO usage_hourly (hour, api_key_id, team, model, provider, requests, errors,
            prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, unpriced_requests,
            cost_usd, latency_ms_sum, {', '.join(LATENCY)})
        SELECT {hour}, COALESCE(api_key_id, 0), COALESCE(team, ''), model, COALESCE(provider, ''),
            COUNT(*), SUM(CASE WHEN status_code >= 400 THEN 1 ELSE 0 END),
            SUM(prompt_tokens), SUM(completion_tokens), SUM(cached_tokens), SUM(reasoning_tokens),
            SUM(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END), COALESCE(SUM(cost_usd), 0),
            SUM(latency_ms), {', '.join(buckets)}
        FROM usage_records
        GROUP BY {hour}, COALESCE(api_key_id, 0), COALESCE(team, ''), model,
            COALESCE(provider, '')
        """
    )


def downgrade() -> None:
    op.drop_index('ix_usage_records_created', table_name='usage_records')
    op.drop_table('maintenance_leases')
    op.drop_index('ix_usage_hourly_hour', table_name='usage_hourly')
    op.drop_table('usage_hourly')
