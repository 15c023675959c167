"""Benchmark: time each method per example and compare it with the forward-pass floor.

The floor of a method on an example is the passes it needs divided by the model's best
throughput measured here at that example's sequence length: forward-only passes at the best
forward rate, forward+backward passes at the best forward+backward rate, masked-LM passes at
the masked LM's best rate. Passes of an explainer's own encoder of the classifier's size (AML's
attribution model: ``encoder_forward_passes`` / ``encoder_backward_passes`` in its extras) count
as the classifier's. The ratio measured / floor says how close the engine gets. With
``group`` > 1 the examples are explained that many at a time, as a dataset run does, which is
how a one-pass method can approach a floor measured on batches.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import explainers
from core.classifier import Classifier
from core.devices import synchronize
from core.masked_lm import MaskedLM
from core.padding import uses_token_types
from core.types import Example
from engine.evaluate import length_groups
from engine.resources import Resources

FORWARD_BATCHES = (1, 8, 32, 64, 128)
BACKWARD_BATCHES = (1, 8, 32, 50)


@dataclass(frozen=True)
class Throughput:
    forward: float  # sequences per second
    forward_backward: float
    mlm_forward: float | None
    single_forward_s: float  # latency of one pass at batch size 1: what a one-pass method cannot beat
    single_forward_backward_s: float


def _best_rate(run: Callable[[int], None], batches: tuple[int, ...], repeats: int = 2) -> float:
    best = 0.0
    for batch in batches:
        run(batch)  # warm-up
        for _ in range(repeats):
            start = time.perf_counter()
            run(batch)
            best = max(best, batch / (time.perf_counter() - start))
    return best


def _batch_seconds(run: Callable[[int], None], batch: int = 1, repeats: int = 3) -> float:
    """Best time of one call at this batch size, after a warm-up."""
    run(batch)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(batch)
        timings.append(time.perf_counter() - start)
    return min(timings)


def _runners(clf: Classifier, example: Example) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """Forward and forward+backward passes on ``batch`` copies of the example (no padding)."""
    encoded = clf.encode(example)
    ids = torch.tensor([encoded.input_ids], device=clf.device)
    types = torch.tensor([encoded.token_type_ids], device=clf.device)

    def forward(batch: int) -> None:
        inputs = {"input_ids": ids.expand(batch, -1), "attention_mask": torch.ones_like(ids).expand(batch, -1)}
        if uses_token_types(clf.model):
            inputs["token_type_ids"] = types.expand(batch, -1)
        with torch.inference_mode(), clf.scorer_autocast():  # the scorer's passes, as the methods run them
            clf.logits_of(clf.logits_model, inputs)
        synchronize(clf.device)

    def forward_backward(batch: int) -> None:
        embeds = clf.input_embeddings(ids).detach().expand(batch, -1, -1).clone().requires_grad_(True)
        with torch.enable_grad():
            logits = clf.forward_embeds(embeds, encoded.variant)
            torch.autograd.grad(logits[:, 0].sum(), embeds)
        synchronize(clf.device)

    return forward, forward_backward


def step_seconds(clf: Classifier, example: Example, batch: int = 2) -> float:
    """One forward+backward pass on ``batch`` copies of the example: the unit step of the mask
    optimisers (MaRC and fAML score a masked and a complement input per step)."""
    return _batch_seconds(_runners(clf, example)[1], batch)


def forward_rate(clf: Classifier, example: Example, batch: int = 32) -> float:
    """Forward passes per second on ``batch`` copies of the example: a quick calibration (three
    batches) for estimating the perturbation methods' run time before they start."""
    return batch / _batch_seconds(_runners(clf, example)[0], batch, repeats=2)


def measure_throughput(clf: Classifier, example: Example, mlm: MaskedLM | None = None) -> Throughput:
    """Best sequences/s of the model on batches of copies of this example (no padding)."""
    forward, forward_backward = _runners(clf, example)

    mlm_rate = None
    if mlm is not None:
        positions = list(range(len(example.words)))

        def mlm_forward(batch: int) -> None:
            mlm.fill_words(example.segments, (positions * batch)[:batch], k=10, batch_size=batch)

        mlm_rate = _best_rate(mlm_forward, (8, 32, 64))
    return Throughput(
        _best_rate(forward, FORWARD_BATCHES),
        _best_rate(forward_backward, BACKWARD_BATCHES),
        mlm_rate,
        _batch_seconds(forward),
        _batch_seconds(forward_backward),
    )


def floor_seconds(forward: int, backward: int, mlm_passes: int, rate: Throughput) -> float:
    seconds = (forward - backward) / rate.forward + backward / rate.forward_backward
    if mlm_passes and rate.mlm_forward:
        seconds += mlm_passes / rate.mlm_forward
    return seconds


def run_bench(
    clf: Classifier,
    examples: list[Example],
    methods: list[str],
    mlm: MaskedLM | None = None,
    progress: Callable[[str], None] | None = None,
    resources: Resources | None = None,
    group: int = 1,
) -> dict:
    """Per method: time per example (median, min, max), passes, model calls (batches sent to the
    classifier; a GPU pays a latency per call), floor and ratio to the floor.

    ``group`` examples of similar length are explained together, as a dataset slice does
    (``engine.evaluate.length_groups``; ``explainers.run_explainers``:
    a method with a batch function shares one padded forward/backward or one pooled scorer call
    among them, and each example's time is the batch's divided among them); 1 explains one at a
    time.
    Each method first runs once, untimed, on the first group (``warm_up_s``: its seconds), so
    that what it pays once per process (AML's pre-training, the eager-attention view) is not
    charged to the examples, as it is not in a dataset run of hundreds of examples."""
    rows: dict[str, dict[str, list[float]]] = {
        m: {"time": [], "forward": [], "backward": [], "mlm": [], "floor": []} for m in methods
    }
    calls: dict[str, int] = {}  # batches each method sent to the classifier, over every example
    fitted = [clf.fit_example(example)[0] for example in examples]
    tokens = [len(clf.encode(example).input_ids) for example in fitted]
    rates = []
    # The throughput depends only on the sequence's length and shape: same-length examples share
    # one measurement (with a masked LM, whose passes follow the words, the word count too).
    measured: dict[tuple, Throughput] = {}
    for number, example in enumerate(fitted, 1):
        shape = (tokens[number - 1], example.is_pair, len(example.words) if mlm is not None else None)
        if shape not in measured:
            measured[shape] = measure_throughput(clf, example, mlm)
        rates.append(measured[shape])
        if progress is not None:
            rate = rates[-1]
            progress(
                f"example {number}/{len(examples)}: {tokens[number - 1]} tokens, forward {rate.forward:.0f}/s, "
                f"forward+backward {rate.forward_backward:.0f}/s"
            )
    targets = [int(np.argmax(out[0])) for out in clf.predict_proba_groups([[clf.encode(e).variant] for e in fitted])]
    warm_up: dict[str, float] = {}
    peak_mib: dict[str, float] = {}  # CUDA only: the most device memory a method's requests held
    cuda = clf.device.type == "cuda"
    for key in methods:
        spec = explainers.get(key)
        if cuda:
            torch.cuda.reset_peak_memory_stats(clf.device)
        chosen_groups = length_groups(range(len(fitted)), [clf.token_count(e) for e in fitted], group)
        # Untimed warm-up on the first group: what a method pays once per process (AML's
        # pre-training, the eager-attention view and its check, the allocator's first growth).
        warm_up[key] = sum(
            a.runtime_s
            for a in explainers.run_explainers(
                spec, clf, [fitted[i] for i in chosen_groups[0]], [targets[i] for i in chosen_groups[0]],
                mlm=mlm, resources=resources,
            )
        )  # fmt: skip
        calls0 = clf.model_calls
        for chosen in chosen_groups:
            attributions = explainers.run_explainers(
                spec, clf, [fitted[i] for i in chosen], [targets[i] for i in chosen], mlm=mlm, resources=resources
            )
            for attribution, rate in zip(attributions, [rates[i] for i in chosen], strict=True):
                mlm_passes = int(attribution.extras.get("mlm_forward_passes", 0))
                # An explainer's own encoder of the classifier's size (AML's attribution model).
                forward = attribution.forward_passes + int(attribution.extras.get("encoder_forward_passes", 0))
                backward = attribution.backward_passes + int(attribution.extras.get("encoder_backward_passes", 0))
                row = rows[key]
                row["time"].append(attribution.runtime_s)
                row["forward"].append(forward)
                row["backward"].append(backward)
                row["mlm"].append(mlm_passes)
                row["floor"].append(floor_seconds(forward, backward, mlm_passes, rate))
        calls[key] = clf.model_calls - calls0
        if cuda:
            peak_mib[key] = torch.cuda.max_memory_allocated(clf.device) / 2**20
        if progress is not None:
            progress(f"{key}: {sum(rows[key]['time']):.3f} s over {len(fitted)} examples")
    summary = {}
    for key, row in rows.items():
        time_total, floor_total = sum(row["time"]), sum(row["floor"])
        summary[key] = {
            "median_s": statistics.median(row["time"]),
            "min_s": min(row["time"]),
            "max_s": max(row["time"]),
            "forward_passes": statistics.mean(row["forward"]),
            "backward_passes": statistics.mean(row["backward"]),
            "mlm_forward_passes": statistics.mean(row["mlm"]),
            "model_calls": calls[key] / len(examples),  # per example: on a GPU each pays a launch latency
            "floor_s": floor_total / len(examples),
            "ratio_to_floor": time_total / floor_total if floor_total > 0 else None,
            "warm_up_s": warm_up[key],
            **({"peak_gpu_mib": peak_mib[key]} if key in peak_mib else {}),
        }
    return {
        "examples": len(examples),
        "group": group,
        "mean_tokens": statistics.mean(tokens),
        "forward_per_s": statistics.mean(r.forward for r in rates),
        "forward_backward_per_s": statistics.mean(r.forward_backward for r in rates),
        "mlm_forward_per_s": statistics.mean(r.mlm_forward for r in rates if r.mlm_forward is not None)
        if mlm is not None
        else None,
        "single_forward_s": statistics.mean(r.single_forward_s for r in rates),
        "single_forward_backward_s": statistics.mean(r.single_forward_backward_s for r in rates),
        "methods": summary,
    }
