"""``llm-gateway``: serve, migrate, manage API keys, verify the audit chain.

The only place that reads the environment."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from accounts.keys import KeyStore
from db.audit_chain import verify
from db.engine import create_engine, session_factory
from gateway.database_check import unreachable_reason
from gateway.settings import ConfigError, Settings, load_settings

DEFAULT_CONFIG = Path("config/gateway.yaml")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llm-gateway", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    def with_config(sub: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sub.add_argument("--config", type=Path, default=None, help="YAML config file")
        return sub

    serve = with_config(commands.add_parser("serve", help="run the gateway"))
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help="worker processes on the one port (default: the CPUs the container may use; "
        "1: a single process)",
    )

    migrate = with_config(commands.add_parser("migrate", help="upgrade the database schema"))
    migrate.add_argument("--revision", default="head")
    down = with_config(commands.add_parser("downgrade", help="downgrade the database schema"))
    down.add_argument("--revision", required=True)

    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(
        dest="keys_command", required=True
    )
    create = with_config(keys.add_parser("create", help="create a key; prints it last"))
    create.add_argument("--name", required=True)
    create.add_argument("--role", action="append", dest="roles", required=True)
    create.add_argument(
        "--owner", default=None, help="the person or service it belongs to (default: --name)"
    )
    with_config(keys.add_parser("list", help="list keys (never their values)"))
    revoke = with_config(keys.add_parser("revoke", help="revoke a key by id"))
    revoke.add_argument("id", type=int)

    audit = commands.add_parser("audit", help="the audit log").add_subparsers(
        dest="audit_command", required=True
    )
    with_config(
        audit.add_parser(
            "verify",
            help="walk the audit hash chain; names the first broken link (exit 1 when broken)",
        )
    )

    conformance = commands.add_parser(
        "mcp-conformance-client",
        help="the MCP conformance suite's client under test (scenario: MCP_CONFORMANCE_SCENARIO)",
    )
    conformance.add_argument("url", help="the scenario server's URL (the suite passes it last)")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _settings(path: Path | None, command: str) -> Settings:
    if path is None and DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG
    if path is None and command == "serve":
        # Serving the built-in defaults (no models) is never what an operator meant.
        raise ConfigError(
            f"no config file: pass --config PATH ({DEFAULT_CONFIG} does not exist in {Path.cwd()})"
        )
    return load_settings(path)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "mcp-conformance-client":  # needs no config, database or settings
        from mcp_client.conformance import run

        scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
        return run(args.url, scenario, os.environ.get("MCP_CONFORMANCE_CONTEXT"))
    try:
        settings = _settings(args.config, args.command)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    problem = asyncio.run(unreachable_reason(settings.database_url, settings.database_pool))
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    return _run(settings, args)


def _run(settings: Settings, args: argparse.Namespace) -> int:
    if args.command == "serve":
        return _serve(settings, args.host, args.port, args.workers)
    if args.command in ("migrate", "downgrade"):
        return _migrate(settings, args)
    try:
        if args.command == "audit":
            return asyncio.run(_audit_verify(settings))
        return asyncio.run(_keys(settings, args))
    except DBAPIError as exc:
        print(
            f"database error: {exc.orig}. Is the schema migrated (`llm-gateway migrate`)?",
            file=sys.stderr,
        )
        return 1


def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    # Alembic is imported here only: a serving replica never needs it (db/schema.py).
    from migrations.commands import downgrade, upgrade

    if args.command == "migrate":
        upgrade(settings.database_url, args.revision)
    else:
        downgrade(settings.database_url, args.revision)
    print(f"database at {args.revision}")
    return 0


def _serve(settings: Settings, host: str, port: int, workers: int | None) -> int:
    from gateway.logging import configure_logging
    from server.app import check_environment
    from server.workers import available_cpus

    configure_logging(settings.log_level)
    try:
        check_environment(settings, os.environ)  # before any worker starts
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    workers = workers or available_cpus()
    if workers == 1:
        from server.app import create_app
        from server.serve import serve

        app = create_app(settings, os.environ)
        serve(app, app.state.drain, host, port)
        return 0
    metrics_dir, temporary = _multiprocess_metrics_dir()
    from server.app import create_app
    from server.serve import serve_workers

    if not settings.redis_url:
        print(
            f"{workers} workers without redis_url: each worker keeps its own rate-limit "
            "counters (as replicas would; budgets are shared through the database); "
            "set redis_url for exact rate limits",
            file=sys.stderr,
        )
    try:
        return serve_workers(
            lambda: create_app(settings, os.environ, metrics_dir=metrics_dir),
            host,
            port,
            workers,
            metrics_dir,
        )
    finally:
        if temporary:
            shutil.rmtree(metrics_dir, ignore_errors=True)


_METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"


def _multiprocess_metrics_dir() -> tuple[Path, bool]:
    """prometheus_client's multiprocess directory: the operator's (``PROMETHEUS_MULTIPROC_DIR``,
    e.g. an emptyDir) or a fresh temporary one; emptied, as files left by an earlier run would
    add their counts to this one's."""
    configured = os.environ.get(_METRICS_DIR)
    temporary = not configured
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink()
    else:
        path = Path(tempfile.mkdtemp(prefix="llm-gateway-metrics-"))
        os.environ[_METRICS_DIR] = str(path)
    # prometheus_client picks its value class at import; this import may have come first.
    from prometheus_client import values

    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    return path, temporary


async def _keys(settings: Settings, args: argparse.Namespace) -> int:
    engine = create_engine(settings.database_url, settings.database_pool)
    store = KeyStore(session_factory(engine), cache_seconds=0)
    try:
        if args.keys_command == "create":
            key, info = await store.create(args.name, args.roles, args.owner)
            roles = ", ".join(info.roles)
            print(f"created key {info.id} `{info.name}` of {info.owner} with roles {roles}")
            print("store it now: it is shown only once")
            print(key)
        elif args.keys_command == "list":
            for info in await store.list():
                state = "revoked" if info.revoked else "active"
                roles = ",".join(info.roles)
                print(f"{info.id}\t{info.name}\t{info.owner}\t{info.prefix}...\t{roles}\t{state}")
        elif not await store.revoke(args.id):
            print(f"no active key with id {args.id}", file=sys.stderr)
            return 1
    finally:
        await engine.dispose()
    return 0


async def _audit_verify(settings: Settings) -> int:
    engine = create_engine(settings.database_url, settings.database_pool)
    try:
        state = await verify(session_factory(engine))
    finally:
        await engine.dispose()
    print(f"sealed events: {state.sealed}; not sealed yet: {state.unsealed}")
    if not state.intact:
        print(
            f"BROKEN at seq {state.broken_at} (audit event id {state.broken_event_id}): "
            f"{state.problem}; the chain is intact up to seq {state.head_seq}"
        )
        return 1
    print(f"intact; head: seq {state.head_seq} hash {state.head_hash}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
