"""Run an ASGI app on a real 127.0.0.1 socket in a background thread."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()


@contextmanager
def serve(app: ASGIApp, startup_timeout: float = 90.0) -> Iterator[str]:
    """Yields the base URL once the app has finished its startup."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    # As `serve` runs the gateway: the app alone decides whose forwarded headers it believes.
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="auto", proxy_headers=False
    )
    server = _Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not server.ready.wait(startup_timeout) or not server.started:
            raise RuntimeError("the test server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        # Shutdown runs the app's lifespan end (the usage flush, among others): a test that
        # reads what it wrote must not go on before it finished, however loaded the machine.
        thread.join(startup_timeout)
        sock.close()
        if thread.is_alive():
            raise RuntimeError("the test server did not stop")
