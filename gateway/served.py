"""Response headers naming who answered, after load balancing and any fallback."""

from __future__ import annotations

from llm_service.router import Served


def served_headers(served: Served) -> dict[str, str]:
    return {
        "x-gateway-model": served.alias,
        "x-gateway-deployment": served.deployment,
        "x-gateway-provider": served.provider,
    }
