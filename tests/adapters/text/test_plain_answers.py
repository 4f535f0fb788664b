"""The false-positive side of recovery: plain answers that mention a tool or hold JSON.

Every answer in ``plain_answers.yaml`` runs through every text format, whole and streamed (one
character at a time and at random cuts), with the file's tools and schemas declared: each must
come back as content, byte for byte, and never as a call.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from adapters.text.recover import DeclaredTools
from adapters.text.scan import parse_reply
from adapters.text.select import FORMATS
from tests.adapters.text.corpus import stream

PLAIN = yaml.safe_load((Path(__file__).parent / "plain_answers.yaml").read_text(encoding="utf-8"))
SCHEMAS: dict[str, dict[str, Any]] = PLAIN["tools"]
ANSWERS: list[dict[str, str]] = PLAIN["answers"]
MIN_ANSWERS = 40


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("answer", ANSWERS, ids=lambda a: a["id"])
def test_a_plain_answer_is_content_and_never_a_call(fmt: str, answer: dict[str, str]) -> None:
    text = answer["output"]
    reply = parse_reply(FORMATS[fmt], text, DeclaredTools(SCHEMAS))

    assert (reply.content, reply.calls) == (text, ())
    rng = random.Random(text)
    for chunks in (list(text), _random_chunks(text, rng)):
        streamed = stream(FORMATS[fmt], chunks, DeclaredTools(SCHEMAS))
        assert (streamed.content, streamed.calls) == (text, [])


def test_the_false_positive_set_is_large_and_named_uniquely() -> None:
    assert len(ANSWERS) >= MIN_ANSWERS
    assert len({a["id"] for a in ANSWERS}) == len(ANSWERS)


def _random_chunks(text: str, rng: random.Random) -> list[str]:
    chunks, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 7)
        chunks.append(text[pos : pos + size])
        pos += size
    return chunks
