"""whole messages and record ids

Messages are stored whole (``conversation_messages.message``, the canonical message as JSON), so
thinking blocks, images and raw arguments survive; older rows keep loading from the narrower
columns. Stored ``tool_call.*`` events name the tool-call row ``record_id`` (it was ``id``), as
the API now does. Downgrading writes the narrower columns from the whole message first, so a
message written after this revision stays readable (without what the old columns cannot hold).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 09:12:04.118532
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_messages = sa.table(
    'conversation_messages',
    sa.column('id', sa.Integer()),
    sa.column('message', sa.JSON()),
    sa.column('content', sa.Text()),
    sa.column('tool_calls', sa.JSON()),
    sa.column('tool_call_id', sa.String()),
    sa.column('name', sa.String()),
    sa.column('is_error', sa.Boolean()),
)
_events = sa.table(
    'conversation_events',
    sa.column('id', sa.Integer()),
    sa.column('type', sa.String()),
    sa.column('data', sa.JSON()),
)


def upgrade() -> None:
    with op.batch_alter_table('conversation_messages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('message', sa.JSON(), nullable=True))
    _rename_tool_call_key('id', 'record_id')


def downgrade() -> None:
    _write_narrow_columns()
    _rename_tool_call_key('record_id', 'id')
    with op.batch_alter_table('conversation_messages', schema=None) as batch_op:
        batch_op.drop_column('message')


def _rename_tool_call_key(old: str, new: str) -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(_events.c.id, _events.c.data).where(_events.c.type.like('tool_call.%'))
    )
    for event_id, data in rows.all():
        call = dict(data.get('tool_call') or {})
        if old not in call:
            continue
        call[new] = call.pop(old)
        connection.execute(
            _events.update()
            .where(_events.c.id == event_id)
            .values(data={**data, 'tool_call': call})
        )


def _write_narrow_columns() -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(_messages.c.id, _messages.c.message).where(_messages.c.message.is_not(None))
    )
    for message_id, message in rows.all():
        connection.execute(
            _messages.update().where(_messages.c.id == message_id).values(**_narrow(message))
        )


def _narrow(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get('content')
    if isinstance(content, list):
        content = ' '.join(part['text'] for part in content if part.get('type') == 'text')
    calls = [
        {'id': call['id'], 'name': call['name'], 'arguments': call['arguments']}
        for call in message.get('tool_calls') or ()
    ]
    return {
        'content': content,
        'tool_calls': calls or None,
        'tool_call_id': message.get('tool_call_id'),
        'name': message.get('name'),
        'is_error': bool(message.get('is_error')),
    }
