from __future__ import annotations

import pytest

from adapters.text.select import FORMATS, format_for_model, resolve


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "hermes"),
        ("qwen3:8b", "hermes"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "hermes"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3"),
        ("llama3.3:70b", "llama3"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "pythonic"),
        ("mistralai/Mistral-Small-3.2-24B", "mistral"),
        ("mixtral-8x7b", "mistral"),
        ("magistral-small", "mistral"),
        ("devstral", "mistral"),
        ("ibm-granite/granite-3.3-8b-instruct", "granite"),
        ("deepseek-ai/DeepSeek-V3.1", "deepseek"),
        ("DeepSeek-R1-Distill-Qwen-7B", "deepseek"),
        ("phi-4", "generic"),
        ("gemma-3-27b", "generic"),
    ],
)
def test_auto_picks_by_model_name(model: str, expected: str) -> None:
    assert format_for_model(model) == expected


def test_auto_tries_each_name_and_configured_formats_are_used_as_is() -> None:
    assert resolve("auto", "my-local-model", "qwen-alias").name == "hermes"
    assert resolve("auto", "unknown").name == "generic"
    assert resolve("mistral", "Qwen2.5").name == "mistral"


def test_no_marker_is_a_prefix_of_another() -> None:
    for fmt in FORMATS.values():
        markers = (fmt.think_tags[0], *fmt.end_tokens, *fmt.markers)
        for a in markers:
            assert not any(b != a and b.startswith(a) for b in markers), (fmt.name, a)
