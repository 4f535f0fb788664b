"""structlog JSON logging, configured once by the entry point."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str) -> None:
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(stream=sys.stdout, level=numeric, format="%(message)s", force=True)
    # Alembic narrates every MigrationContext at INFO, and /readyz makes one per probe.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
