from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.adapters.conformance import MODES, PROVIDERS, Target, targets


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def all_targets() -> AsyncIterator[dict[str, Target]]:
    """One fake server and one adapter per provider for every adapter test.

    Fakes are reset by ``Target.queue``.
    """
    with targets() as found:
        yield found
        for target in found.values():
            await target.aclose()


@pytest.fixture(params=PROVIDERS)
def target(request: pytest.FixtureRequest, all_targets: dict[str, Target]) -> Target:
    return all_targets[request.param]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anthropic(all_targets: dict[str, Target]) -> Target:
    return all_targets["anthropic"]


@pytest.fixture
def ollama(all_targets: dict[str, Target]) -> Target:
    return all_targets["ollama"]
