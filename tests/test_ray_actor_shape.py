"""How many model actors a Ray run starts and what each asks for (``actor_shape``), from the node
list ``ray.nodes()`` gives: what one actor asks for must fit on one node, or Ray waits for ever."""

from __future__ import annotations

import pytest

from engine.runs.ray_executor import ActorShape, actor_shape


def node(cpus: float, gpus: float = 0, alive: bool = True) -> dict:
    resources = {"CPU": cpus, "memory": 1e9} | ({"GPU": gpus} if gpus else {})
    return {"Alive": alive, "Resources": resources}


@pytest.mark.parametrize(
    ("nodes", "actors", "units", "shape"),
    [
        # one machine, CPUs only: one single-threaded actor per CPU, never more than the units
        ([node(16)], None, 100, ActorShape(16, 1, 0, None)),
        ([node(16)], 4, 100, ActorShape(4, 4, 0, None)),
        ([node(16)], 32, 100, ActorShape(16, 1, 0, None)),
        ([node(16)], None, 3, ActorShape(3, 1, 0, None)),
        # three 16-CPU nodes and 2 actors: 24 CPUs each would fit on no node; 16 does
        ([node(16), node(16), node(16)], 2, 100, ActorShape(2, 16, 0, None)),
        # a 4-CPU and a 2-CPU node, 2 actors: 3 CPUs each fit one actor only (the second waited for ever)
        ([node(4), node(2)], 2, 100, ActorShape(2, 2, 0, None)),
        ([node(4), node(2)], 3, 100, ActorShape(3, 2, 0, None)),
        # a dead node's CPUs are not counted
        ([node(8), node(64, alive=False)], None, 100, ActorShape(8, 1, 0, None)),
        # GPUs: one actor per GPU, with the CPUs its node has per GPU
        ([node(16, 2)], None, 100, ActorShape(2, 8, 2, "cuda")),
        ([node(16, 2)], 1, 100, ActorShape(1, 8, 2, "cuda")),
        # 8 GPUs on an 8-CPU node beside a 64-CPU node: 72 // 8 = 9 CPUs would fit beside no GPU
        ([node(8, 8), node(64)], None, 100, ActorShape(8, 1, 8, "cuda")),
        ([node(8, 1), node(8, 1)], None, 1, ActorShape(1, 8, 2, "cuda")),
    ],
)
def test_actors_ask_for_what_one_node_has(nodes, actors, units, shape) -> None:
    assert actor_shape(nodes, actors, units) == shape


def test_the_local_rays_own_node_list_is_read() -> None:
    """The embedded local Ray's ``ray.nodes()`` has the fields ``actor_shape`` reads."""
    ray = pytest.importorskip("ray")
    ray.init(include_dashboard=False, num_cpus=2, _node_ip_address="127.0.0.1", logging_level="ERROR")
    try:
        assert actor_shape(ray.nodes(), None, 10) == ActorShape(2, 1, 0, None)
    finally:
        ray.shutdown()
