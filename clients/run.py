"""Runs the client matrix and writes docs/clients.md.

make clients                                  # install, run every cell, write the doc
.venv/bin/python -m clients.run --only claude # the cells whose client names this
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path

from clients.cells import (
    ai_sdk,
    claude_code,
    codex,
    governance,
    inspector,
    mcp_clients,
    python_clients,
)
from clients.install import ROOT, install
from clients.matrix import Cell, CellFailed, Context, Result
from clients.report import document, versions
from clients.stack import running
from gateway.logging import configure_logging

CELLS: list[Cell] = [
    *claude_code.CELLS,
    *codex.CELLS,
    *governance.CELLS,
    *python_clients.CELLS,
    *ai_sdk.CELLS,
    *mcp_clients.CELLS,
    *inspector.CELLS,
]


def run_cell(cell: Cell, context: Context) -> Result:
    context.stack.fresh()
    try:
        cell.check(context)
    except CellFailed as exc:
        return _failed(cell, context, str(exc))
    except Exception:
        return _failed(cell, context, traceback.format_exc(limit=3))
    refused = sorted(
        {
            f"{e.method} {e.path.split('?')[0]} -> {e.status}"
            for e in context.stack.recorder.exchanges
            if e.status >= 400
        }
    )
    return Result(cell, passed=True, refused=refused)


def _failed(cell: Cell, context: Context, detail: str) -> Result:
    exchanges = [exchange.shown() for exchange in context.stack.recorder.exchanges[-3:]]
    return Result(cell, passed=False, detail=detail, exchanges=exchanges)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="run the cells whose client contains this (no doc)")
    parser.add_argument("--folder", type=Path, default=ROOT / ".clients")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "clients.md")
    args = parser.parse_args(argv)
    for noisy in ("httpx", "mcp", "uvicorn"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    configure_logging("warning")  # the gateway's own request log, to stderr only when it warns
    installed = install(args.folder.resolve())
    cells = [c for c in CELLS if args.only is None or args.only.lower() in c.client.lower()]
    results = []
    with tempfile.TemporaryDirectory() as folder, running(Path(folder)) as stack:
        for number, cell in enumerate(cells):
            work = Path(folder) / f"cell-{number}"
            work.mkdir()
            result = run_cell(cell, Context(stack, installed, work))
            results.append(result)
            print(f"{'PASS' if result.passed else 'FAIL'}  {cell.client}: {cell.case}", flush=True)
            if not result.passed:
                print(result.detail, *result.exchanges, sep="\n", flush=True)
    if args.only is None:
        args.output.write_text(document(results, versions(installed)))
    return 0 if all(result.passed for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
