"""Starting and stopping the servers under test, each on 127.0.0.1 with its own port."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml

from bench.upstream import write_nginx_config

# LiteLLM pinned like the gateway's own dependency: never 1.82.7 / 1.82.8 (compromised releases).
LITELLM_VERSION = "1.102.4"
LITELLM_MASTER_KEY = "sk-bench-master-key"
MODELS = {"bench": "whole", "bench-stream": "stream", "bench-hold": "hold"}
ROOT = Path(__file__).resolve().parent.parent


def wait_until_up(url: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server behind {url} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not come up in {timeout} s")


@contextmanager
def running(
    command: Sequence[str], log: Path, health_url: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            wait_until_up(health_url, process)
            yield process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 20 s."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def nginx(workdir: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    config = write_nginx_config(workdir, port)
    command = ["nginx", "-c", str(config), "-e", str(workdir / "nginx-error.log")]
    health = f"http://127.0.0.1:{port}/whole/v1/chat/completions"
    with running(command, workdir / "nginx.log", health) as process:
        yield process


def gateway_config(workdir: Path, upstream: str) -> Path:
    models = [
        {
            "name": name,
            "provider": "openai",
            "model": "bench-upstream",
            "base_url": f"{upstream}/{path}/v1",
            "api_key_env": "BENCH_UPSTREAM_KEY",
        }
        for name, path in MODELS.items()
    ]
    config = {
        "database_url": f"sqlite+aiosqlite:///{workdir}/gateway.db",
        "log_level": "info",
        "models": models,
    }
    path = workdir / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _gateway_bin() -> str:
    return str(Path(sys.executable).with_name("llm-gateway"))


@contextmanager
def gateway(workdir: Path, port: int, upstream: str, workers: int = 1) -> Iterator[tuple[int, str]]:
    """Our gateway as in production: auth, usage recording and one JSON log line a request."""
    config = gateway_config(workdir, upstream)
    env = {"BENCH_UPSTREAM_KEY": "sk-upstream"}
    with serve_gateway(workdir, port, config, env, workers) as started:
        yield started


@contextmanager
def serve_gateway(
    workdir: Path,
    port: int,
    config_path: Path,
    extra_env: dict[str, str],
    workers: int = 1,
    *,
    under: Sequence[str] = (),
) -> Iterator[tuple[int, str]]:
    """Migrates, makes a `user` key and serves ``config_path`` with ``workers`` processes, run
    ``under`` a tool (a profiler) when given; yields the (supervisor's) pid and the key."""
    config = str(config_path)
    env = {**os.environ, **extra_env}
    cli = _gateway_bin()
    subprocess.run([cli, "migrate", "--config", config], check=True, capture_output=True, env=env)
    created = subprocess.run(
        [cli, "keys", "create", "--name", "bench", "--role", "user", "--config", config],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    key = created.stdout.strip().splitlines()[-1]
    command = [*under, cli, "serve", "--config", config, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--workers", str(workers)]
    health = f"http://127.0.0.1:{port}/healthz"
    with running(command, workdir / f"gateway-{port}.log", health, env) as process:
        yield process.pid, key


def litellm_venv(venv: Path) -> Path:
    """LiteLLM's proxy in its own virtual environment, so it never mixes with ours."""
    python = venv / "bin" / "python"
    marker = venv / f".litellm-{LITELLM_VERSION}"
    if marker.exists():
        return venv
    uv = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), f"litellm[proxy]=={LITELLM_VERSION}"],
        check=True,
    )
    marker.touch()
    return venv


def _litellm_config(workdir: Path, upstream: str) -> Path:
    models = [
        {
            "model_name": name,
            "litellm_params": {
                "model": "openai/bench-upstream",
                "api_base": f"{upstream}/{path}/v1",
                "api_key": "sk-upstream",
            },
        }
        for name, path in MODELS.items()
    ]
    config = {
        "model_list": models,
        "litellm_settings": {"num_retries": 0, "request_timeout": 600, "telemetry": False},
        "router_settings": {"num_retries": 0},
        "general_settings": {"master_key": LITELLM_MASTER_KEY},
    }
    path = workdir / "litellm.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def litellm(workdir: Path, port: int, upstream: str, venv: Path) -> Iterator[int]:
    """LiteLLM's proxy with no database and retries off, one worker like our gateway."""
    config = _litellm_config(workdir, upstream)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DATABASE_URL", "LITELLM_", "OPENAI_"))
    }
    env |= {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}
    command = [
        str(venv / "bin" / "litellm"),
        *("--config", str(config), "--host", "127.0.0.1", "--port", str(port)),
        *("--num_workers", "1"),
    ]
    health = f"http://127.0.0.1:{port}/health/liveliness"
    with running(command, workdir / "litellm.log", health, env) as process:
        yield process.pid


def litellm_installed_version(venv: Path) -> str:
    python = str(venv / "bin" / "python")
    script = "import importlib.metadata as m; print(m.version('litellm'))"
    return subprocess.run(
        [python, "-c", script], check=True, capture_output=True, text=True
    ).stdout.strip()
