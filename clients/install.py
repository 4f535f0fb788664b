"""Installs the clients into a throw-away folder (``.clients/``) from the registries: the Node
ones from ``clients/npm``'s lock file with npm, the Python ones with uv into their own venv."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Installed:
    folder: Path

    @property
    def npm(self) -> Path:
        return self.folder / "npm"

    @property
    def node_bin(self) -> Path:
        """Node 22 (the registry's ``node`` package), first on the clients' PATH."""
        return self.npm / "node_modules" / "node" / "bin"

    def bin(self, name: str) -> Path:
        return self.npm / "node_modules" / ".bin" / name

    @property
    def python(self) -> Path:
        return self.folder / "venv" / "bin" / "python"

    def npm_version(self, package: str) -> str:
        manifest = self.npm / "node_modules" / package / "package.json"
        return str(json.loads(manifest.read_text())["version"])

    def pip_version(self, package: str) -> str:
        shown = subprocess.run(
            [
                str(ROOT / ".tools" / "bin" / "uv"),
                "pip",
                "show",
                "--python",
                str(self.python),
                package,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return next(
            line.split(":", 1)[1].strip()
            for line in shown.splitlines()
            if line.startswith("Version:")
        )


def install(folder: Path) -> Installed:
    installed = Installed(folder)
    installed.npm.mkdir(parents=True, exist_ok=True)
    lock = (HERE / "npm" / "package-lock.json").read_bytes()
    # Installed from this lock already: a stamp written once npm finished.
    stamp = installed.npm / ".installed-lock"
    if not stamp.exists() or stamp.read_bytes() != lock:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(HERE / "npm" / name, installed.npm / name)
        # Not `npm ci`: npm 11 refuses this lock for an optional dependency with no version
        # (napi-windows-process-start-time, under the inspector); `install` follows the lock.
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=installed.npm,
            check=True,
        )
        stamp.write_bytes(lock)
    uv = str(ROOT / ".tools" / "bin" / "uv")
    if not installed.python.exists():
        subprocess.run(
            [uv, "venv", "--quiet", "--python", "python3", str(folder / "venv")], check=True
        )
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(installed.python),
            "-r",
            str(HERE / "requirements.txt"),
        ],
        check=True,
    )
    return installed
