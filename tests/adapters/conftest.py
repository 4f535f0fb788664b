from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.conformance import MODES, PROVIDERS, Target, targets


@pytest.fixture(scope="session")
def all_targets() -> Iterator[dict[str, Target]]:
    """One fake server per provider for every adapter test (fakes are reset by Target.queue)."""
    with targets() as found:
        yield found


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
