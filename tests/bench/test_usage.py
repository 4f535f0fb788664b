"""The usage benchmark runs end to end on a small seed and reports against its goals."""

from __future__ import annotations

from pathlib import Path

from bench import usage
from tests.support.databases import require_postgres


def test_the_usage_benchmark_seeds_rolls_up_and_times_the_queries(tmp_path: Path) -> None:
    require_postgres()
    output = tmp_path / "usage-benchmark.md"

    usage.main(["--rows", "5000", "--repeats", "1", "--output", str(output)])

    report = output.read_text(encoding="utf-8")
    assert "5,000 usage" in report
    assert "| 30 days by key and model |" in report
    assert "| 90 days by day |" in report
    assert "hourly rows" in report
