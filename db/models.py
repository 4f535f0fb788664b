"""Tables. The schema changes only through Alembic migrations under ``migrations/``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from db.base import Base, UTCDateTime, utcnow


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    # The person or service the key belongs to: self-approval compares owners, not keys, so a
    # second key of the same owner cannot approve the first one's calls.
    owner: Mapped[str] = mapped_column(String(200))
    # SHA-256 of the key: keys are 256-bit random secrets, so a slow hash adds nothing.
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    roles: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    team: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Written at most about once a minute per key (accounts/key_usage.py).
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # null: every model its roles allow; a list: only these of them.
    allowed_models: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    # The key's own limits (accounts.limits.config.KeyLimits), applied on top of its roles'.
    limits: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Set on the row standing for a person who signs in to the admin UI with SSO ("issuer#sub"):
    # its secret is random and never shown, so it is an identity, never a usable key.
    sso_subject: Mapped[str | None] = mapped_column(String(500), nullable=True, unique=True)


class Team(Base):
    """A team's spend budgets, shared by every key whose ``team`` names it."""

    __tablename__ = "teams"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    budget_per_day: Mapped[float | None] = mapped_column(Float, nullable=True)
    budget_per_month: Mapped[float | None] = mapped_column(Float, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class MaintenanceLease(Base):
    """Who runs a periodic job across replicas (retention): held until ``expires_at``."""

    __tablename__ = "maintenance_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())


class LimitCounter(Base):
    """A budget's counter when there is no Redis (``accounts/limits/database_counters.py``): its
    window is in ``name``; ``expires_at`` (epoch seconds) is when the row may be deleted."""

    __tablename__ = "limit_counters"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)


class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    api_key_id: Mapped[int] = mapped_column(Integer, index=True)
    model: Mapped[str] = mapped_column(String(200))
    bundle: Mapped[str | None] = mapped_column(String(100), nullable=True)
    # The requester's roles when the turn started: tools are offered and re-checked against these.
    roles: Mapped[list[str]] = mapped_column(JSON, default=list)
    # idle | running | awaiting_approval; moved only by compare-and-set (chat_service.store).
    status: Mapped[str] = mapped_column(String(32), default="idle")
    turn_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ConversationMessage(Base):
    __tablename__ = "conversation_messages"
    # A turn reads the rows after its cursor and counts those before it (migration 0110).
    __table_args__ = (
        Index("ix_conversation_messages_conversation_order", "conversation_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(16))
    # The whole canonical message (chat_service.messages): what every reader reads. Rows from
    # before 0008 got theirs from the narrower columns below in 0116; those are no longer read,
    # are kept while replicas of the release before 0116 still select them, and can be dropped
    # by a later migration (is_error once the inserts stop writing it).
    message: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    content: Mapped[str | None] = mapped_column(Text, nullable=True)
    tool_calls: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    tool_call_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ToolCallRecord(Base):
    __tablename__ = "tool_calls"
    __table_args__ = (
        Index("ix_tool_calls_state_expires", "state", "expires_at"),
        # The admins' "recently decided" list, newest first.
        Index("ix_tool_calls_decided_at", "decided_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    call_id: Mapped[str] = mapped_column(String(200))  # the id the model gave the call
    round: Mapped[int] = mapped_column(Integer)
    tool_name: Mapped[str] = mapped_column(String(200))
    server: Mapped[str | None] = mapped_column(String(200), nullable=True)
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON)
    arguments_hash: Mapped[str] = mapped_column(String(64))
    definition_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    state: Mapped[str] = mapped_column(String(32))
    requested_by_key_id: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    decided_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    decision_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Distinct approvals the call needs, and those given so far: [{key_id, owner, at, comment}].
    # approval_count guards each addition (compare-and-set), so two replicas never both count.
    approvals_required: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    approvals: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    approval_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    policy_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    result: Mapped[str | None] = mapped_column(Text, nullable=True)
    result_is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ToolCallInput(Base):
    """A tool server's request for input during a call, forwarded to the conversation's caller.

    The call's replica waits on this row and whichever replica takes the answer writes it, by
    compare-and-set from ``pending``: the answer need not reach the replica running the call."""

    __tablename__ = "tool_call_inputs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tool_call_id: Mapped[str] = mapped_column(
        ForeignKey("tool_calls.id", ondelete="CASCADE"), index=True
    )
    conversation_id: Mapped[str] = mapped_column(String(36), index=True)
    # pending | accept | decline | cancel | expired
    state: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(8))
    requested_schema: Mapped[dict[str, Any]] = mapped_column(JSON)
    url: Mapped[str | None] = mapped_column(Text, nullable=True)
    content: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    answered_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ConversationEvent(Base):
    """Durable turn events (not text deltas), so any replica can follow a paused turn."""

    __tablename__ = "conversation_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    type: Mapped[str] = mapped_column(String(64))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class AuditEvent(Base):
    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_created", "created_at"),
        Index("ix_audit_events_seq", "seq", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    actor_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    action: Mapped[str] = mapped_column(String(64))
    conversation_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    tool_call_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    tool_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The hash chain (db/audit_chain.py): set by the sealer shortly after the event is written.
    seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    prev_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    chain_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AdminSession(Base):
    """A signed-in admin web UI session; only the token's hash is stored."""

    __tablename__ = "admin_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    api_key_id: Mapped[int] = mapped_column(
        ForeignKey("api_keys.id", ondelete="CASCADE"), index=True
    )
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class ToolPin(Base):
    """One reviewed (or to-be-reviewed) tool definition: a tool is offered to models only while
    its current definition hash has an approved pin, unless its server is trusted."""

    __tablename__ = "tool_pins"
    __table_args__ = (UniqueConstraint("tool_name", "definition_hash"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tool_name: Mapped[str] = mapped_column(String(200), index=True)
    server: Mapped[str] = mapped_column(String(200))
    definition_hash: Mapped[str] = mapped_column(String(64))
    definition: Mapped[dict[str, Any]] = mapped_column(JSON)
    # pending_review | approved | rejected
    status: Mapped[str] = mapped_column(String(32), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    decided_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class ToolPolicyOverride(Base):
    """An admin's policy for one tool, applied on top of the config file's per-tool overrides.
    A null column leaves that setting to the config.

    A tool is named by its server and its name there, which no other server can change. Rows
    stored before that (``server`` empty) name the tool by its catalog name."""

    __tablename__ = "tool_policy_overrides"

    server: Mapped[str] = mapped_column(String(48), primary_key=True, server_default="")
    tool_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    enabled: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    roles: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    requires_approval: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # governance.approval_rules.ApprovalRules as JSON; null follows the config file.
    approval_rules: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # guardrails.ToolGuardrails as JSON (actions per detector and direction); null: the config's.
    guardrails: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class RuntimeMCPServer(Base):
    """An MCP server an admin added at run time; merged with the config file's at start."""

    __tablename__ = "runtime_mcp_servers"

    name: Mapped[str] = mapped_column(String(48), primary_key=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Ranks its tools' claim to a name another server also offers; edits keep it.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class WebhookDelivery(Base):
    """The notifications outbox: one row per event and webhook, claimed by one replica at a time
    (a lease), retried with backoff; the row id is the delivery's idempotency id."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    webhook: Mapped[str] = mapped_column(String(64))  # its name in notifications.webhooks
    event: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))  # pending | delivered | gave_up
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class StoredResponse(Base):
    """A Responses API answer kept for ``previous_response_id`` and ``GET /v1/responses/{id}``.

    ``conversation`` is the whole canonical history the answer ends (the earlier responses' input
    and output, this input, this output; never the ``instructions``, which do not carry over),
    so a follow-up needs one row, not a walk up the chain. ``items`` is the same history as
    Responses API items, reasoning items included, for a provider that serves that API itself;
    ``input_items`` this request's own input, listed by ``GET /v1/responses/{id}/input_items``
    (both null for rows stored before migration 0050).
    """

    __tablename__ = "stored_responses"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    api_key_id: Mapped[int] = mapped_column(Integer, index=True)
    model: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    conversation: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    items: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    input_items: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)


class MCPServerGrant(Base):
    """An OAuth grant for an authorization-code MCP server, shared by every replica. The tokens
    and the registered client (which may hold a client secret) are sealed with the gateway's
    token key; the row never holds them readable. ``server_url`` binds the grant to the server
    it was given for: a server moved elsewhere must be connected again."""

    __tablename__ = "mcp_server_grants"

    server: Mapped[str] = mapped_column(String(48), primary_key=True)
    server_url: Mapped[str] = mapped_column(String(2000))
    tokens_sealed: Mapped[str | None] = mapped_column(Text, nullable=True)
    client_sealed: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Authorization server and protected resource metadata: public documents, kept readable.
    discovery: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    lost_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    connected_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    connected_by_key_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # A replica refreshing the tokens holds this lease; the others wait for what it stores.
    refresh_claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
