"""The model registry: alias -> configured deployment -> adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from llm_service.config import ModelConfig
from llm_service.errors import ModelNotFound
from llm_service.types import ChatAdapter

# Builds an adapter from its config and the resolved API key (None when the model has none).
# The app's wiring supplies them (gateway/providers.py): this package never imports an adapter.
AdapterFactory = Callable[[ModelConfig, str | None], ChatAdapter]


@dataclass
class Deployment:
    config: ModelConfig
    adapter: ChatAdapter | None
    unavailable_reason: str | None = None
    id: str = ""  # the deployment's id within its alias (the alias name when it has one)
    weight: float = 1.0

    @property
    def available(self) -> bool:
        return self.adapter is not None and self.unavailable_reason is None


def role_allows(config: ModelConfig, roles: Iterable[str]) -> bool:
    return not config.roles or not set(config.roles).isdisjoint(roles)


class ModelRegistry:
    def __init__(
        self,
        deployments: Mapping[str, Deployment],
        members: Mapping[str, list[Deployment]] | None = None,
    ) -> None:
        self._deployments = dict(deployments)
        # Each alias's upstreams; an alias without a `deployments:` list is its own one member.
        self._members = {name: [d] for name, d in self._deployments.items()}
        self._members.update(members or {})

    @classmethod
    def build(
        cls,
        configs: Iterable[ModelConfig],
        factories: Mapping[str, AdapterFactory],
        environ: Mapping[str, str],
    ) -> ModelRegistry:
        deployments: dict[str, Deployment] = {}
        members: dict[str, list[Deployment]] = {}
        for config in configs:
            if not config.deployments:
                deployments[config.name] = _deploy(config, factories, environ)
                deployments[config.name].id = config.name
                continue
            members[config.name] = [
                replace(_deploy(member, factories, environ), id=member_id, weight=weight)
                for member_id, weight, member in config.deployment_configs()
            ]
            deployments[config.name] = _balanced(config, members[config.name])
        return cls(deployments, members)

    def members(self, name: str) -> list[Deployment]:
        """The upstreams behind an alias, for the router to balance over."""
        self.get(name)
        return self._members[name]

    def get(self, name: str) -> Deployment:
        try:
            return self._deployments[name]
        except KeyError:
            raise ModelNotFound(f"The model `{name}` does not exist.", param="model") from None

    def visible_to(self, roles: Iterable[str]) -> list[ModelConfig]:
        role_set = frozenset(roles)
        return [d.config for d in self._deployments.values() if role_allows(d.config, role_set)]

    def summary(self) -> dict[str, dict[str, str | bool | None]]:
        return {
            name: {
                "provider": d.config.provider,
                "available": d.available,
                "reason": d.unavailable_reason,
            }
            for name, d in self._deployments.items()
        }

    async def probe(self, seconds: float = 3.0) -> None:
        """Ask each deployment whether its server answers; record why not."""
        probed = [m for ms in self._members.values() for m in ms if m.adapter is not None]

        async def one(deployment: Deployment) -> None:
            assert deployment.adapter is not None
            try:
                async with asyncio.timeout(seconds):
                    deployment.unavailable_reason = await deployment.adapter.probe()
            except TimeoutError:
                deployment.unavailable_reason = f"no answer from the server within {seconds}s"

        await asyncio.gather(*(one(d) for d in probed))
        for name, members in self._members.items():
            if self._deployments[name] not in members:
                self._deployments[name] = _balanced(self._deployments[name].config, members)

    async def aclose(self) -> None:
        for members in self._members.values():
            for deployment in members:
                if deployment.adapter is not None:
                    await deployment.adapter.aclose()


def _balanced(config: ModelConfig, members: list[Deployment]) -> Deployment:
    """The alias-level view of a balanced alias: available when any upstream is."""
    available = [m for m in members if m.available]
    if available:
        return Deployment(config, available[0].adapter, None, config.name)
    reasons = "; ".join(f"{m.id}: {m.unavailable_reason or 'no adapter'}" for m in members)
    return Deployment(config, None, reasons, config.name)


def _deploy(
    config: ModelConfig, factories: Mapping[str, AdapterFactory], environ: Mapping[str, str]
) -> Deployment:
    factory = factories.get(config.provider)
    if factory is None:
        return Deployment(config, None, f"provider `{config.provider}` is not supported")
    api_key: str | None = None
    if config.api_key_env:
        api_key = environ.get(config.api_key_env) or None
        if api_key is None:
            return Deployment(config, None, f"environment variable {config.api_key_env} is not set")
    return Deployment(config, factory(config, api_key))
