"""Assembles the tool governance from settings over a catalog of tools: the admins'
policies with their approval rules, and pinning of reviewed definitions."""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from governance.keys import KeyDirectory
from governance.pinning import Pinning, PinningSettings, ReviewObserver
from governance.pins import ToolPins
from governance.policies import AppliedPolicies, ToolPolicies, ToolPolicySettings
from governance.tool_governance import ToolGovernance
from guardrails import Guardrails, GuardrailSettings, HttpClassifier
from mcp_client.config import CatalogSettings, MCPServerConfig
from mcp_client.types import ToolCatalog


def build_tool_governance(
    sessions: async_sessionmaker[AsyncSession],
    catalog: ToolCatalog,
    *,
    trusted: Callable[[], Set[str]],
    catalog_settings: CatalogSettings,
    config_servers: Sequence[MCPServerConfig],
    pinning: PinningSettings,
    policies: ToolPolicySettings,
    keys: KeyDirectory | None = None,
    on_review_requested: ReviewObserver | None = None,
    guardrails: GuardrailSettings | None = None,
) -> ToolGovernance:
    """What principals may see and run of the ``catalog``'s tools
    (``trusted``: the servers whose tools skip review, asked each time). ``keys`` answers for the
    requester's key at every decision (None: the roles given are used);
    ``on_review_requested`` hears of each definition newly held for review; ``guardrails``
    screen arguments and results (None: the secure defaults)."""
    settings = guardrails or GuardrailSettings()
    return ToolGovernance(
        catalog,
        catalog_settings=catalog_settings,
        policies=AppliedPolicies(ToolPolicies(sessions), policies.approval_rules),
        policy_settings=policies,
        pinning=Pinning(ToolPins(sessions), pinning, trusted, on_review_requested),
        config_servers=config_servers,
        keys=keys,
        guardrails=Guardrails(settings),
        classifier=None
        if settings.classifier is None
        else HttpClassifier(settings.classifier, httpx.AsyncClient()),
    )
