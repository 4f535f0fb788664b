"""whole messages only

Every message row holds its whole message (``conversation_messages.message``): rows written
before 0008, which hold only the narrower columns, get it here, exactly as the gateway has read
them until now, and the column becomes NOT NULL, so nothing needs the older reader any more.

The narrower columns (``content``, ``tool_calls``, ``tool_call_id``, ``name``, ``is_error``)
are no longer read, but stay for now: replicas of the previous release still select them while
a rolling upgrade runs. A later migration can drop them (``is_error`` once the inserts, which
still write it as false, stop).

The mapping is written out here, not imported: migrations must not import application code,
which changes after them. Rows are read and written in batches, so the migration's memory does
not grow with the table. On PostgreSQL each batch commits on its own and the NOT NULL is
proven by a CHECK constraint validated beside live traffic (only a brief lock, not one held
through a scan of the table); a run that stopped part-way is simply run again.

Revision ID: 0116
Revises: 0115
Create Date: 2026-11-29 03:00:00.000000
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op


revision: str = '0116'
down_revision: str | None = '0115'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = 'conversation_messages'
_CHECK = 'ck_conversation_messages_message_not_null'
_BATCH = 1000

_messages = sa.table(
    _TABLE,
    sa.column('id', sa.Integer()),
    sa.column('role', sa.String()),
    sa.column('message', sa.JSON()),
    sa.column('content', sa.Text()),
    sa.column('tool_calls', sa.JSON()),
    sa.column('tool_call_id', sa.String()),
    sa.column('name', sa.String()),
    sa.column('is_error', sa.Boolean()),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        _backfill()
        with op.batch_alter_table(_TABLE, schema=None) as batch_op:
            batch_op.alter_column('message', existing_type=sa.JSON(), nullable=False)
        return
    with op.get_context().autocommit_block():
        _backfill()
        # A constraint left by a run that failed part-way goes first.
        op.execute(f'ALTER TABLE {_TABLE} DROP CONSTRAINT IF EXISTS {_CHECK}')
        op.execute(f'ALTER TABLE {_TABLE} ADD CONSTRAINT {_CHECK} CHECK (message IS NOT NULL) NOT VALID')
        op.execute(f'ALTER TABLE {_TABLE} VALIDATE CONSTRAINT {_CHECK}')
        # The valid constraint spares SET NOT NULL its scan of the table.
        op.alter_column(_TABLE, 'message', existing_type=sa.JSON(), nullable=False)
        op.execute(f'ALTER TABLE {_TABLE} DROP CONSTRAINT {_CHECK}')


def downgrade() -> None:
    with op.batch_alter_table(_TABLE, schema=None) as batch_op:
        batch_op.alter_column('message', existing_type=sa.JSON(), nullable=True)


def _backfill() -> None:
    connection = op.get_bind()
    narrow = (
        _messages.c.id,
        _messages.c.role,
        _messages.c.content,
        _messages.c.tool_calls,
        _messages.c.tool_call_id,
        _messages.c.name,
        _messages.c.is_error,
    )
    write = (
        _messages.update()
        .where(_messages.c.id == sa.bindparam('row_id'))
        .values(message=sa.bindparam('whole', type_=sa.JSON()))
    )
    after = 0
    while True:
        rows = connection.execute(
            sa.select(*narrow)
            .where(_messages.c.message.is_(None), _messages.c.id > after)
            .order_by(_messages.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        connection.execute(write, [{'row_id': row.id, 'whole': _whole(row)} for row in rows])
        after = rows[-1].id


def _whole(row: Any) -> dict[str, Any]:
    """The canonical message's JSON (llm_service.types, as chat_service.messages stored it
    when 0116 was written) of a row that holds only the narrower columns."""
    if row.role == 'system':
        return {'content': row.content or '', 'role': 'system', 'cache_control': None}
    if row.role == 'user':
        return {'content': row.content or '', 'role': 'user'}
    if row.role == 'assistant':
        calls = [
            {
                'id': call['id'],
                'name': call['name'],
                'arguments': dict(call['arguments']),
                'raw_arguments': None,
                'cache_control': None,
            }
            for call in row.tool_calls or ()
        ]
        return {
            'content': row.content,
            'tool_calls': calls,
            'thinking': [],
            'role': 'assistant',
            'cache_control': None,
        }
    return {
        'tool_call_id': row.tool_call_id or '',
        'content': row.content or '',
        'name': row.name,
        'is_error': bool(row.is_error),
        'role': 'tool',
        'cache_control': None,
    }
