"""Before a command uses the database: can it be reached at all? One line saying why not."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from db.engine import PoolSettings, create_engine


async def unreachable_reason(url: str, pool: PoolSettings, seconds: float = 10.0) -> str | None:
    """None when ``SELECT 1`` answers; otherwise one line with the cause and the fix."""
    engine = create_engine(url, pool)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except DBAPIError as exc:
        return _sentence(url, exc.orig if exc.orig is not None else exc)
    except (OSError, TimeoutError) as exc:
        return _sentence(url, exc)
    finally:
        await engine.dispose()
    return None


def _sentence(url: str, cause: BaseException) -> str:
    # The password never reaches the terminal or a pod's log.
    shown = make_url(url).render_as_string(hide_password=True)
    detail = str(cause).strip() or type(cause).__name__
    return (
        f"cannot connect to the database at {shown}: {detail}. Check database_url "
        "(GATEWAY_DATABASE_URL) and that the database server is running and reachable."
    )
