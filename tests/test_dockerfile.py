"""Static checks of the Dockerfile (there is no Docker engine here to build it).

Parsed with dockerfile-parse; the checks are the properties the image promises: two stages on a
slim Python 3.11 base, dependencies from the lock, no build tooling and a non-root user in the
final stage, `llm-gateway serve` on 0.0.0.0 by default and `migrate` as its own command.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from dockerfile_parse import DockerfileParser

from server.cli import _parser

REPO = Path(__file__).resolve().parents[1]
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|make|build-essential|apt-get|apk|uv|pip)\b")


def _stages() -> list[list[dict[str, Any]]]:
    parser = DockerfileParser(str(REPO / "Dockerfile"))
    stages: list[list[dict[str, Any]]] = []
    for instruction in parser.structure:
        if instruction["instruction"] == "FROM":
            stages.append([])
        if stages and instruction["instruction"] != "COMMENT":
            stages[-1].append(instruction)
    return stages


def _values(stage: list[dict[str, Any]], name: str) -> list[str]:
    return [i["value"] for i in stage if i["instruction"] == name]


def test_two_stages_on_a_slim_python_311_base() -> None:
    parser = DockerfileParser(str(REPO / "Dockerfile"))
    assert parser.is_multistage
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", parser.baseimage)
    build, runtime = _stages()
    assert _values(build, "FROM")[0].endswith("AS build")
    assert _values(runtime, "FROM")[0].startswith("${PYTHON_IMAGE}")


def test_dependencies_come_from_the_lock_with_the_makefiles_uv() -> None:
    build, _ = _stages()
    syncs = [v for v in _values(build, "RUN") if v.startswith("uv sync")]
    assert syncs
    assert all("--frozen" in s and "--no-dev" in s for s in syncs)
    makefile_uv = re.search(r"^UV_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert makefile_uv is not None
    assert f"UV_VERSION={makefile_uv.group(1)}" in _values(build, "ARG")


def test_every_package_of_the_wheel_is_copied_into_the_build() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    build, _ = _stages()
    copied = {v.split()[0] for v in _values(build, "COPY")}
    assert set(packages) <= copied


def test_runtime_stage_has_no_build_tools_and_runs_as_non_root() -> None:
    _, runtime = _stages()
    for command in _values(runtime, "RUN"):
        assert not BUILD_TOOLS.search(command), command
    assert all(v.startswith("--from=build ") for v in _values(runtime, "COPY"))
    (user,) = _values(runtime, "USER")
    uid = user.split(":")[0]
    assert uid.isdigit()
    assert int(uid) >= 10000  # numeric, so Kubernetes' runAsNonRoot can verify it


def test_serve_is_the_default_command_and_migrate_a_separate_one() -> None:
    _, runtime = _stages()
    (entrypoint,) = _values(runtime, "ENTRYPOINT")
    (cmd,) = _values(runtime, "CMD")
    assert json.loads(entrypoint) == ["llm-gateway"]
    command = json.loads(cmd)
    assert command[0] == "serve"
    assert command[command.index("--host") + 1] == "0.0.0.0"
    # `serve` refuses to start without a config file; the chart mounts it here.
    assert command[command.index("--config") + 1] == "/etc/llm-gateway/gateway.yaml"
    assert _parser().parse_args(["migrate"]).command == "migrate"


def test_dockerignore_keeps_local_state_out_but_not_the_sources() -> None:
    ignored = {
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".tools", "tests", ".env"} <= ignored
    build, _ = _stages()
    for value in _values(build, "COPY"):
        for source in value.split()[:-1]:
            assert source not in ignored, source
