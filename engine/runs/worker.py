"""One unit of work: the chunks a run is cut into and the worker that holds a loaded model and
evaluates a unit with ``engine.evaluate.evaluate_slice``, in this process or as a Ray actor.

Batches are sized to the device (``batch_size`` None: 64 on a CPU, 256 on a GPU); an
out-of-memory error halves the batch and runs the unit again (results do not depend on the batch
size beyond float rounding).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from core.types import Example, ProgressFn
from engine.evaluate import SliceEvaluation, evaluate_slice
from engine.resources import Resources
from engine.runs.records import UnitStats
from engine.runs.spec import RunSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from core.classifier import Classifier
    from core.masked_lm import MaskedLM

Commit = Callable[[UnitStats, "pa.Table"], None]
Unit = tuple[int, int, list[Example]]  # unit index, first row, examples


def chunks(n_rows: int, chunk_size: int) -> list[tuple[int, int]]:
    """(first row, number of rows) of each unit."""
    return [(start, min(chunk_size, n_rows - start)) for start in range(0, n_rows, chunk_size)]


class UnitWorker:
    """Holds a loaded model and evaluates units; the same class runs in-process (serial) and as
    a Ray actor."""

    def __init__(self, spec: RunSpec, device: str | None = None, threads: int | None = None) -> None:
        import torch

        from core.classifier import Classifier, autocast_options
        from core.loaded import load_classifier

        if threads is not None:
            torch.set_num_threads(threads)
        self.spec = spec
        loaded = load_classifier(spec.model, device)
        batch_size = spec.batch_size or (256 if loaded.device.type == "cuda" else 64)
        self.clf: Classifier = Classifier(loaded, batch_size=batch_size, **autocast_options(spec.autocast))
        self.mlm: MaskedLM | None = None
        if spec.needs_mlm():
            from core.masked_lm import MaskedLM

            self.mlm = MaskedLM.load(spec.mlm, device)
        self.params_by_metric = spec.params_by_metric()
        # AML's pre-trained models: trained once, then read back by every unit and worker.
        self.resources = Resources.saved()
        self.halvings = 0

    def batch_size(self) -> int:
        return self.clf.batch_size

    def run(
        self, unit: int, first_row: int, examples: Sequence[Example], progress: ProgressFn | None = None
    ) -> tuple[UnitStats, pa.Table]:
        """Evaluate one unit; positions and error indices are the rows' positions in the run.
        An out-of-memory error halves the batch size and starts the unit again."""
        from core.devices import is_out_of_memory
        from engine.runs.rows import to_table

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
        shift_positions(evaluation, first_row)
        dropped = [len(e.words) - len(r.example.words) for e, r in zip(examples, evaluation.results, strict=True)]
        stats = UnitStats(
            unit, first_row, len(examples), self.clf.forward_passes - passes, evaluation.explain_s, evaluation.metrics_s
        )
        return stats, to_table(evaluation, dropped)


def shift_positions(evaluation: SliceEvaluation, first_row: int) -> None:
    for result in evaluation.results:
        result.position += first_row
    for failures in evaluation.errors.values():
        for failure in failures:
            failure["index"] += first_row
