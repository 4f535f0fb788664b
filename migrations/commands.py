"""Alembic, driven from code so the installed package finds its own migrations.

Here rather than in ``db``: running the migrations depends on them, and they depend on ``db``'s
tables, so ``db`` stays below everything (tests/test_layering.py).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from db.engine import ensure_sqlite_directory

MIGRATIONS_DIR = Path(__file__).parent


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Blocking: runs the migrations on their own event loop (Alembic's env.py is async)."""
    ensure_sqlite_directory(database_url)
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    command.downgrade(alembic_config(database_url), revision)
