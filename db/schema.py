"""The schema revision this code expects, and the one a database is at, without Alembic.

/readyz asks on every probe. Importing Alembic (and Mako and Pygments under it) for that was the
largest single part of an idle replica's memory; migrating is the CLI's job and imports it there.
"""

from __future__ import annotations

from sqlalchemy import column, inspect, select, table
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

# The newest revision in migrations/versions: tests/db/test_migrations.py fails until a new
# migration's id is written here too.
SCHEMA_HEAD = "0116"
_VERSIONS = table("alembic_version", column("version_num"))


async def current_revision(engine: AsyncEngine) -> str | None:
    """None for a database that was never migrated."""

    def read(connection: Connection) -> str | None:
        if not inspect(connection).has_table(_VERSIONS.name):
            return None
        revision: str | None = connection.scalar(select(_VERSIONS.c.version_num))
        return revision

    async with engine.connect() as connection:
        return await connection.run_sync(read)
