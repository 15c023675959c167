"""The app is private by default: ``streamlit run app.py`` with the project's own
``.streamlit/config.toml`` and no address flag listens on 127.0.0.1 only, and sends no usage
statistics."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.test_browser import free_port, wait_until_healthy

ROOT = Path(__file__).resolve().parents[1]


def listening_addresses(port: int) -> set[str]:
    """Local IPv4/IPv6 addresses with a socket listening on ``port`` (from /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                address, hex_port = fields[1].rsplit(":", 1)
                if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                    found.add(address)
    return found


def test_the_project_config_is_private_and_offline() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert config["browser"]["gatherUsageStats"] is False


@pytest.mark.slow
def test_the_default_server_listens_on_loopback_only() -> None:
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    command += ["--server.fileWatcherType", "none"]
    server = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", server)
        addresses = listening_addresses(port)
        # 0100007F is 127.0.0.1 in /proc's little-endian hex; nothing may listen on 0.0.0.0 or ::.
        assert addresses == {"0100007F"}, addresses
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
