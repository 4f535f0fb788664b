"""Node programs from the npm registry, installed from tests/mcp_client/npm's lock file.

The official MCP conformance suite needs Node 22; the machine's Node may be older, so the `node`
npm package (which ships the runtime) is installed beside it and runs both. ``npm ci`` runs when
the installed tree is missing or older than the lock file.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

NPM_DIR = Path(__file__).resolve().parents[1] / "mcp_client" / "npm"
_INSTALL_SECONDS = 600


@dataclass(frozen=True)
class NodeTools:
    node: Path  # Node 22
    modules: Path

    @property
    def conformance(self) -> list[str]:
        return [str(self.node), str(self._main("@modelcontextprotocol/conformance"))]

    @property
    def server_everything(self) -> list[str]:
        return [str(self.node), str(self._main("@modelcontextprotocol/server-everything"))]

    def _main(self, package: str) -> Path:
        return self.modules / package / "dist" / "index.js"


def node_tools() -> NodeTools:
    modules = NPM_DIR / "node_modules"
    installed = modules / ".package-lock.json"  # npm writes it last, from the lock it installed
    lock = NPM_DIR / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is needed to install tests/mcp_client/npm")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NPM_DIR,
            check=True,
            timeout=_INSTALL_SECONDS,
        )
    node = modules / ".bin" / "node"
    if not node.exists():
        raise RuntimeError(f"{node} is missing: the `node` package's install script did not run")
    return NodeTools(node=node, modules=modules)
