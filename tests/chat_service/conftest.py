from __future__ import annotations

import pytest

from migrations.commands import upgrade


@pytest.fixture
def migrated(database_url: str) -> str:
    """An empty database at the schema head, on each backend."""
    upgrade(database_url)
    return database_url
