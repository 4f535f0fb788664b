"""Waiting on a condition another thread or process makes true, without sleeping."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Re-check ``condition`` (each check is a real request, so this does not spin idle) until it
    holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
