"""sso people: api_keys.sso_subject

Revision ID: 0101
Revises: 0100
Create Date: 2026-11-26 18:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0101'
down_revision: str | None = '0100'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('api_keys') as batch:
        batch.add_column(sa.Column('sso_subject', sa.String(length=500), nullable=True))
        batch.create_unique_constraint('uq_api_keys_sso_subject', ['sso_subject'])


def downgrade() -> None:
    with op.batch_alter_table('api_keys') as batch:
        batch.drop_constraint('uq_api_keys_sso_subject', type_='unique')
        batch.drop_column('sso_subject')
