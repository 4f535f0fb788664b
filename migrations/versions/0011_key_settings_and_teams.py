"""key settings and teams

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 16:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op



revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('api_keys') as batch:
        batch.add_column(sa.Column('team', sa.String(length=200), nullable=True))
        batch.add_column(sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('allowed_models', sa.JSON(), nullable=True))
        batch.add_column(sa.Column('limits', sa.JSON(), nullable=True))
        batch.create_index('ix_api_keys_team', ['team'])
    op.create_table(
        'teams',
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('budget_per_day', sa.Float(), nullable=True),
        sa.Column('budget_per_month', sa.Float(), nullable=True),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_by_key_id', sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint('name', name=op.f('pk_teams')),
    )


def downgrade() -> None:
    op.drop_table('teams')
    with op.batch_alter_table('api_keys') as batch:
        batch.drop_index('ix_api_keys_team')
        for name in ('limits', 'allowed_models', 'last_used_at', 'expires_at', 'team'):
            batch.drop_column(name)
