"""The corpus over HTTP: the real OpenAI adapter and the wire-faithful fake upstream under the
text adapter, whole and streamed, give each case's expected content, calls and reasoning."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.openai import OpenAIAdapter
from adapters.text.adapter import TextToolsAdapter
from adapters.text.select import FORMATS
from llm_service.config import ModelConfig
from llm_service.types import StreamDone
from tests.adapters.text.corpus_files import CorpusCase
from tests.adapters.text.test_corpus import CASES, expected, outcome_of, request_for
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.servers import serve


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    with serve(fake.app()) as url:
        yield fake, f"{url}/v1"


async def _run(adapter: TextToolsAdapter, fake: FakeOpenAI, case: CorpusCase) -> list[str]:
    want = expected(case)
    fake.queue(FakeReply(text=case.output), FakeReply(text=case.output))
    failures = []
    if outcome_of(await adapter.complete(request_for(case))) != want:
        failures.append(f"{case.key} (whole)")
    events = [e async for e in adapter.stream(request_for(case))]
    done = events[-1]
    assert isinstance(done, StreamDone)
    if outcome_of(done.response) != want:
        failures.append(f"{case.key} (streamed)")
    return failures


@pytest.mark.parametrize("fmt", sorted(FORMATS))
async def test_format_corpus_over_http(upstream: tuple[FakeOpenAI, str], fmt: str) -> None:
    fake, url = upstream
    inner = OpenAIAdapter(ModelConfig(name="local", provider="openai", base_url=url), "k")
    adapter = TextToolsAdapter(inner, FORMATS[fmt])
    failures: list[str] = []
    try:
        for case in (c for c in CASES if c.format == fmt and not c.reasoning_open):
            failures += await _run(adapter, fake, case)
    finally:
        await inner.aclose()
    assert not failures
    assert fake.requests  # the cases really went over the wire
