"""stored responses

The Responses API's stored answers (``store: true``): the response object as returned, and the
canonical conversation it ends, for ``previous_response_id``; owned by the key that made them.

Revision ID: 0030
Revises: 0020
Create Date: 2026-11-25 17:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0030'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'stored_responses',
        sa.Column('id', sa.String(length=64), nullable=False),
        sa.Column('api_key_id', sa.Integer(), nullable=False),
        sa.Column('model', sa.String(length=200), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('response', sa.JSON(), nullable=False),
        sa.Column('conversation', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_stored_responses')),
    )
    op.create_index(
        op.f('ix_stored_responses_api_key_id'), 'stored_responses', ['api_key_id'], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f('ix_stored_responses_api_key_id'), table_name='stored_responses')
    op.drop_table('stored_responses')
