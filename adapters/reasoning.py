"""One reasoning request (``llm_service.types.Reasoning``) in each provider's terms.

OpenAI speaks in efforts, Anthropic in token budgets. The two tables below translate one into the
other (docs/providers.md prints them), so a caller of either API reaches either provider.
"""

from __future__ import annotations

from llm_service.types import Reasoning, ReasoningEffort

# Anthropic's smallest budget; OpenAI's "minimal" asks for about the least a model can think.
MIN_BUDGET = 1024
BUDGET_BY_EFFORT: dict[ReasoningEffort, int] = {
    "minimal": MIN_BUDGET,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}


def effort_of(reasoning: Reasoning) -> ReasoningEffort | None:
    """The effort asked for, or the nearest one to a budget; None: the model's default."""
    if reasoning.effort is not None:
        return reasoning.effort
    budget = reasoning.budget_tokens
    if budget is None:
        return None
    if budget < BUDGET_BY_EFFORT["medium"]:
        return "low"
    return "medium" if budget < BUDGET_BY_EFFORT["high"] else "high"


def budget_of(reasoning: Reasoning) -> int | None:
    """The budget asked for, or the one an effort stands for; None: adaptive, or off (``none``)."""
    if reasoning.budget_tokens is not None:
        return reasoning.budget_tokens
    if reasoning.effort is None or reasoning.effort == "none":
        return None
    return BUDGET_BY_EFFORT[reasoning.effort]


def is_off(reasoning: Reasoning | None) -> bool:
    return reasoning is None or reasoning.effort == "none"
