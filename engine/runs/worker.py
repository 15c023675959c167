"""One unit of work: the rows a run is cut into and the worker that holds a loaded model and
evaluates a unit with ``engine.evaluate.evaluate_slice``, in this process or as a Ray actor.

A dataset evaluation's units group examples of similar length (``unit_order``): a unit's examples
share one padded pass in the one-pass gradient and attention methods, and units of consecutive
rows padded SST-2 dev to 1.77 times its tokens, against 1.02 sorted by tokens (BENCHMARKS.md).

Batches are sized to the device (``batch_size`` None: 64 on a CPU, 256 on a GPU); an
out-of-memory error halves the batch and runs the unit again (results do not depend on the batch
size beyond float rounding).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.types import Example, ProgressFn
from engine.evaluate import SliceEvaluation, evaluate_slice, length_groups
from engine.resources import Resources
from engine.runs.records import UnitStats
from engine.runs.spec import DEFAULT_CHUNK_SIZE, RunSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from core.classifier import Classifier
    from core.masked_lm import MaskedLM

Commit = Callable[[UnitStats, "pa.Table"], None]
Unit = tuple[int, list[int], list[Example]]  # unit index, its rows (positions in the run), their examples
Within = Callable[[int, int], ProgressFn]  # (n_rows, unit index) -> the progress callback of that unit

UNIT_TOKENS = 16 * 64  # a unit's tokens at the median length, where a run names no unit size (unit_size)


def token_lengths(model: str, examples: Sequence[Example]) -> tuple[list[int], list[int]]:
    """Each example's tokens under ``model``'s tokenizer, special tokens included, and the
    tokens the classifier reads of it (cut to ``core.models.readable_length``, as requests are),
    both without loading the model's weights."""
    from core.models import load_tokenizer, model_config, readable_length

    tokenizer = load_tokenizer(model)
    lengths = []
    for example in examples:
        texts = [" ".join(segment) for segment in example.segments]  # one or two
        lengths.append(len(tokenizer(*texts, verbose=False)["input_ids"]))
    limit = readable_length(model_config(model), tokenizer)
    return lengths, [min(length, limit) for length in lengths]


def unit_size(lengths: Sequence[int]) -> int:
    """Examples per unit where a run names none: ``DEFAULT_CHUNK_SIZE`` (16), fewer where the
    median example is over ``UNIT_TOKENS`` / 16 tokens, so that a unit holds about
    ``UNIT_TOKENS``. Sentences (SST-2, e-SNLI, HateXplain) keep 16; documents of hundreds of
    tokens (movie reviews, MultiRC) get units of 1 to 5, so a killed run loses one document's
    work per worker, not sixteen, and slow documents spread over more actors."""
    median = sorted(lengths)[len(lengths) // 2] if lengths else 1
    return max(1, min(DEFAULT_CHUNK_SIZE, UNIT_TOKENS // max(1, median)))


def unit_order(lengths: Sequence[int], chunk_size: int) -> list[int]:
    """The run's rows in the order they are cut into units of ``chunk_size``: a dataset slice's
    groups (``engine.evaluate.length_groups``: sorted by ``lengths``, the examples' tokens, and
    handed out across every length), one after the other."""
    return [row for unit in length_groups(range(len(lengths)), lengths, chunk_size) for row in unit]


def unit_rows(order: Sequence[int], chunk_size: int) -> list[list[int]]:
    """The rows of each unit: ``order`` cut into pieces of ``chunk_size``."""
    return [list(order[start : start + chunk_size]) for start in range(0, len(order), chunk_size)]


class UnitWorker:
    """Holds a loaded model and evaluates units; the same class runs in-process (serial) and as
    a Ray actor."""

    def __init__(
        self, spec: RunSpec, device: str | None = None, threads: int | None = None, results: Path | None = None
    ) -> None:
        import torch

        from core.classifier import Classifier, autocast_options
        from core.loaded import load_classifier

        if threads is not None:
            torch.set_num_threads(threads)
        self.spec = spec
        loaded = load_classifier(spec.model, device)
        batch_size = spec.batch_size or (256 if loaded.device.type == "cuda" else 64)
        self.clf: Classifier = Classifier(
            loaded, batch_size=batch_size, head_type=spec.head_type, **autocast_options(spec.autocast)
        )
        self.mlm: MaskedLM | None = None
        if spec.needs_mlm():
            from core.masked_lm import MaskedLM

            self.mlm = MaskedLM.load(spec.mlm, device)
        self.params_by_metric = spec.params_by_metric()
        # AML's pre-trained models: trained once, then read back by every unit and worker, in the
        # run's results folder (``results``; None: the default one, as on a remote cluster's node).
        self.resources = Resources.saved(results)
        self.halvings = 0

    def batch_size(self) -> int:
        return self.clf.batch_size

    def run(
        self, unit: int, rows: Sequence[int], examples: Sequence[Example], progress: ProgressFn | None = None
    ) -> tuple[UnitStats, pa.Table]:
        """Evaluate one unit, the examples at ``rows``; positions and error indices are the rows'
        positions in the run.
        An out-of-memory error halves the batch size and starts the unit again (its progress
        stays where it got to until the new start passes it)."""
        from core.devices import is_out_of_memory
        from engine.runs.rows import to_table

        progress = held(progress) if progress is not None else None  # a unit run again keeps its share
        while True:
            passes = self.clf.forward_passes
            try:
                evaluation = evaluate_slice(
                    self.clf,
                    examples,
                    self.spec.methods,
                    self.params_by_metric,
                    method_params=self.spec.method_overrides,
                    seed=self.spec.seed,
                    mlm=self.mlm,
                    progress=progress,
                    resources=self.resources,
                    target=self.spec.target,
                    group=len(examples),  # a unit's examples are explained together
                )
                break
            except Exception as error:
                if not is_out_of_memory(error) or not self.clf.halve_batch():
                    raise
                self.halvings += 1
        set_positions(evaluation, rows)
        dropped = [len(e.words) - len(r.example.words) for e, r in zip(examples, evaluation.results, strict=True)]
        stats = UnitStats(
            unit, min(rows), len(rows), self.clf.forward_passes - passes, evaluation.explain_s, evaluation.metrics_s
        )
        return stats, to_table(evaluation, dropped)


def held(progress: ProgressFn) -> ProgressFn:
    """``progress`` whose fraction never goes back: the highest reported so far, with the latest
    message."""
    highest = 0.0

    def report(fraction: float, message: str) -> None:
        nonlocal highest
        highest = max(highest, fraction)
        progress(highest, message)

    return report


def set_positions(evaluation: SliceEvaluation, rows: Sequence[int]) -> None:
    """Number the unit's results and failures by their rows in the run (``evaluate_slice`` numbers
    them from 0 in the unit)."""
    for result in evaluation.results:
        result.position = rows[result.position]
    for failures in evaluation.errors.values():
        for failure in failures:
            failure["index"] = rows[failure["index"]]
