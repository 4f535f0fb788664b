"""grant refresh claims

Replicas sharing an OAuth grant take turns to refresh it: an authorization server that rotates
refresh tokens accepts each once, and a refused refresh ends the grant. The replica that
refreshes claims the refresh until a time (a lease, so one that dies holding it only delays the
others); the rest wait for the tokens it stores (mcp_client/refresh_claim.py).

Revision ID: 0111
Revises: 0110
Create Date: 2026-11-27 09:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0111'
down_revision: str | None = '0110'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('mcp_server_grants') as batch:
        batch.add_column(
            sa.Column('refresh_claimed_until', sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('mcp_server_grants') as batch:
        batch.drop_column('refresh_claimed_until')
