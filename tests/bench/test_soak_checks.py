"""The soak's invariant checks hold on what they should and fail on what they should not."""

from __future__ import annotations

from bench import soak_checks as checks
from bench.soak_checks import Outcome


def test_a_hang_fails_and_an_error_answer_does_not() -> None:
    answered = [Outcome("chat", 0, 0.1, 200), Outcome("chat", 1, 2.0, None, "ConnectError")]
    assert checks.every_request_answered(answered, timeout=30).held
    hung = [*answered, Outcome("stream", 2, 30.0, None, "ReadTimeout")]
    check = checks.every_request_answered(hung, timeout=30)
    assert not check.held
    assert "1 hung past 30 s" in check.detail


def test_tool_calls_run_twice_or_lost_fail() -> None:
    assert checks.tool_calls_exactly_once(executions=10, succeeded=10, unknown=0).held
    assert checks.tool_calls_exactly_once(executions=11, succeeded=10, unknown=1).held
    assert not checks.tool_calls_exactly_once(executions=11, succeeded=10, unknown=0).held
    assert not checks.tool_calls_exactly_once(executions=9, succeeded=10, unknown=0).held
    assert not checks.tool_calls_exactly_once(executions=0, succeeded=0, unknown=0).held


def test_usage_rows_must_match_the_requests_served() -> None:
    assert checks.usage_rows_present(rows=5, served=5).held
    missing = checks.usage_rows_present(rows=4, served=5)
    assert not missing.held
    assert "(-1)" in missing.detail


def test_growth_after_warm_up_fails() -> None:
    assert checks.flat_after_warmup("RSS", [100, 150, 160, 161, 165, 166], "MB", 0.10).held
    assert not checks.flat_after_warmup("RSS", [100, 150, 160, 170, 190, 200], "MB", 0.10).held
    assert not checks.flat_after_warmup("RSS", [100], "MB", 0.10).held
    # A warm-up given as the index of its end (the faults' first round): growth before it is
    # not counted, growth after it is; none left to judge after it fails.
    assert checks.flat_after_warmup("RSS", [100, 150, 200, 201, 202], "MB", 0.10, 2).held
    assert not checks.flat_after_warmup("RSS", [100, 100, 100, 150, 160], "MB", 0.10, 2).held
    assert not checks.flat_after_warmup("RSS", [100, 100, 100, 100], "MB", 0.10, 3).held


def test_budget_and_recovery() -> None:
    assert checks.budget_held(spent=4.0, budget=3.0, reservation=1.0).held
    assert not checks.budget_held(spent=4.5, budget=3.0, reservation=1.0).held
    assert checks.recovered("kill -9", 5.0, limit=60).held
    assert not checks.recovered("kill -9", None, limit=60).held


def test_the_table_marks_failures() -> None:
    text = checks.table([checks.Check("a", True, "x"), checks.Check("b", False, "y")])
    assert "| a | held | x |" in text
    assert "| b | **FAILED** | y |" in text
