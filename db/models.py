"""Tables. The schema changes only through Alembic migrations under ``migrations/``."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from db.base import Base, UTCDateTime, utcnow


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    # SHA-256 of the key: keys are 256-bit random secrets, so a slow hash adds nothing.
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    roles: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class UsageRecord(Base):
    __tablename__ = "usage_records"
    __table_args__ = (
        Index("ix_usage_records_key_created", "api_key_id", "created_at"),
        Index("ix_usage_records_model_created", "model", "created_at"),
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
