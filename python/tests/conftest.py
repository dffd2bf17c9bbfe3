"""Shared fixtures: the embodia CLI (EMBODIA_BIN, default target/release/embodia) for the
checks against it, and a scratch directory per test."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def embodia_bin() -> str:
    path = os.environ.get("EMBODIA_BIN", str(ROOT / "target" / "release" / "embodia"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the embodia CLI is needed at {path} (cargo build --release, or set EMBODIA_BIN)")
    return path


def run_cli(embodia_bin: str, *args: str) -> str:
    """Runs the CLI; fails the test with its stderr if it fails."""
    done = subprocess.run([embodia_bin, *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"embodia {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout
