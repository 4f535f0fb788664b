"""stable tool identity: policies by server and tool name, runtime servers' creation time

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 17:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Existing policies keep naming their tool by catalog name (server ''); an admin's next change
    # to one rewrites it to the tool's server and name.
    with op.batch_alter_table('tool_policy_overrides') as batch:
        batch.add_column(
            sa.Column('server', sa.String(length=48), server_default='', nullable=False)
        )
        batch.drop_constraint('pk_tool_policy_overrides', type_='primary')
        batch.create_primary_key('pk_tool_policy_overrides', ['server', 'tool_name'])
    # A stored server's creation is not known; its last change is the best order there is.
    with op.batch_alter_table('runtime_mcp_servers') as batch:
        batch.add_column(sa.Column('created_at', sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE runtime_mcp_servers SET created_at = updated_at WHERE created_at IS NULL")
    with op.batch_alter_table('runtime_mcp_servers') as batch:
        batch.alter_column('created_at', existing_type=sa.DateTime(timezone=True), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('runtime_mcp_servers') as batch:
        batch.drop_column('created_at')
    # Catalog names of tools stored by identity are not known here: those policies are dropped.
    op.execute("DELETE FROM tool_policy_overrides WHERE server <> ''")
    with op.batch_alter_table('tool_policy_overrides') as batch:
        batch.drop_constraint('pk_tool_policy_overrides', type_='primary')
        batch.create_primary_key('pk_tool_policy_overrides', ['tool_name'])
        batch.drop_column('server')
