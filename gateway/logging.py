"""structlog JSON logging, configured once by the entry point.

Every line on stdout is one JSON object: the gateway's own events, and whatever the libraries
underneath (uvicorn, SQLAlchemy, the SDKs) log through the standard ``logging`` module.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import orjson
import structlog

# Libraries that narrate routine work at INFO: httpx a line for every upstream request (a log
# call each on the hot path), Alembic one per MigrationContext, which /readyz makes per probe.
_CHATTY_LOGGERS = ("httpx", "alembic")

_SHARED: list[structlog.typing.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """JSON lines to ``stream`` (stdout by default)."""
    out = stream or sys.stdout
    numeric = logging.getLevelName(level.upper())
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*_SHARED, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(serializer=_dumps_text),
            ],
        )
    )
    logging.basicConfig(level=numeric, handlers=[handler], force=True)
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            *_SHARED,
            structlog.processors.format_exc_info,
            # orjson, straight to stdout's buffer: the standard json module took a few percent
            # of a request's CPU.
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.BytesLoggerFactory(out.buffer),
        cache_logger_on_first_use=True,
    )


def _dumps_text(value: Any, **options: Any) -> str:
    return orjson.dumps(value, **options).decode()
