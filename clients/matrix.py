"""A cell of the matrix: one client doing one thing through the gateway, passed or failed."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.install import Installed
from clients.stack import Stack

CELL_SECONDS = 180  # one client's run; a hung client fails its cell, not the matrix


class CellFailed(Exception):
    """What the client did instead of what the cell expected."""


@dataclass(frozen=True)
class Context:
    stack: Stack
    installed: Installed
    work: Path  # a fresh folder for this cell: the client's HOME and working directory

    def run(
        self, command: Sequence[str], env: Mapping[str, str] | None = None, stdin: str = ""
    ) -> str:
        """The client's output; a non-zero exit or a timeout fails the cell."""
        environment = {
            "PATH": f"{self.installed.node_bin}:{os.environ['PATH']}",
            "HOME": str(self.work),
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        try:
            done = subprocess.run(
                list(command),
                cwd=self.work,
                env=environment,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=CELL_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CellFailed(
                f"no answer in {CELL_SECONDS}s: {exc.stdout!r} {exc.stderr!r}"
            ) from None
        output = done.stdout + done.stderr
        if done.returncode != 0:
            raise CellFailed(f"exit {done.returncode}: {output[-3000:]}")
        return output


def json_lines(output: str) -> list[dict[str, Any]]:
    """The JSON objects a client printed one a line (its other lines, warnings, are skipped)."""
    found = []
    for line in output.splitlines():
        if line.startswith("{"):
            with suppress(ValueError):
                found.append(json.loads(line))
    return found


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise CellFailed(what)


@dataclass(frozen=True)
class Cell:
    client: str  # the row group: "Claude Code", "Codex CLI", ...
    case: str  # what the cell does
    wire: str  # the gateway's API it goes through
    check: Callable[[Context], None]


@dataclass
class Result:
    cell: Cell
    passed: bool
    detail: str = ""
    exchanges: list[str] = field(default_factory=list)  # on failure: what was sent, answered
    # Requests the gateway refused (4xx/5xx) while the cell passed: what the client got over.
    refused: list[str] = field(default_factory=list)
