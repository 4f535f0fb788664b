"""Errors that mean the database cannot be reached now, as opposed to a statement it refused.

A restart, a failover or a crash recovery refuses new connections ("the database system is
starting up") and ends open ones for a few seconds; a full pool times out. A caller should retry
those (503 with Retry-After at the edge), while an error in what was asked (a constraint, a bad
statement) is ours to fix (500). Told apart by the error's type along its chain of causes:
SQLAlchemy wraps the driver's adapter error, which wraps the driver's own.
"""

from __future__ import annotations

import sqlite3

import asyncpg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

_UNAVAILABLE: tuple[type[BaseException], ...] = (
    ConnectionError,  # refused or reset on the way to the server
    PoolTimeout,  # every pooled connection busy past pool_timeout
    asyncpg.PostgresConnectionError,  # the connection broke or never opened
    asyncpg.InterfaceError,  # used after the server closed it
    asyncpg.exceptions.OperatorInterventionError,  # starting up, shutting down, crash recovery
    asyncpg.exceptions.TooManyConnectionsError,
    sqlite3.OperationalError,  # locked past the busy timeout, or the file unreadable
)
_DEPTH = 8  # causes followed, at most


def database_unavailable(error: BaseException) -> bool:
    """True when ``error`` (or what caused it) says the database cannot be reached now."""
    cause: BaseException | None = error
    for _ in range(_DEPTH):
        if cause is None:
            return False
        if isinstance(cause, _UNAVAILABLE):
            return True
        if isinstance(cause, DBAPIError):
            if cause.connection_invalidated:
                return True
            cause = cause.orig if cause.orig is not None else cause.__cause__
        else:
            cause = cause.__cause__
    return False
