"""What a model call costs in USD: a model's `price` in the config, else litellm's price table.

litellm maintains the table (``model_prices_and_context_window_backup.json``, shipped inside the
package). It is read here as the JSON file it is, found without importing litellm: importing it
costs over a hundred MB and a second of start-up, and unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is
set it fetches the live table from the network. Prices therefore change when litellm is upgraded
(it is pinned in ``uv.lock``), never at run time. A model neither the config nor the table prices
is *unpriced*: its usage is recorded with no cost (``null``, not 0) and it is flagged in
``/readyz`` and on the Models page.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llm_service.config import ModelConfig, Price
from llm_service.types import Usage

PriceSource = Literal["config", "litellm", "self_hosted", "mock"]
_TABLE_FILE = "model_prices_and_context_window_backup.json"
_FREE_PROVIDERS: dict[str, PriceSource] = {"mock": "mock", "ollama": "self_hosted"}


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per token (and per request) for one model, and where the numbers come from."""

    input: float
    output: float
    cached_input: float
    cache_write: float
    per_request: float
    source: PriceSource
    table_entry: str | None = None  # the litellm table's key, when priced from it

    def cost(self, usage: Usage) -> float:
        uncached = max(usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens, 0)
        return (
            uncached * self.input
            + usage.cached_tokens * self.cached_input
            + usage.cache_write_tokens * self.cache_write
            + usage.completion_tokens * self.output
            + self.per_request
        )

    def as_dict(self) -> dict[str, object]:
        per_million = 1_000_000
        return {
            "source": self.source,
            "table_entry": self.table_entry,
            "input_per_1m": self.input * per_million,
            "output_per_1m": self.output * per_million,
            "cached_input_per_1m": self.cached_input * per_million,
            "cache_write_per_1m": self.cache_write * per_million,
            "per_request": self.per_request,
        }


def from_config(price: Price) -> ModelPrice:
    def per_token(per_1k: float | None) -> float:
        return (price.input_per_1k if per_1k is None else per_1k) / 1000

    return ModelPrice(
        input=price.input_per_1k / 1000,
        output=price.output_per_1k / 1000,
        cached_input=per_token(price.cached_input_per_1k),
        cache_write=per_token(price.cache_write_per_1k),
        per_request=price.per_request,
        source="config",
    )


def from_table(entry_name: str, entry: Mapping[str, Any]) -> ModelPrice | None:
    prompt = entry.get("input_cost_per_token")
    completion = entry.get("output_cost_per_token")
    if not isinstance(prompt, int | float) or not isinstance(completion, int | float):
        return None
    cached = entry.get("cache_read_input_token_cost")
    written = entry.get("cache_creation_input_token_cost")
    per_request = entry.get("input_cost_per_request")
    return ModelPrice(
        input=float(prompt),
        output=float(completion),
        cached_input=float(cached) if isinstance(cached, int | float) else float(prompt),
        cache_write=float(written) if isinstance(written, int | float) else float(prompt),
        per_request=float(per_request) if isinstance(per_request, int | float) else 0.0,
        source="litellm",
        table_entry=entry_name,
    )


def litellm_price_table() -> dict[str, Any]:
    """litellm's shipped price table; empty (every model unpriced) if litellm is missing."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / _TABLE_FILE
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _table_names(config: ModelConfig) -> list[str]:
    upstream = config.upstream_model
    names = [upstream, f"{config.provider}/{upstream}"]
    if config.provider == "ollama":
        names.reverse()  # the table lists Ollama's models as ``ollama/<model>``
    if config.provider == "litellm" and "/" in upstream:
        names.append(upstream.split("/", 1)[1])
    return names


def price_model(config: ModelConfig, table: Mapping[str, Any]) -> ModelPrice | None:
    if config.price is not None:
        return from_config(config.price)
    for name in _table_names(config):
        entry = table.get(name)
        if isinstance(entry, dict):
            found = from_table(name, entry)
            if found is not None:
                return found
    free = _FREE_PROVIDERS.get(config.provider)
    if free is not None:
        return ModelPrice(0.0, 0.0, 0.0, 0.0, 0.0, free)
    return None


class PriceBook:
    """Each configured alias's price (None: unpriced)."""

    def __init__(self, prices: Mapping[str, ModelPrice | None]) -> None:
        self._prices = dict(prices)

    @classmethod
    def build(cls, models: Iterable[ModelConfig], table: Mapping[str, Any]) -> PriceBook:
        return cls({model.name: price_model(model, table) for model in models})

    def price(self, alias: str) -> ModelPrice | None:
        return self._prices.get(alias)

    def cost(self, alias: str, usage: Usage) -> float | None:
        """USD, or None when the model has no known price."""
        price = self._prices.get(alias)
        return None if price is None else price.cost(usage)

    def unpriced(self) -> list[str]:
        return sorted(alias for alias, price in self._prices.items() if price is None)
