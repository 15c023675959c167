"""A Ray ``--address`` whose port takes no connection is refused in one line within seconds (Ray
itself retried for minutes), without the address's credentials and without starting Ray."""

from __future__ import annotations

import re
import socket
import time

import pytest

from cli.main import main
from engine.runs.ray_executor import check_reachable
from engine.runs.store import RunStore

PASSWORD = "pw-SECRET-31"


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def no_ray_start(monkeypatch) -> None:
    ray = pytest.importorskip("ray")

    def refuse(*args, **kwargs):
        raise AssertionError("ray.init was called")

    monkeypatch.setattr(ray, "init", refuse)


@pytest.mark.parametrize("form", ["{host}:{port}", "ray://{host}:{port}", "ray://alice:" + PASSWORD + "@{host}:{port}"])
def test_an_unreachable_address_is_refused_at_once(form, closed_port) -> None:
    address = form.format(host="127.0.0.1", port=closed_port)
    start = time.monotonic()
    with pytest.raises(ValueError, match="cannot reach ray address") as caught:
        check_reachable(address)
    assert time.monotonic() - start < 10
    assert PASSWORD not in str(caught.value) and f"127.0.0.1:{closed_port} within 10 s" in str(caught.value)


@pytest.mark.parametrize("address", ["auto", "local"])  # left to Ray, as before
def test_auto_and_local_are_left_to_ray(address) -> None:
    check_reachable(address)


def test_a_ray_client_address_without_a_port_is_checked_on_10001() -> None:
    """``ray://host`` passed unchecked: a run was written, then failed after Ray's 30 s timeout."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 10001)) == 0:
            pytest.skip("something listens on 127.0.0.1:10001 here")
    with pytest.raises(ValueError, match=r"cannot reach ray address ray://127.0.0.1 within 10 s"):
        check_reachable("ray://127.0.0.1")


@pytest.mark.parametrize(
    "address, message",
    [
        ("http://head:8265", "give host:port or ray://host[:port]"),
        ("127.0.0.1", "has no port: give host:port"),
        ("ray://:10001", "names no host"),
    ],
)
def test_an_address_of_another_form_is_refused(address, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_reachable(address)


def test_run_with_an_unreachable_address_fails_in_one_line(closed_port, no_ray_start, toy_bert_folder, tmp_path,
                                                          capsys) -> None:  # fmt: skip
    address = f"ray://alice:{PASSWORD}@127.0.0.1:{closed_port}"
    args = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "1",
            "--methods", "random", "--metrics", "deletion", "--executor", "ray", "--address", address]  # fmt: skip
    assert main([*args, "--results-dir", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (  # one error line, checked before the run is written: no failed run is left behind
        f"error: cannot reach ray address ray://***@127.0.0.1:{closed_port} within 10 s: Connection refused\n"
    )
    assert RunStore(tmp_path, read_only=True).infos() == []


def test_rays_client_is_installed() -> None:
    """A ``ray://`` address needs Ray's client (``ray[client]``, with grpcio): with the plain
    package no cluster address could ever connect."""
    import grpc
    from ray.util.client import worker

    assert grpc.__version__ and worker.Worker


def test_a_serial_runs_resume_does_not_try_the_environments_cluster(closed_port, no_ray_start, toy_bert_folder,
                                                                   tmp_path, capsys, monkeypatch) -> None:  # fmt: skip
    """``run --resume`` of a serial run checked ``$RAY_ADDRESS`` (the run's executor was not known
    yet), so an unreachable cluster refused a resume that runs in this process."""
    args = ["run", "--model", toy_bert_folder, "--dataset", "examples", "--split", "sst2", "--limit", "1",
            "--methods", "random", "--metrics", "deletion", "--executor", "serial"]  # fmt: skip
    assert main([*args, "--results-dir", str(tmp_path), "--quiet"]) == 0
    [info] = RunStore(tmp_path, read_only=True).infos()
    capsys.readouterr()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{closed_port}")
    assert main(["run", "--resume", info.run_id, "--results-dir", str(tmp_path), "--quiet"]) == 0
    assert "cannot reach" not in capsys.readouterr().err
    assert main(["run", "--resume", info.run_id, "--executor", "ray", "--results-dir", str(tmp_path)]) == 2
    assert "cannot reach ray address" in capsys.readouterr().err
