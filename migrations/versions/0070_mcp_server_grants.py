"""mcp server grants

OAuth grants for authorization-code MCP servers, shared by all replicas: tokens and the
registered client sealed with the gateway's token key, discovery metadata, who connected it.

Revision ID: 0070
Revises: 0080
Create Date: 2026-11-26 17:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0070'
down_revision: str | None = '0080'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'mcp_server_grants',
        sa.Column('server', sa.String(length=48), nullable=False),
        sa.Column('server_url', sa.String(length=2000), nullable=False),
        sa.Column('tokens_sealed', sa.Text(), nullable=True),
        sa.Column('client_sealed', sa.Text(), nullable=True),
        sa.Column('discovery', sa.JSON(), nullable=True),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('lost_reason', sa.Text(), nullable=True),
        sa.Column('connected_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('connected_by_key_id', sa.Integer(), nullable=True),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('server', name=op.f('pk_mcp_server_grants')),
    )


def downgrade() -> None:
    op.drop_table('mcp_server_grants')
