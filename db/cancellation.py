"""A cancellation that a database error replaced, raised again.

SQLAlchemy's async context managers (``AsyncSession.begin()`` and the like) run their exit (the
commit, the close) to completion even when the task is cancelled meanwhile, and then raise what
that exit raised: a commit's ``IntegrityError`` comes out instead of the ``CancelledError``. The
task stays cancelling, but a loop that logs database errors and goes on would then run forever
and its ``aclose`` would wait for it forever (seen as a worker that never finished shutting
down). Every such handler calls ``raise_if_cancelled`` first.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled() -> None:
    """Raises ``CancelledError`` when the current task has been asked to stop."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
