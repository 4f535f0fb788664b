"""The usage tables: one row per request, and the hourly and daily rollups reports read.

Registered on ``Base.metadata`` when imported, like ``db.models``: Alembic's env and anything
comparing the metadata import both."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from db.base import Base, UTCDateTime, utcnow


class UsageRecord(Base):
    __tablename__ = "usage_records"
    __table_args__ = (
        Index("ix_usage_records_key_created", "api_key_id", "created_at"),
        Index("ix_usage_records_model_created", "model", "created_at"),
        Index("ix_usage_records_created", "created_at"),  # for retention's batched deletes
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    request_id: Mapped[str] = mapped_column(String(64))
    api_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    key_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    route: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200))
    provider: Mapped[str | None] = mapped_column(String(50), nullable=True)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int] = mapped_column(Integer)
    error_type: Mapped[str | None] = mapped_column(String(100), nullable=True)
    team: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # Parts of prompt_tokens / completion_tokens, where the provider reports them.
    cached_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cache_write_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    reasoning_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # USD; null when the model has no known price (flagged, never counted as free).
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)


# Upper bounds (ms) of the rollups' latency histogram buckets; the last bucket is everything above.
LATENCY_BUCKETS_MS = (100, 250, 500, 1000, 2500, 5000, 10000, 30000)
LATENCY_COLUMNS = (*(f"latency_le_{ms}" for ms in LATENCY_BUCKETS_MS), "latency_over_30000")


class _UsageTotals:
    """The counters both rollups sum (a mixin: each table gets its own copies of the columns)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    api_key_id: Mapped[int] = mapped_column(Integer)
    team: Mapped[str] = mapped_column(String(200))
    model: Mapped[str] = mapped_column(String(200))
    provider: Mapped[str] = mapped_column(String(50))
    requests: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(BigInteger, default=0)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    unpriced_requests: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_ms_sum: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_100: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_250: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_500: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_1000: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_2500: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_5000: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_10000: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_le_30000: Mapped[int] = mapped_column(BigInteger, default=0)
    latency_over_30000: Mapped[int] = mapped_column(BigInteger, default=0)


class UsageHourly(_UsageTotals, Base):
    """Usage summed per UTC hour, key, team, model and provider, written with the raw rows (in the
    same transaction), so reports read these and never scan ``usage_records``. No key, team or
    provider is stored as 0 / "" so that the unique constraint holds (NULLs never conflict)."""

    __tablename__ = "usage_hourly"
    __table_args__ = (
        UniqueConstraint("hour", "api_key_id", "team", "model", "provider", name="uq_usage_hourly"),
        Index("ix_usage_hourly_hour", "hour"),
    )

    hour: Mapped[datetime] = mapped_column(UTCDateTime())


class UsageDaily(_UsageTotals, Base):
    """The same sums per UTC day, written beside the hourly ones: a 30- or 90-day report reads
    whole days here (~24x fewer rows) and only the partial first day from ``usage_hourly``."""

    __tablename__ = "usage_daily"
    __table_args__ = (
        UniqueConstraint("day", "api_key_id", "team", "model", "provider", name="uq_usage_daily"),
        Index("ix_usage_daily_day", "day"),
    )

    day: Mapped[datetime] = mapped_column(UTCDateTime())
