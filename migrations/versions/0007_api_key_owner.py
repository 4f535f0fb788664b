"""api key owner

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 16:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Existing keys belong to an owner named like the key, as `keys create` defaults to.
    with op.batch_alter_table('api_keys') as batch:
        batch.add_column(sa.Column('owner', sa.String(length=200), nullable=True))
    op.execute("UPDATE api_keys SET owner = name WHERE owner IS NULL")
    with op.batch_alter_table('api_keys') as batch:
        batch.alter_column('owner', existing_type=sa.String(length=200), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('api_keys') as batch:
        batch.drop_column('owner')
