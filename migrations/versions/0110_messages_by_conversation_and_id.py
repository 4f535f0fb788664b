"""messages by conversation and id

A turn reads the messages after its cursor and counts those at or before it (the out-of-order
guard, chat_service/store_sql.py): on PostgreSQL an index on the conversation alone makes both
visit every message of the conversation, so a turn's read grew with its history. An index on
(conversation, id) serves both as a range, and the foreign key's lookups as before. (SQLite's
index already ends with the row id.)

Revision ID: 0110
Revises: 0070
Create Date: 2026-11-27 01:45:00.000000
"""

from collections.abc import Sequence

from alembic import op


revision: str = '0110'
down_revision: str | None = '0070'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = 'conversation_messages'
_BY_ORDER = 'ix_conversation_messages_conversation_order'
_BY_CONVERSATION = 'ix_conversation_messages_conversation_id'


def upgrade() -> None:
    _swap(create=(_BY_ORDER, ['conversation_id', 'id']), drop=_BY_CONVERSATION)


def downgrade() -> None:
    _swap(create=(_BY_CONVERSATION, ['conversation_id']), drop=_BY_ORDER)


def _swap(create: tuple[str, list[str]], drop: str) -> None:
    name, columns = create
    if op.get_bind().dialect.name != 'postgresql':
        op.create_index(name, _TABLE, columns)
        op.drop_index(drop, table_name=_TABLE)
        return
    # Built beside live traffic: a plain CREATE INDEX would block writes to a large table. A
    # concurrent build that failed leaves an invalid index behind: dropped before a retry.
    with op.get_context().autocommit_block():
        op.drop_index(name, table_name=_TABLE, postgresql_concurrently=True, if_exists=True)
        op.create_index(name, _TABLE, columns, postgresql_concurrently=True)
        op.drop_index(drop, table_name=_TABLE, postgresql_concurrently=True, if_exists=True)
