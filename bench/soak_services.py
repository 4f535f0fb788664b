"""The soak's own PostgreSQL and Redis, on free loopback ports, for it alone to break.

The machine's shared servers (127.0.0.1:5432 and :6379) carry other people's test runs: the soak
never touches them. Its PostgreSQL is a fresh cluster (``initdb`` into a temporary directory,
``pg_ctl`` on a free port, its socket in that directory too); its Redis a ``redis-server`` child
process with no persistence. Both are removed on exit, whatever happened.

``initdb`` and ``pg_ctl`` refuse to run as root: as root they run as the ``postgres`` OS user
(``runuser``), which owns the cluster's directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg

from tests.support.mcp_servers import free_port

PG_BIN = Path("/usr/local/bin")
REDIS_SERVER = "/usr/bin/redis-server"
SHARED_PORTS = (5432, 6379)  # the machine's own servers: never the soak's
DATABASE = "soak"


def _port() -> int:
    while (port := free_port()) in SHARED_PORTS:
        pass
    return port


def _wait_for(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up within {timeout:g} s")


class Postgres:
    """A PostgreSQL cluster of the soak's own: trust on 127.0.0.1, a free port."""

    def __init__(self) -> None:
        self.port = _port()
        self.root = Path(tempfile.mkdtemp(prefix="soak-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.root)
                raise RuntimeError(
                    "the soak starts its own PostgreSQL, and initdb refuses to run as root: "
                    "it needs a `postgres` OS user to run it as (none exists here), or run the "
                    "soak as an ordinary user"
                ) from None
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _pg_ctl(self, *arguments: str) -> None:
        command = [*self.as_user, str(PG_BIN / "pg_ctl"), "-D", str(self.data), *arguments]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=120)

    def start(self) -> None:
        initdb = [*self.as_user, str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres"]
        initdb += ["--auth=trust", "-E", "UTF8", "--no-instructions"]
        subprocess.run(initdb, check=True, stdout=subprocess.DEVNULL, timeout=300)
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        # the replicas' pools (two replicas, their workers, the soak's own checks) fit easily
        options += " -c max_connections=200"
        self._pg_ctl("-l", str(self.log), "-o", options, "-w", "-t", "120", "start")
        asyncio.run(self._create_database())

    async def _create_database(self) -> None:
        dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        connection = await asyncpg.connect(dsn, timeout=10)
        try:
            await connection.execute(f'CREATE DATABASE "{DATABASE}"')
        finally:
            await connection.close()

    def restart(self, mode: str) -> None:
        """``fast``: a clean shutdown (sessions ended, checkpoint); ``immediate``: as a crash
        would (processes killed, WAL replayed on start)."""
        self._pg_ctl("-l", str(self.log), "-m", mode, "-w", "-t", "120", "restart")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError):
                self._pg_ctl("-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class Redis:
    """A redis-server child of the soak's, on a free port, with no persistence at all."""

    def __init__(self, log: Path) -> None:
        self.port = _port()
        self.root = Path(tempfile.mkdtemp(prefix="soak-redis-"))
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(self.port)]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.root)]
        command += ["--daemonize", "no", "--logfile", str(self.log)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _wait_for(self._answers, f"redis-server on port {self.port}", 30)

    def _answers(self) -> bool:
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock,
        ):
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        """As a shutdown (SIGTERM), nothing saved."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def own_services(workdir: Path) -> Iterator[tuple[Postgres, Redis]]:
    """The soak's PostgreSQL and Redis, started, and removed again however the soak ends."""
    postgres = Postgres()
    redis = Redis(workdir / "redis.log")
    try:
        postgres.start()
        redis.start()
        yield postgres, redis
    finally:
        try:
            redis.remove()
        finally:
            if postgres.log.exists():
                with contextlib.suppress(OSError):
                    shutil.copy(postgres.log, workdir / "postgres.log")
            postgres.remove()
