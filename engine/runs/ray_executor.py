"""The Ray executor: a run's units on Ray (Moritz et al., 2018, "Ray: A Distributed Framework for
Emerging AI Applications", arXiv:1712.05889) through one model actor per GPU (``num_gpus=1``) when
the cluster has GPUs, else ``actors`` CPU actors that share the CPUs. By default it starts an
embedded local Ray (dashboard off, bound to 127.0.0.1, shut down at the end); ``address`` (or
``$RAY_ADDRESS``) joins an existing cluster instead, shipping this project's code with the job
(``runtime_env`` ``working_dir``; the cluster's Python needs requirements.txt installed); an
address whose port takes no connection within ``CONNECT_TIMEOUT_S`` is refused at once
(``check_reachable``). Each actor loads the model once; the driver commits each unit as it comes
back. While units run, each actor sends its progress inside its unit, at most once a second, to a
Ray queue that the driver reads every ``POLL_S`` seconds (``within``: the run's live file).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.types import ProgressFn
from engine.runs.spec import RunSpec
from engine.runs.worker import Commit, Unit, UnitWorker, Within

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONNECT_TIMEOUT_S = 10.0  # a cluster address that takes no TCP connection in this time is refused
POLL_S = 1.0  # the driver reads the actors' progress this often while it waits for a unit
REPORT_EVERY_S = 1.0  # an actor sends its unit's progress at most this often


def run_ray(
    spec: RunSpec,
    units: Sequence[Unit],
    commit: Commit,
    ready: Callable[[str], None] | None = None,
    *,
    within: Within | None = None,
    address: str | None = None,
    actors: int | None = None,
    results: Path | None = None,
) -> dict[str, Any]:
    """The units on Ray actors (see the module docstring); returns what was used: ``actors``,
    ``gpus``, ``startup_s`` (connecting or starting Ray and loading the models). ``ready`` gets
    one line once the actors hold the model (the run's tracker: the bar keeps the rows already
    stored); ``within(n_rows, unit)`` gives the driver's callback for a unit under way. AML's
    pre-trained models are kept under the results folder ``results`` on a local cluster (a remote
    node keeps them in its own default folder: the driver's path need not exist there)."""
    import ray
    from ray.util import ActorPool
    from ray.util.queue import Queue

    start = time.perf_counter()
    started_here = not ray.is_initialized()
    address = address or os.environ.get("RAY_ADDRESS")
    if started_here:
        _ray_init(address)
    kept = results if not address else None
    try:
        shape = actor_shape(ray.nodes(), actors, len(units))
        remote = ray.remote(UnitWorker)
        options = {"num_cpus": shape.cpus_each, "num_gpus": 1 if shape.gpus else 0}
        workers = [
            remote.options(**options).remote(spec, shape.device, shape.cpus_each, kept) for _ in range(shape.actors)
        ]
        queue = Queue(actor_options={"num_cpus": 0})  # started while the models load; fits beside them
        try:
            ray.get([w.batch_size.remote() for w in workers])  # type: ignore[attr-defined]  # wait for the models
            startup_s = time.perf_counter() - start
            if ready is not None:
                ready(f"{shape.actors} actor(s) ready after {startup_s:.1f} s")
            _run_pool(ActorPool(workers), units, commit, queue, within)
        finally:
            queue.shutdown()
        return {"actors": shape.actors, "gpus": shape.gpus, "startup_s": startup_s}
    finally:
        if started_here:
            ray.shutdown()


def _run_pool(pool, units: Sequence[Unit], commit: Commit, queue, within: Within | None) -> None:
    """Every unit on the pool's actors, committing each as it comes back, with the actors'
    progress reports (from ``queue``) passed to ``within`` meanwhile."""
    n_rows = {unit: len(rows) for unit, rows, _ in units}
    for unit in units:
        pool.submit(lambda worker, u: worker.run.remote(*u, QueueProgress(queue, u[0], REPORT_EVERY_S)), unit)

    def progress_of(unit: int) -> ProgressFn | None:
        return within(n_rows[unit], unit) if within is not None else None

    while pool.has_next():
        try:
            stats, table = pool.get_next_unordered(timeout=POLL_S)
        except TimeoutError:
            forward_reports(queue, progress_of)
            continue
        forward_reports(queue, progress_of)  # the unit's last reports before its commit
        commit(stats, table)


def forward_reports(queue, progress_of: Callable[[int], ProgressFn | None]) -> None:
    """Every (unit, fraction, message) the actors or tasks put in ``queue`` (``QueueProgress``)
    since the last call, to ``progress_of(unit)``, the unit's progress callback (None: dropped)."""
    for unit, fraction, message in queue.get_nowait_batch(queue.qsize()):
        if (progress := progress_of(unit)) is not None:
            progress(fraction, message)


class QueueProgress:
    """A unit's progress callback inside an actor or task: (unit, fraction, message) into the
    run's queue, at most once every ``every_s`` seconds."""

    def __init__(self, queue, unit: int, every_s: float) -> None:
        self.queue, self.unit, self.every_s, self.last = queue, unit, every_s, 0.0

    def __call__(self, fraction: float, message: str) -> None:
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self.queue.put_nowait((self.unit, fraction, message))


@dataclass(frozen=True)
class ActorShape:
    actors: int
    cpus_each: int  # the CPUs each actor asks Ray for, and its torch threads
    gpus: int  # the cluster's GPUs (each actor then takes one)
    device: str | None  # "cuda", or None for the CPU


def actor_shape(nodes: Sequence[dict[str, Any]], actors: int | None, n_units: int) -> ActorShape:
    """How many model actors a run gets and what each asks for, from ``ray.nodes()``: one per GPU
    when the cluster has GPUs (at most ``actors``), else ``actors`` CPU actors (default one per
    CPU) sharing the CPUs, never more actors than units. What the actors ask for must fit on the
    nodes, or Ray waits for ever: a GPU actor gets the CPUs its GPU's node has per GPU, CPU actors
    as many CPUs each as lets every one of them find a node with room."""
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive", True)]
    cpus = max(1, int(sum(node.get("CPU", 0) for node in alive)))
    gpus = int(sum(node.get("GPU", 0) for node in alive))
    if gpus:
        n_actors = gpus if actors is None else min(actors, gpus)
        per_gpu = min(int(node.get("CPU", 0) // node["GPU"]) for node in alive if node.get("GPU", 0) >= 1)
        return ActorShape(min(n_actors, max(1, n_units)), max(1, min(cpus // n_actors, per_gpu)), gpus, "cuda")
    # One single-threaded actor per CPU by default: on a shared CPU, torch's threads spin-wait at
    # each barrier and two of them in one process ran 5-20x slower than one (BENCHMARKS.md,
    # "Dataset runs").
    n_actors = max(1, min(actors or cpus, cpus))
    each = max(1, cpus // n_actors)
    while each > 1 and sum(int(node.get("CPU", 0) // each) for node in alive) < n_actors:
        each -= 1  # every actor must find a node with room: 3 CPUs each fit 2 actors on 4 + 2 nodes only once
    return ActorShape(min(n_actors, max(1, n_units)), each, 0, None)


def _ray_init(address: str | None) -> None:
    import logging

    if address:
        check_reachable(address)
    import ray

    if address:
        excludes = [".git", ".venv", "results", "tests", "**/__pycache__"]
        ray.init(
            address=address,
            runtime_env={"working_dir": str(PROJECT_ROOT), "excludes": excludes},
            logging_level=logging.WARNING,
            log_to_driver=True,
        )
        return
    # Ray's workers get the driver's sys.path, so the project imports there as here; Ray counts
    # the CPUs itself, within a container's cgroup limits (os.cpu_count() counts the host's).
    ray.init(
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level=logging.WARNING,
        log_to_driver=True,
    )


RAY_CLIENT_PORT = 10001  # a ray:// address's port where it names none (Ray's own default)


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a cluster ``address`` (``host:port``, ``ray://[user:password@]host[:port]``, the Ray
    client's port 10001 by default) whose port takes no TCP connection within ``timeout_s`` (Ray
    itself retries for minutes), or of another form, in one line without the address's
    credentials. ``auto`` and ``local`` are left to Ray."""
    import socket
    from urllib.parse import urlsplit

    from engine.runs.secrets import redact

    if address in ("auto", "local"):
        return
    shown = redact(address, address)
    parts = urlsplit(address if "://" in address else f"//{address}")
    if parts.scheme not in ("", "ray"):
        raise ValueError(f"ray address {shown}: give host:port or ray://host[:port] (or auto, local)")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ValueError(f"ray address {shown} has no valid port") from None
    if host is None:
        raise ValueError(f"ray address {shown} names no host: give host:port or ray://host[:port]")
    if port is None and parts.scheme != "ray":
        raise ValueError(f"ray address {shown} has no port: give host:port (the head's GCS port, 6379 by default)")
    port = port or RAY_CLIENT_PORT
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise ValueError(
            f"cannot reach ray address {redact(address, address)} within {timeout_s:g} s: {reason}"
        ) from None
