"""Insert-or-ignore: the one way to write a row that several processes may write at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase


async def insert_or_ignore(
    session: AsyncSession,
    model: type[DeclarativeBase],
    values: Mapping[str, Any],
    conflict: Sequence[str],
) -> bool:
    """Inserts the row unless one with the same ``conflict`` columns exists (or is being
    inserted by a concurrent transaction, which PostgreSQL waits for): True when this call
    wrote it. The caller then reads the row, whoever wrote it; never a unique-constraint error.
    """
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(model).values(dict(values)).on_conflict_do_nothing(index_elements=conflict)
    result = await session.execute(statement)
    return bool(getattr(result, "rowcount", 0))
