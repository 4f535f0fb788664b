"""A real OpenID Connect provider on 127.0.0.1 for the admin SSO tests (oidc_provider.mjs, on
panva's oidc-provider under the Node 22 that tests/mcp_client/npm installs)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.support.node_tools import node_tools

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")


@dataclass
class OidcProvider:
    issuer: str
    _stdin: IO[str]
    _stdout: IO[str]

    def register(self, client_id: str, client_secret: str, redirect_uri: str) -> None:
        """Registers the gateway as the provider's one client, once the gateway's URL is known."""
        client = {"client_id": client_id, "client_secret": client_secret}
        self._stdin.write(json.dumps({**client, "redirect_uri": redirect_uri}) + "\n")
        self._stdin.flush()
        ready = self._stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"the OIDC provider did not start: {ready!r}")


@contextmanager
def oidc_provider(accounts: Mapping[str, Mapping[str, Any]]) -> Iterator[OidcProvider]:
    tools = node_tools()
    module = tools.modules / "oidc-provider" / "lib" / "index.js"
    environ = {
        **os.environ,
        "OIDC_ACCOUNTS": json.dumps(accounts),
        "OIDC_PROVIDER_MODULE": module.as_uri(),
    }
    process = subprocess.Popen(
        [str(tools.node), str(SCRIPT)],
        env=environ,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the library's development warnings
        text=True,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        first = process.stdout.readline()
        if not first:
            raise RuntimeError("the OIDC provider exited before listening")
        yield OidcProvider(json.loads(first)["issuer"], process.stdin, process.stdout)
    finally:
        process.kill()
        process.wait(timeout=10)
