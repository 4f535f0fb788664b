"""Everything under ``/v1/admin`` (the JSON API) and ``/admin`` (the web UI)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from db.base import MAX_ROW_ID

# A row id in a path: out-of-range ids are a 400 naming the parameter, not a driver overflow.
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
