"""stored response items

Responses API items beside the canonical conversation of a stored response (reasoning items
survive for providers that serve the Responses API themselves), this request's input items for
``input_items``, and an index on ``created_at`` for the retention job's batches.

Revision ID: 0050
Revises: 0060
Create Date: 2026-11-26 17:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "0050"
down_revision: str | None = "0060"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("stored_responses") as batch:
        batch.add_column(sa.Column("items", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("input_items", sa.JSON(), nullable=True))
    op.create_index(
        op.f("ix_stored_responses_created_at"), "stored_responses", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_stored_responses_created_at"), table_name="stored_responses")
    with op.batch_alter_table("stored_responses") as batch:
        batch.drop_column("input_items")
        batch.drop_column("items")
