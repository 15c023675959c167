"""What a ROAR job trains on and how: the dataset's splits and the training recipe.

A job on a bundled task (``--task sst2``) takes the task's splits and recipe from
``core.train.TASKS`` and retrains from the packaged encoder. A job on a model and a dataset
(``--model ID --dataset D``) retrains from that model (a hub id or a local folder, loaded as the
starting encoder with a new head of the dataset's labels, ``core.models.base_model``; for one of
this project's adapters, from the encoder it was fine-tuned from: ``starting_point``) with the
default recipe below, on these splits of the dataset: the training split is ``train`` (else the
first split that is not the evaluation split) and the evaluation split is the first of
``EVAL_SPLITS`` the dataset has: a dev split first, as Pham et al. 2022 (arXiv:2110.11929) report
SST-2 dev accuracy, else a test split, the split Madsen et al. 2022 (arXiv:2110.08412) report on
(``p_i = perf(M_i, test_i)``). A data file (``file:PATH``) offers the splits its ``split`` column
names. Every model is retrained and scored at the recipe's ``max_length`` (a bundled task's, e.g.
64 tokens for ``movies``): words past it are cut, so a removal there is unseen by the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.roar.job import RoarJob

EVAL_SPLITS = ("dev", "validation", "val", "test")
# The recipe of a job on a model and a dataset: the bundled SST-2 recipe's learning rate and rank,
# at a maximum length that fits the papers' sentence tasks.
DEFAULT_LR = 5e-4
DEFAULT_RANK = 16
DEFAULT_MAX_LENGTH = 128


@dataclass(frozen=True)
class Recipe:
    dataset: str
    train_split: str
    eval_split: str
    lr: float
    rank: int
    max_length: int
    base_model: str | None  # None: the packaged encoder (bundled tasks)


def recipe_of(job: RoarJob, data_dir: str | None = None) -> Recipe:
    """The splits and recipe of ``job`` (module docstring); a dataset without a training and an
    evaluation split gets a one-line error naming the splits it has."""
    if job.task is not None:
        from core.train import TASKS

        spec = TASKS[job.task]
        return Recipe(spec.dataset, spec.train_split, spec.report_split, spec.lr, spec.rank, spec.max_length, None)
    from core.datasets import FILE_PREFIX, SPLIT_COLUMN, available_splits

    dataset = str(job.dataset)  # RoarJob checked that a model job has a dataset
    splits = available_splits(dataset, data_dir)
    if dataset.startswith(FILE_PREFIX):  # its first split, "all", holds every other split's rows
        splits = splits[1:]
    eval_split = next((s for s in EVAL_SPLITS if s in splits), None)
    train_split = "train" if "train" in splits else next((s for s in splits if s != eval_split), None)
    if eval_split is None or train_split is None or train_split == eval_split:
        how = f" (a data file's {SPLIT_COLUMN!r} column marks each row's)" if dataset.startswith(FILE_PREFIX) else ""
        raise ValueError(
            f"{dataset} needs a training split and an evaluation split (one of {', '.join(EVAL_SPLITS)}){how}; "
            f"found {', '.join(splits) or 'none'}"
        )
    return Recipe(dataset, train_split, eval_split, DEFAULT_LR, DEFAULT_RANK, DEFAULT_MAX_LENGTH, starting_point(job))


def starting_point(job: RoarJob) -> str:
    """What a job on a model retrains from: the model itself (a hub id or a folder), or, for one
    of this project's adapters (a bundled name such as ``minilm-sst2``, or a folder holding one),
    the encoder that adapter was fine-tuned from, as a bundled task's job retrains from the
    packaged encoder."""
    from core.models import base_source, delta_folder, read_task

    model = str(job.model)
    adapter = delta_folder(model)
    return model if adapter is None else base_source(read_task(adapter))
