"""One ROAR unit: explain with the model it depends on, remove, retrain, evaluate.

ROAR after Hooker et al. (2019), arXiv:1806.10758, as Pham et al. 2022 (arXiv:2110.11929) and
Madsen et al. 2022 (arXiv:2110.08412, Recursive ROAR) run it;
the definitions (rounding, order, views) are in ``experiments.roar.removal``, the units and their
dependencies in ``experiments.roar.job``.

A unit (method, level, seed) reads the words its dependency removed (nothing for the seed's 0%
model) and that dependency's model, explains the examples that still need words removed with
that model on that model's view (``gold`` or ``predicted`` class), removes the top words
(``remove_top``: plain ROAR ranks the step-0 scores, Recursive ROAR the previous step's, and
already-removed words stay removed), then retrains from the starting encoder with the job's
recipe (``core.train.fit_classifier``: the same seed for every method and level of a seed,
so only the data differ) and scores the equally-masked evaluation set through the batched scorer
(``Classifier.predict_proba``). The model is saved (a LoRA adapter, written atomically) so the
units that depend on it can run later, in another process or after a resume; evaluation and
explanation use the saved (float16) adapter, so a resumed job gives the same numbers.

The 0% and 100% units are shared by every method: nothing or every candidate word is removed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.files import replaced_atomically, write_text_atomic
from core.types import Example, ProgressFn
from engine.roar.job_data import JobData
from experiments.roar.job import RoarJob, Unit
from experiments.roar.removal import FULL, View, candidates, n_to_remove, remove_top, removed_views
from experiments.roar.scores import SHARED, performance

if TYPE_CHECKING:
    import pyarrow as pa

    from core.classifier import Classifier

SPLITS = ("train", "eval")
META = b"roar_unit"  # the Parquet schema metadata key of a unit's results


@dataclass(frozen=True)
class UnitOutcome:
    """What a finished unit reports: its performance, costs and per-example rows."""

    index: int
    unit: Unit
    accuracy: float
    macro_f1: float
    train_s: float
    explain_s: float
    eval_s: float
    explanations: int
    forward_passes: int
    table: pa.Table

    def meta(self) -> dict[str, Any]:
        return {
            "method": self.unit.method,
            "level": self.unit.level.label,
            "seed": self.unit.seed,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "train_s": self.train_s,
            "explain_s": self.explain_s,
            "eval_s": self.eval_s,
            "explanations": self.explanations,
            "forward_passes": self.forward_passes,
        }


def _views(data: JobData, removed: Sequence[np.ndarray], split: str) -> list[View]:
    removal = data.job.removal if any(m.any() for m in removed) else "delete"  # nothing removed: no masked LM
    mlm = data.masked_lm() if removal == "mlm" else None
    mask_token = data.mask_token() if removal == "mask" else "[MASK]"
    return removed_views(data.examples(split), removed, removal, mask_token=mask_token, mlm=mlm)


def _pad_scores(scores: np.ndarray, lengths: Sequence[int], kept: Sequence[int], order: str) -> np.ndarray:
    """Scores over segments of ``lengths`` words from the scores of the cut the classifier read
    (``Classifier.fit_example``: the first ``kept[i]`` words of segment ``i``, the words past its
    maximum length dropped from the end of the longer segment): each segment's dropped words rank
    last, in their own segment."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) != sum(kept) or len(kept) != len(lengths):
        raise ValueError(f"{len(scores)} scores for segments of {list(kept)} words")
    if list(kept) == list(lengths):
        return scores
    low = 0.0 if order == "absolute" else (float(np.min(scores)) - 1.0 if len(scores) else 0.0)
    parts, start = [], 0
    for n, k in zip(lengths, kept, strict=True):
        parts += [scores[start : start + k], np.full(n - k, low)]
        start += k
    return np.concatenate(parts)


def explain_views(
    data: JobData,
    clf: Classifier,
    views: Sequence[View],
    level,
    removed: Sequence[np.ndarray],
    method: str,
    seed: int,
    progress: ProgressFn | None = None,
) -> tuple[list[np.ndarray], int]:
    """Scores over the original words of every view's example (NaN where nothing needs ranking),
    by ``method`` with ``clf`` on the view; only examples that still need words removed at
    ``level`` are explained. Returns the scores and the number of explanations. ``progress``
    gets (fraction of the views done, "example i of n")."""
    import explainers
    from engine.explain import explain_example

    job = data.job
    mlm = data.masked_lm() if explainers.get(method).needs_mlm else None
    out: list[np.ndarray] = []
    count = 0
    for number, (view, mask) in enumerate(zip(views, removed, strict=True), 1):
        if progress is not None:
            progress((number - 1) / len(views), f"example {number} of {len(views)}")
        pool = candidates(view.original, job.scope)
        need = n_to_remove(len(pool), level, rounding_of(job)) - int(mask[pool].sum())
        if need <= 0 or not view.example.words:
            out.append(np.full(len(view.original.words), np.nan))
            continue
        target = view.example.label if job.target == "gold" else None
        explanation = explain_example(clf, view.example, [method], target=target, seed=seed, mlm=mlm)
        if method in explanation.errors:
            raise ValueError(f"{method} failed on {view.example.id!r}: {explanation.errors[method]}")
        scores = np.asarray(explanation.attributions[method].scores, dtype=np.float64)
        lengths = [len(segment) for segment in view.example.segments]
        kept = [len(segment) for segment in explanation.example.segments]  # the cut it explained
        out.append(view.original_scores(_pad_scores(scores, lengths, kept, order_of(job))))
        count += 1
    return out, count


def scores_path(folder: Path, method: str, seed: int, split: str) -> Path:
    """Where plain ROAR keeps ``method``'s step-0 scores of ``split`` for ``seed`` (``folder``:
    ``runs/<run_id>``)."""
    return folder / "scores" / f"{method}-seed{seed}-{split}.json"


def step0_cached(folder: Path, method: str, seed: int) -> bool:
    """Whether ``method``'s step-0 scores for ``seed`` are kept for every split."""
    return all(scores_path(folder, method, seed, split).is_file() for split in SPLITS)


def step0_scores(
    data: JobData, method: str, seed: int, zero_index: int, progress: Callable[[str], ProgressFn] | None = None
) -> tuple[dict[str, list], int]:
    """Plain ROAR's ranking: ``method``'s scores of every example with the seed's 0% model, kept
    on disk (written atomically) so the levels of one method and seed explain once.
    ``progress(split)`` gives the progress callback of a split's explanations."""
    out: dict[str, list] = {}
    count = 0
    for split in SPLITS:
        path = scores_path(data.folder, method, seed, split)
        if path.is_file():
            out[split] = [np.asarray(s, dtype=np.float64) for s in json.loads(path.read_text())]
            continue
        examples = data.examples(split)
        none = [np.zeros(len(e.words), dtype=bool) for e in examples]
        views = removed_views(examples, none, "delete")
        scores, n = explain_views(
            data, data.classifier(zero_index), views, FULL, none, method, seed, progress(split) if progress else None
        )
        count += n
        write_text_atomic(path, json.dumps([[None if np.isnan(v) else float(v) for v in s] for s in scores]))
        out[split] = scores
    return out, count


def _save_model(model, folder: Path, info: dict) -> None:
    """The adapter under a temporary folder, then renamed into place (an old one replaced)."""
    from core.train import save_adapter

    with replaced_atomically(folder) as temporary:
        save_adapter(model, temporary, info)


def rounding_of(job: RoarJob) -> str:
    """The job's rounding rule (resolved when the job was made)."""
    return str(job.rounding)


def order_of(job: RoarJob) -> str:
    return str(job.order)


def train_config(data: JobData, seed: int):
    from core.train import TrainConfig

    return TrainConfig(
        task=data.job.task or data.info["task"],
        steps=int(data.job.train_steps or 1),
        seed=seed,
        lr=data.recipe.lr,
        rank=data.recipe.rank,
        max_length=data.recipe.max_length,
    )


def _variant(clf: Classifier, example: Example):
    """The example as the scorer's input; an example left without words is [CLS] [SEP] (100%
    deleted)."""
    if example.words:
        return clf.encode(clf.fit_example(example)[0]).variant
    from core.encoding import Variant

    encoded = clf.tokenizer(*[list(segment) for segment in example.segments], is_split_into_words=True)
    ids = encoded["input_ids"]
    return Variant(tuple(ids), tuple(encoded.get("token_type_ids", [0] * len(ids))))


def _stages(data: JobData, unit: Unit, progress: ProgressFn | None) -> Callable[[str], ProgressFn]:
    """``stage(name)``: the progress callback of one of a unit's stages (``train`` and ``eval``:
    explaining that split; ``retraining``), which reports its share of the unit to ``progress``
    ("explaining: train example 3 of 8"). A unit that explains gives the explanations half
    of its bar, by the splits' sizes, and retraining the other half; evaluating is one batched
    pass, counted with retraining."""
    sizes = {split: len(data.examples(split)) for split in SPLITS}
    explains = 0.0 if unit.method == SHARED else 0.5
    low = {"train": 0.0, "eval": explains * sizes["train"] / max(1, sum(sizes.values())), "retraining": explains}
    high = {"train": low["eval"], "eval": explains, "retraining": 1.0}

    def stage(name: str) -> ProgressFn:
        what = "retraining: {}" if name == "retraining" else f"explaining: {name} {{}}"

        def report(fraction: float, message: str) -> None:
            if progress is not None:
                progress(low[name] + (high[name] - low[name]) * fraction, what.format(message))

        return report

    return stage


def run_unit(data: JobData, index: int, removed_of, n_classes: int, progress: ProgressFn | None = None) -> UnitOutcome:
    """Compute unit ``index`` of the job. ``removed_of(unit)`` gives a stored unit's removed words
    per split (``{"train": [...], "eval": [...]}``, booleans over each example's words).
    ``progress`` gets (fraction of the unit done, where it is: ``_stages``)."""
    from core.train import fit_classifier

    job = data.job
    unit = job.units[index]
    stage = _stages(data, unit, progress)
    count = explain_passes = 0
    start = time.perf_counter()
    removed: dict[str, list[np.ndarray]] = {}
    scores_by_split: dict[str, list[np.ndarray]] = {}
    if unit.method == SHARED:
        for split in SPLITS:
            examples = data.examples(split)
            removed[split] = [
                remove_top(e, np.zeros(len(e.words)), unit.level, rounding=rounding_of(job), scope=job.scope)
                for e in examples
            ]
            scores_by_split[split] = [np.zeros(0) for _ in examples]
    else:
        dependency = job.depends_on(unit)
        assert dependency is not None
        dep_index = job.units.index(dependency)
        if job.recursive and dependency.method != SHARED:
            before = removed_of(dependency)
            clf = data.classifier(dep_index)
            passes_before = clf.forward_passes
            for split in SPLITS:
                views = _views(data, before[split], split)
                scores, n = explain_views(
                    data, clf, views, unit.level, before[split], unit.method, unit.seed, stage(split)
                )
                scores_by_split[split] = scores
                count += n
            explain_passes = clf.forward_passes - passes_before
        else:
            before = {split: [np.zeros(len(e.words), dtype=bool) for e in data.examples(split)] for split in SPLITS}
            # step 0's scores kept on disk (an earlier level's) cost no pass, nor loading the model
            zero = None if step0_cached(data.folder, unit.method, unit.seed) else data.classifier(dep_index)
            passes_before = zero.forward_passes if zero is not None else 0
            scores_by_split, count = step0_scores(data, unit.method, unit.seed, dep_index, stage)
            explain_passes = zero.forward_passes - passes_before if zero is not None else 0
        for split in SPLITS:
            removed[split] = [
                remove_top(
                    e,
                    s,
                    unit.level,
                    removed=b if job.recursive else None,
                    rounding=rounding_of(job),
                    order=order_of(job),
                    scope=job.scope,
                )
                for e, s, b in zip(data.examples(split), scores_by_split[split], before[split], strict=True)
            ]
    explain_s = time.perf_counter() - start
    shown = {split: _views(data, removed[split], split) for split in SPLITS}
    start = time.perf_counter()
    train = [v.example for v in shown["train"]]
    model = fit_classifier(
        train_config(data, unit.seed), train, data.info, log=False, base=data.base(), progress=stage("retraining")
    )
    _save_model(model, data.model_folder(index), data.info)
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    clf = data.classifier(index)
    passes_before = clf.forward_passes
    probabilities = clf.predict_proba([_variant(clf, v.example) for v in shown["eval"]])
    predicted = np.argmax(probabilities, axis=1)
    gold = [int(e.label or 0) for e in data.eval]  # load_data keeps labelled examples only
    accuracy, macro_f1 = performance(gold, predicted, n_classes)
    eval_s = time.perf_counter() - start
    table = unit_table(removed, shown["eval"], scores_by_split.get("eval", []), predicted)
    eval_passes = clf.forward_passes - passes_before
    return UnitOutcome(
        index, unit, accuracy, macro_f1, train_s, explain_s, eval_s, count, explain_passes + eval_passes, table
    )


def unit_table(
    removed: dict[str, list[np.ndarray]], eval_views: Sequence[View], eval_scores: Sequence[np.ndarray], predicted
) -> pa.Table:
    """One row per example: split, index, removed word positions; for the evaluation examples also
    the words shown in place of the removed ones (``""`` deleted), the scores that ranked them
    (NaN where none were needed) and the prediction."""
    import pyarrow as pa

    rows: dict[str, list] = {"split": [], "index": [], "removed": [], "shown": [], "scores": [], "predicted": []}
    for split in SPLITS:
        for i, mask in enumerate(removed[split]):
            rows["split"].append(split)
            rows["index"].append(i)
            rows["removed"].append(np.flatnonzero(mask).astype(np.int32).tolist())
            if split == "eval":
                view = eval_views[i]
                rows["shown"].append([s for s in view.shown if s is not None])
                scores = [float(v) for v in eval_scores[i]] if i < len(eval_scores) else []
                rows["scores"].append(scores)
                rows["predicted"].append(int(predicted[i]))
            else:
                rows["shown"].append(None)
                rows["scores"].append(None)
                rows["predicted"].append(None)
    schema = pa.schema(
        [
            ("split", pa.string()),
            ("index", pa.int32()),
            ("removed", pa.list_(pa.int32())),
            ("shown", pa.list_(pa.string())),
            ("scores", pa.list_(pa.float64())),
            ("predicted", pa.int32()),
        ]
    )
    return pa.table(rows, schema=schema)
