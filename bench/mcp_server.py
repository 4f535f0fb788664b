"""PyPI's mcp-server-time served over streamable HTTP on 127.0.0.1, for ``bench/mcp.py``.

Its own command speaks only stdio; the package builds its tools with the SDK's ``MCPServer``, so
this serves the very same server (same tools, same code) under uvicorn, as a separate process
like any remote tool server would be, so it never shares the client's event loop or GIL.

    .venv/bin/python -m bench.mcp_server --port 18083     # http://127.0.0.1:18083/mcp
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import uvicorn
from mcp_server_time.server import create_server  # type: ignore[import-untyped]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.mcp_server", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    app = create_server("UTC").streamable_http_app()
    # The SDK sets the root logger to INFO, which logs every session's start and end.
    logging.getLogger().setLevel(logging.WARNING)
    # uvicorn's defaults pick uvloop and httptools, as `llm-gateway serve` does.
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
