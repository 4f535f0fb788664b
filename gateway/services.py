"""Everything a running gateway holds, built from Settings at start and closed at stop."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog
from fastapi import Request
from opentelemetry.trace import Tracer
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from accounts.keys import KeyStore
from accounts.limits.alerts import audit_budget_alert
from accounts.limits.budgets import BudgetAlert, BudgetAlertSink
from accounts.limits.counters import MemoryCounters
from accounts.limits.database_counters import DatabaseCounters
from accounts.limits.limiter import KeyLimiter
from accounts.limits.sign_in import SignInThrottle
from accounts.pricing import PriceBook, litellm_price_table
from accounts.principals import Principal
from accounts.retention import RetentionJob
from accounts.sso.client import OidcClient
from accounts.teams import TeamStore
from accounts.usage import UsageEntry, UsageRecorder
from chat_service.approvals import Approvals, DecisionObserver
from chat_service.background import BackgroundTurns
from chat_service.call_hooks import CallListeners
from chat_service.executor import ToolExecutor
from chat_service.store import ConversationInfo, ConversationStore
from chat_service.sweeper import Sweeper
from chat_service.tool_call_view import ToolCallView
from chat_service.tool_calls import ToolCallStore
from chat_service.tool_inputs import ToolInputs
from chat_service.turn import ModelCallGate, ModelCallSettle, TurnRunner
from db.audit_chain import AuditSealer
from db.engine import create_engine, session_factory
from db.transactions import Transactions
from gateway.errors import report_of
from gateway.metrics import GatewayMetrics
from gateway.prompt_guard import PromptGuardrail
from gateway.settings import Settings, token_seal
from gateway.tool_call_events import tool_call_moved
from governance import ToolGovernance, build_tool_governance
from guardrails import PromptGuard, Screening
from llm_service.errors import ModelNotFound
from llm_service.registry import AdapterFactory, ModelRegistry
from llm_service.router import Router
from llm_service.types import ChatRequest, ChatResponse
from mcp_client.types import ToolCatalog
from notifications.notifier import Notifier, RequesterLookup
from notifications.payloads import Requester
from tool_servers import ToolServers, build_tool_servers
from tool_servers.grants import ServerGrants

log = structlog.get_logger("gateway.services")


@dataclass
class Services:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    keys: KeyStore
    teams: TeamStore
    registry: ModelRegistry
    prices: PriceBook
    usage: UsageRecorder
    router: Router
    limits: KeyLimiter
    tools: ToolGovernance
    tool_servers: ToolServers
    conversations: ConversationStore
    tool_calls: ToolCallStore
    tool_inputs: ToolInputs
    approvals: Approvals
    turns: TurnRunner
    background: BackgroundTurns
    sign_in: SignInThrottle
    notifier: Notifier
    retention: RetentionJob
    audit_sealer: AuditSealer
    prompt_guard: PromptGuardrail
    # Hears each guardrail screening that found something (the metrics): every tool-call path.
    on_screened: Callable[[Screening], None]
    oidc: OidcClient | None  # admin sign-in with SSO, when configured

    @classmethod
    async def start(
        cls,
        settings: Settings,
        environ: Mapping[str, str],
        factories: Mapping[str, AdapterFactory],
        tools: ToolCatalog | None,
        *,
        metrics: GatewayMetrics,
        tracer: Tracer,
        oidc: OidcClient | None = None,
    ) -> Services:
        engine = create_engine(settings.database_url, settings.database_pool)
        sessions = session_factory(engine)
        keys = KeyStore(sessions, settings.auth_cache_seconds)
        keys.last_used.start()
        if settings.admin_key is not None:
            await keys.ensure(settings.admin_key.get_secret_value(), "admin (bootstrap)", ["admin"])
        registry = ModelRegistry.build(settings.models, factories, environ)
        await registry.probe()
        for name, state in registry.summary().items():
            if not state["available"]:
                log.warning("model_unavailable", model=name, reason=state["reason"])
        prices = PriceBook.build(settings.models, litellm_price_table())
        for name in prices.unpriced():
            log.warning("model_unpriced", model=name, hint="set the model's `price` in the config")
        usage = UsageRecorder(
            Transactions.of(sessions),
            settings.usage_flush_seconds,
            prices,
            on_record=lambda entry: metrics.observe_tokens(
                entry.model, entry.provider, entry.prompt_tokens, entry.completion_tokens
            ),
            spool_dir=settings.usage_spool_dir,
        )
        await usage.start()
        router = Router(registry, tracer=tracer)
        notifier = Notifier.build(
            settings.notifications,
            sessions,
            environ,
            metrics.observe_webhook_delivery,
            _requesters(keys),
        )
        notifier.start()
        limits = _key_limiter(
            settings, prices, _budget_sink(sessions, notifier), sessions, engine.dialect.name
        )
        seal = token_seal(settings.mcp_token_key) if settings.mcp_token_key else None
        tool_servers = build_tool_servers(
            sessions,
            catalog_settings=settings.tool_catalog,
            config_servers=settings.mcp_servers,
            environ=environ,
            tools=tools,
            grants=ServerGrants(sessions, seal),
        )
        # Tool servers that fail are degraded and retried in the background; start never fails.
        await tool_servers.start()
        governance = build_tool_governance(
            sessions,
            tool_servers.catalog,
            trusted=tool_servers.trusted,
            catalog_settings=settings.tool_catalog,
            config_servers=settings.mcp_servers,
            pinning=settings.tool_pinning,
            policies=settings.tool_policies,
            keys=keys,
            on_review_requested=notifier.review_requested,
            guardrails=settings.guardrails,
        )
        await governance.start()
        loop_settings = settings.tool_loop
        conversations = ConversationStore(sessions)

        def call_moved(call: ToolCallView) -> None:
            tool_call_moved(metrics, call, in_catalog=governance.tool(call.tool_name) is not None)
            notifier.tool_call_moved(call)

        tool_calls = ToolCallStore(sessions, on_move=call_moved)
        tool_inputs = ToolInputs(sessions, tool_calls, loop_settings.follow_poll_seconds)
        listeners = CallListeners(
            tool_inputs,
            forwards_input=_forwards_input(registry),
            input_timeout_seconds=loop_settings.input_timeout_seconds,
            progress_interval_seconds=loop_settings.progress_interval_seconds,
        )
        turns = TurnRunner(
            store=conversations,
            calls=tool_calls,
            executor=ToolExecutor(
                governance,
                tool_calls,
                loop_settings,
                tracer=tracer,
                listeners=listeners,
                on_screened=metrics.observe_screening,
            ),
            router=router,
            tools=governance,
            settings=loop_settings,
            report=report_of,
            max_history_bytes=settings.max_history_bytes,
            gate=_model_call_gate(usage, registry, limits, keys),
        )
        background = BackgroundTurns(turns)
        approvals = Approvals(
            tool_calls,
            governance,
            loop_settings,
            on_decision=_decision_observer(metrics, background),
        )
        sweeper = Sweeper(
            store=conversations, calls=tool_calls, approvals=approvals, settings=loop_settings
        )
        background.start_sweeping(sweeper, loop_settings.sweep_interval_seconds)
        retention = RetentionJob(
            sessions,
            usage_days=settings.usage_retention_days,
            audit_days=settings.audit_retention_days,
            settings=settings.retention,
            responses_days=settings.responses_retention_days,
            conversations_days=settings.conversation_retention_days,
            webhooks_days=settings.webhook_retention_days,
        )
        retention.start()
        audit_sealer = AuditSealer(sessions, settings.audit_seal_seconds)
        audit_sealer.start()
        return cls(
            settings=settings,
            engine=engine,
            sessions=sessions,
            keys=keys,
            teams=TeamStore(sessions),
            registry=registry,
            prices=prices,
            usage=usage,
            router=router,
            limits=limits,
            tools=governance,
            tool_servers=tool_servers,
            conversations=conversations,
            tool_calls=tool_calls,
            tool_inputs=tool_inputs,
            approvals=approvals,
            turns=turns,
            background=background,
            notifier=notifier,
            sign_in=SignInThrottle(
                limits.counters,
                settings.admin_ui.sign_in_attempts_per_client,
                settings.admin_ui.sign_in_attempts_per_key,
                MemoryCounters(),
            ),
            retention=retention,
            audit_sealer=audit_sealer,
            on_screened=metrics.observe_screening,
            prompt_guard=PromptGuardrail(
                PromptGuard(settings.guardrails.prompts, settings.guardrails.max_scan_chars),
                metrics.observe_screening,
            ),
            oidc=oidc,
        )

    async def stop(self) -> None:
        await self.audit_sealer.aclose()
        await self.retention.aclose()
        await self.background.aclose()
        await self.notifier.aclose()
        await self.tools.aclose()
        await self.tool_servers.aclose()
        await self.usage.aclose()
        await self.keys.last_used.aclose()
        await self.registry.aclose()
        await self.limits.aclose()
        await self.engine.dispose()


def _forwards_input(registry: ModelRegistry) -> Callable[[str], bool]:
    """Whether a model's config forwards tool servers' requests for input to the caller."""

    def forwards(model: str) -> bool:
        try:
            return registry.get(model).config.forward_elicitation
        except ModelNotFound:
            return False

    return forwards


def _budget_sink(sessions: async_sessionmaker[AsyncSession], notifier: Notifier) -> BudgetAlertSink:
    """Each budget alert is audited, then sent to the webhooks subscribed to it."""
    audit = audit_budget_alert(sessions)

    async def alert(crossed: BudgetAlert) -> None:
        await audit(crossed)
        await notifier.budget_threshold(crossed)

    return alert


def _requesters(keys: KeyStore) -> RequesterLookup:
    """A call's requester for the webhooks: the key's owner and team (a revoked key: its owner
    alone, which the audit keeps)."""

    async def lookup(key_id: int) -> Requester:
        key = await keys.by_id(key_id)
        if key is not None:
            return Requester(key_id, key.name, key.owner, key.team)
        return Requester(key_id, None, (await keys.owners([key_id])).get(key_id), None)

    return lookup


def _decision_observer(metrics: GatewayMetrics, background: BackgroundTurns) -> DecisionObserver:
    """Every approval decision, from the API or the admin UI: counted, then the turn resumes
    (on whichever replica took the decision)."""

    def decided(call: ToolCallView) -> None:
        if call.decided_at is not None:
            waited = (call.decided_at - call.created_at).total_seconds()
            metrics.observe_approval_decision(call.state.value, waited)
        background.resume(call.conversation_id)

    return decided


def _model_call_gate(
    usage: UsageRecorder, registry: ModelRegistry, limits: KeyLimiter, keys: KeyStore
) -> ModelCallGate:
    """Each model call of a conversation turn, also when the turn resumes in the background
    after an approval, reserves its worst case on the key's budgets first (refused: the turn
    fails with the 429), then records its usage and settles the reservation to its cost."""

    async def reserve(conversation: ConversationInfo, request: ChatRequest) -> ModelCallSettle:
        # The key as it is now (cached), for its team and own limits; a revoked key's turn
        # still counts against its roles' limits.
        key = await keys.by_id(conversation.api_key_id)
        requester = Principal(
            conversation.api_key_id,
            key.name if key else "",
            conversation.roles,
            team=key.team if key else None,
            limits=key.limits if key else None,
            team_budget=key.team_budget if key else None,
        )
        # The history's size is not known without encoding it: its cost is settled after.
        reservation = await limits.reserve(requester, conversation.model)

        async def settle(response: ChatResponse | None, seconds: float) -> None:
            if response is None:
                await limits.settle(reservation, None)
                return
            usage.record(_turn_usage(conversation, key, registry, response, seconds))
            await limits.settle(reservation, response.usage)

        return settle

    return reserve


def _turn_usage(
    conversation: ConversationInfo,
    key: Principal | None,
    registry: ModelRegistry,
    response: ChatResponse,
    seconds: float,
) -> UsageEntry:
    return UsageEntry(
        request_id=conversation.id,
        api_key_id=conversation.api_key_id,
        key_name=key.name if key else None,
        team=key.team if key else None,
        route="conversation",
        model=conversation.model,
        provider=registry.get(conversation.model).config.provider,
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens,
        latency_ms=round(seconds * 1000),
        status_code=200,
        error_type=None,
        cached_tokens=response.usage.cached_tokens,
        cache_write_tokens=response.usage.cache_write_tokens,
        reasoning_tokens=response.usage.reasoning_tokens,
    )


def _key_limiter(
    settings: Settings,
    prices: PriceBook,
    on_alert: BudgetAlertSink,
    sessions: async_sessionmaker[AsyncSession],
    dialect: str,
) -> KeyLimiter:
    if settings.redis_url:
        # Imported only when configured: the Redis client is tens of MB of resident memory.
        from accounts.limits.redis_counters import RedisCounters

        shared = RedisCounters(settings.redis_url, settings.redis_key_prefix)
        return KeyLimiter(settings.key_limits, shared, prices, on_alert=on_alert)
    # Without Redis, rates are counted per process, but budgets (money) in the database every
    # worker and replica shares.
    spend = DatabaseCounters(sessions, dialect)
    return KeyLimiter(settings.key_limits, MemoryCounters(), prices, on_alert=on_alert, spend=spend)


async def get_services(request: Request) -> Services:
    # async on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a thread
    # hop on every request for a one-line attribute read.
    services: Services = request.app.state.services
    return services
