"""tool call inputs

A tool server's requests for input during a call (MCP elicitation), forwarded to the
conversation's caller and answered through the conversations API on any replica.

Revision ID: 0060
Revises: 0101
Create Date: 2026-11-26 17:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0060'
down_revision: str | None = '0101'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'tool_call_inputs',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('tool_call_id', sa.String(length=36), nullable=False),
        sa.Column('conversation_id', sa.String(length=36), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('message', sa.Text(), nullable=False),
        sa.Column('mode', sa.String(length=8), nullable=False),
        sa.Column('requested_schema', sa.JSON(), nullable=False),
        sa.Column('url', sa.Text(), nullable=True),
        sa.Column('content', sa.JSON(), nullable=True),
        sa.Column('answered_by_key_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('answered_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ['tool_call_id'],
            ['tool_calls.id'],
            name=op.f('fk_tool_call_inputs_tool_call_id_tool_calls'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tool_call_inputs')),
    )
    op.create_index(
        op.f('ix_tool_call_inputs_tool_call_id'), 'tool_call_inputs', ['tool_call_id'], unique=False
    )
    op.create_index(
        op.f('ix_tool_call_inputs_conversation_id'),
        'tool_call_inputs',
        ['conversation_id'],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f('ix_tool_call_inputs_conversation_id'), table_name='tool_call_inputs')
    op.drop_index(op.f('ix_tool_call_inputs_tool_call_id'), table_name='tool_call_inputs')
    op.drop_table('tool_call_inputs')
