"""JSON responses serialized with orjson."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response


def json_response(
    payload: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(orjson.dumps(payload), status, headers, media_type="application/json")
