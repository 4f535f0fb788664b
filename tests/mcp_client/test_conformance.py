"""The official MCP conformance suite (npm's @modelcontextprotocol/conformance, on Node 22 from the
npm registry) runs its client scenarios against `llm-gateway mcp-conformance-client`.

The auth/* scenarios need OAuth for tool servers, which is not built yet: the command refuses
them with a reason, and the suite's list is compared with ours so a scenario the suite adds is
noticed rather than silently left out.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_client.conformance import run
from tests.support.node_tools import NodeTools, node_tools

SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
COMMAND = f"{sys.executable} -m gateway.cli mcp-conformance-client"
REPO = Path(__file__).resolve().parents[2]
_RUN_SECONDS = 180


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


def test_every_client_scenario_of_the_suite_is_run_or_known_to_need_oauth(
    tools: NodeTools,
) -> None:
    listing = subprocess.run(
        [*tools.conformance, "list", "--client"],
        capture_output=True,
        text=True,
        check=True,
        timeout=_RUN_SECONDS,
    ).stdout
    listed = re.findall(r"^\s+- (\S+)", listing, re.MULTILINE)
    assert [name for name in listed if not name.startswith("auth/")] == SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_suites_client_scenario_passes(scenario: str, tools: NodeTools, tmp_path: Path) -> None:
    command = [
        *tools.conformance,
        "client",
        "--command",
        COMMAND,
        "--scenario",
        scenario,
        "--timeout",
        "120000",
        "--output-dir",
        str(tmp_path),
    ]
    finished = subprocess.run(
        command, check=False, cwd=REPO, capture_output=True, text=True, timeout=_RUN_SECONDS
    )
    report = "\n".join([finished.stdout[-4000:], finished.stderr[-4000:]])
    (checks_file,) = tmp_path.glob("*/checks.json")
    checks = json.loads(checks_file.read_text(encoding="utf-8"))
    statuses = {check["id"]: check["status"] for check in checks}
    assert "FAILURE" not in statuses.values(), report
    assert "SUCCESS" in statuses.values(), report
    assert finished.returncode == 0, report


def test_auth_scenarios_are_refused_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("http://127.0.0.1:9/mcp", "auth/metadata-default") == 1
    assert "OAuth for tool servers is not supported yet" in capsys.readouterr().err
