"""The resilience parts of the configuration are validated at start."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.settings import Settings


def test_a_fallback_must_name_a_configured_model() -> None:
    with pytest.raises(ValidationError, match="falls back to unknown model `nowhere`"):
        Settings.model_validate(
            {"models": [{"name": "a", "provider": "mock", "fallbacks": ["nowhere"]}]}
        )


def test_deployment_ids_are_unique_and_inherit_the_alias() -> None:
    with pytest.raises(ValidationError, match="deployment ids must be unique"):
        Settings.model_validate(
            {
                "models": [
                    {"name": "a", "provider": "mock", "deployments": [{"id": "x"}, {"id": "x"}]}
                ]
            }
        )

    settings = Settings.model_validate(
        {
            "models": [
                {
                    "name": "a",
                    "provider": "openai",
                    "model": "gpt-x",
                    "deployments": [{"id": "east", "base_url": "http://127.0.0.1:1/v1"}],
                }
            ]
        }
    )
    [(member_id, weight, member)] = settings.models[0].deployment_configs()
    assert (member_id, weight, member.model, member.base_url) == (
        "east",
        1.0,
        "gpt-x",
        "http://127.0.0.1:1/v1",
    )


def test_at_most_three_attempts_can_be_configured() -> None:
    with pytest.raises(ValidationError, match=r"retry\.max_attempts"):
        Settings.model_validate(
            {"models": [{"name": "a", "provider": "mock", "retry": {"max_attempts": 4}}]}
        )
