"""Events in, signed HTTP POSTs out: enqueued where they happen, delivered off the request path.

``emit`` writes one outbox row per subscribed webhook (so a restart loses nothing enqueued);
every replica polls the outbox, and the lease in ``Outbox.claim`` makes exactly one of them
deliver each row. A failed delivery is retried with exponential backoff up to ``max_attempts``,
with the same delivery id (``X-Gateway-Delivery``) each time: at-least-once, idempotent for a
receiver that remembers ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from datetime import timedelta
from typing import Any

import httpx
import orjson
import structlog
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from accounts.limits.budgets import BudgetAlert
from chat_service.tool_call_view import ToolCallView
from db.base import utcnow
from db.cancellation import raise_if_cancelled
from governance import PinView
from notifications.config import NotificationSettings, WebhookConfig
from notifications.outbox import Delivery, Outbox, new_delivery_id
from notifications.payloads import (
    Requester,
    body,
    budget_data,
    call_data,
    call_event,
    review_data,
    signature,
    slack_text,
)

log = structlog.get_logger("notifications")

# Who a key belongs to, for the payloads (the gateway's key store answers).
RequesterLookup = Callable[[int], Awaitable[Requester]]
# Told each delivery's event and outcome (the gateway counts them in its metrics).
DeliveryObserver = Callable[[str, str], None]


class Notifier:
    def __init__(
        self,
        settings: NotificationSettings,
        outbox: Outbox,
        secrets: Mapping[str, str | None],
        urls: Mapping[str, str | None],
        on_delivery: DeliveryObserver,
        *,
        requesters: RequesterLookup | None = None,
    ) -> None:
        self._settings = settings
        self._requesters = requesters
        self._outbox = outbox
        self._webhooks = {webhook.name: webhook for webhook in settings.webhooks}
        self._secrets = secrets  # secret_env -> its value (None: unset)
        self._urls = urls  # webhook name -> its URL (None: its url_env is unset)
        self._on_delivery = on_delivery
        self._wake = asyncio.Event()
        self._pending: set[asyncio.Task[None]] = set()
        self._loop: asyncio.Task[None] | None = None
        self._client = httpx.AsyncClient(timeout=settings.timeout_seconds)

    @classmethod
    def build(
        cls,
        settings: NotificationSettings,
        sessions: async_sessionmaker[AsyncSession],
        environ: Mapping[str, str],
        on_delivery: DeliveryObserver,
        requesters: RequesterLookup | None = None,
    ) -> Notifier:
        names = {w.secret_env for w in settings.webhooks if w.secret_env is not None}
        secrets = {name: environ.get(name) for name in names}
        for name, value in secrets.items():
            if not value:
                log.warning("webhook_secret_unset", secret_env=name)
        urls = {
            w.name: w.url if w.url_env is None else environ.get(w.url_env) or None
            for w in settings.webhooks
        }
        for webhook in settings.webhooks:
            if urls[webhook.name] is None:
                log.warning("webhook_url_unset", webhook=webhook.name, url_env=webhook.url_env)
        return cls(settings, Outbox(sessions), secrets, urls, on_delivery, requesters=requesters)

    @property
    def outbox(self) -> Outbox:
        return self._outbox

    def tool_call_moved(self, call: ToolCallView) -> None:
        """The tool-call store's hook: approval requested, decided or expired."""
        event = call_event(call)
        if event is not None and self._subscribers(event):
            self._soon(self._emit_call(event, call))

    async def _emit_call(self, event: str, call: ToolCallView) -> None:
        now = utcnow()
        requester = None
        if self._requesters is not None:
            try:
                requester = await self._requesters(call.requested_by_key_id)
            except SQLAlchemyError as exc:
                # The event still goes, with the key's id alone.
                log.warning("webhook_requester_unknown", error=type(exc).__name__)
        await self.emit(event, call_data(call, self._settings.admin_url, now, requester))

    async def review_requested(self, pin: PinView) -> None:
        """Pinning's hook: a tool definition is held until an admin reviews it."""
        await self.emit("tool.review_requested", review_data(pin, self._settings.admin_url))

    async def budget_threshold(self, alert: BudgetAlert) -> None:
        """A budget sink: spend crossed 80 % or 100 % of a key's or team's budget."""
        await self.emit("budget.threshold", budget_data(alert, self._settings.admin_url))

    def _soon(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def emit(self, event: str, data: dict[str, Any]) -> None:
        """Enqueue ``event`` for every webhook subscribed to it (``budget.threshold``, ...)."""
        if not self._subscribers(event):
            return
        now = utcnow()
        for webhook in self._subscribers(event):
            delivery_id = new_delivery_id()
            payload = body(delivery_id, event, data, now)
            try:
                await self._outbox.add(webhook.name, event, payload, delivery_id)
            except SQLAlchemyError as exc:
                log.error("webhook_enqueue_failed", webhook_event=event, error=type(exc).__name__)
        self._wake.set()

    def _subscribers(self, event: str) -> list[WebhookConfig]:
        return [w for w in self._settings.webhooks if event in w.events]

    def start(self) -> None:
        if self._settings.webhooks:
            self._loop = asyncio.create_task(self._run(), name="webhook-deliveries")

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.poll_seconds):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.deliver_due()
            except (SQLAlchemyError, OSError) as exc:
                raise_if_cancelled()
                log.error("webhook_outbox_unavailable", error=type(exc).__name__)

    async def deliver_due(self) -> None:
        for delivery in await self._outbox.claim(self._settings.lease_seconds):
            await self._deliver(delivery)

    async def _deliver(self, delivery: Delivery) -> None:
        webhook = self._webhooks.get(delivery.webhook)
        error = self._problem(webhook)
        if error is None:
            assert webhook is not None
            error = await self._post(webhook, delivery)
        if error is None:
            await self._outbox.delivered(delivery)
            self._on_delivery(delivery.event, "delivered")
            return
        attempt = delivery.attempts + 1
        retry_at = None
        if webhook is not None and attempt < self._settings.max_attempts:
            backoff = self._settings.retry_base_seconds * 2 ** (attempt - 1)
            retry_at = utcnow() + timedelta(seconds=min(backoff, self._settings.retry_max_seconds))
        await self._outbox.failed(delivery, error, retry_at)
        outcome = "failed" if retry_at is not None else "gave_up"
        self._on_delivery(delivery.event, outcome)
        log.warning(
            "webhook_delivery_failed",
            delivery_id=delivery.id,
            webhook_event=delivery.event,
            attempt=attempt,
            error=error,
            gave_up=retry_at is None,
        )

    def _problem(self, webhook: WebhookConfig | None) -> str | None:
        if webhook is None:
            return "the webhook is no longer configured"
        if webhook.secret_env is not None and not self._secrets.get(webhook.secret_env):
            return f"the signing secret variable {webhook.secret_env} is unset"
        if self._urls.get(webhook.name) is None:
            return f"the URL variable {webhook.url_env} is unset"
        return None

    async def _post(self, webhook: WebhookConfig, delivery: Delivery) -> str | None:
        payload = slack_text(delivery.payload) if webhook.format == "slack" else delivery.payload
        content = orjson.dumps(payload)
        timestamp = str(int(time.time()))
        headers = {
            "content-type": "application/json",
            "x-gateway-event": delivery.event,
            "x-gateway-delivery": delivery.id,
            "x-gateway-timestamp": timestamp,
        }
        if webhook.secret_env is not None:
            secret = self._secrets[webhook.secret_env]
            assert secret is not None
            headers["x-gateway-signature"] = signature(secret, timestamp, content)
        try:
            url = self._urls[webhook.name]
            assert url is not None
            response = await self._client.post(url, content=content, headers=headers)
        except httpx.HTTPError as exc:
            # The exception's text may quote the URL, which can be a secret (Slack's).
            return type(exc).__name__
        if response.is_success:
            return None
        return f"HTTP {response.status_code}"

    async def aclose(self) -> None:
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        await self._client.aclose()
