"""Fine-tune the bundled demo models from the packaged all-MiniLM-L6-v2 encoder.

``python -m cli train TASK`` trains a ``peft`` LoRA adapter (Hu et al. 2021, arXiv:2106.09685; the
task head in full as ``modules_to_save``), saves it under ``--out``, reloads it through the same
loader the app uses, measures it on the task's report split and writes the model card. Tasks and
splits:

* ``sst2``: SST-2 train -> dev; ``esnli``: e-SNLI **test** -> dev (dev holds the highlights);
* ``movies``: ERASER movies train -> test; ``hatexplain``: HateXplain val -> test;
* ``mlm``: masked LM on SST-2 train, e-SNLI test and movies train sentences -> SST-2 dev.

The package is split by job: ``tasks`` (the task table and a run's settings), ``adapter`` (the
LoRA adapter: its layers, wrapping and saving it), ``loop`` (what every training loop shares),
``classifiers`` and ``mlm`` (training and measuring each kind of model) and ``card`` (the model
card). ``run_training`` below runs a task; the regression and multi-label HateXplain heads are
trained by ``core.train_heads``. The names below are its interface.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import torch

from core.files import remove_leftovers, replaced_atomically, writable_folder_problem
from core.models import BUNDLED_DIR
from core.train.adapter import (
    ADAPTER_WEIGHTS,
    BASE,
    ENCODER_ID,
    ENCODER_LORA,
    MLM_DECODER,
    OTHER_BASE_LORA,
    lora_config,
    save_adapter,
)
from core.train.card import model_card
from core.train.classifiers import evaluate_classifier, fit_classifier, train_classifier
from core.train.mlm import evaluate_mlm, mask_tokens, mlm_sentences, train_mlm
from core.train.tasks import TASKS, TaskSpec, TrainConfig

__all__ = [
    "ADAPTER_WEIGHTS",
    "BASE",
    "ENCODER_ID",
    "ENCODER_LORA",
    "MLM_DECODER",
    "OTHER_BASE_LORA",
    "TASKS",
    "TaskSpec",
    "TrainConfig",
    "evaluate_classifier",
    "evaluate_mlm",
    "fit_classifier",
    "lora_config",
    "mask_tokens",
    "mlm_sentences",
    "model_card",
    "run_training",
    "save_adapter",
    "train_classifier",
    "train_mlm",
]


def run_training(
    task: str,
    data_root: str | None,
    out: Path | None,
    steps: int | None,
    seed: int,
    train_limit: int | None = None,
    eval_limit: int | None = None,
    command: str = "",
    lr: float | None = None,
    init_from: str | None = None,
    bf16: bool = False,
) -> dict:
    """Train TASK, save the adapter and its card (``training.json`` and ``README.md``) under
    ``out``. The model is saved and measured in a temporary folder beside ``out`` and renamed to it
    once complete, so a stopped or failed run leaves ``out`` as it was.

        With ``init_from`` the run continues a saved adapter of the same task; the card then lists
        the earlier run(s) first, so the model can be reproduced command by command.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    spec = TASKS[task]
    _check_positive(steps=steps, lr=lr, train_limit=train_limit, eval_limit=eval_limit)
    torch.set_flush_denormal(True)  # tiny LoRA updates must not fall into slow denormal arithmetic
    cfg = TrainConfig(
        task=task,
        steps=spec.steps if steps is None else steps,
        seed=seed,
        lr=spec.lr if lr is None else lr,
        rank=spec.rank,
        max_length=spec.max_length,
        train_limit=train_limit,
        eval_limit=eval_limit,
        init_from=init_from,
        bf16=bf16,
    )
    earlier = _earlier_runs(task, init_from)
    out = out or BUNDLED_DIR / f"minilm-{task}"
    _check_writable(out)
    remove_leftovers(out.parent, out.name)  # an earlier, killed training's staging folder
    with replaced_atomically(out) as staging:
        if task == "mlm":
            figures = train_mlm(cfg, data_root, staging)
        elif task.startswith("hatexplain-"):
            from core.train_heads import train_head

            figures = train_head(cfg, data_root, staging)
        else:
            figures = train_classifier(cfg, data_root, staging)
        card = {"config": asdict(cfg), "figures": figures, "command": command, "earlier_runs": earlier}
        (staging / "training.json").write_text(json.dumps(card, indent=2) + "\n")
        (staging / "README.md").write_text(model_card(task, cfg, figures, command, earlier))
    return card


def _check_positive(**values: float | None) -> None:
    """Refuse a setting given as zero, a negative or a non-finite number (None: the task's
    default)."""
    for name, value in values.items():
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be above 0, got {value}")


def _check_writable(out: Path) -> None:
    """Fail before training, not after it, when the model cannot be saved as ``out`` (a folder,
    written beside it first)."""
    problem = "it is a file, not a folder" if out.exists() and not out.is_dir() else writable_folder_problem(out.parent)
    if problem is not None:
        raise ValueError(f"cannot save the model in {out}: {problem}")


def _earlier_runs(task: str, init_from: str | None) -> list[dict]:
    """The runs a continued model went through, oldest first (read before ``out`` is
    overwritten)."""
    if not init_from:
        return []
    path = Path(init_from) / "training.json"
    if not path.exists():
        raise ValueError(f"--init-from {init_from}: no training.json there (not a model this command trained)")
    previous = json.loads(path.read_text())
    if previous["config"]["task"] != task:
        raise ValueError(f"--init-from {init_from} was trained for {previous['config']['task']!r}, not {task!r}")
    own = {k: previous[k] for k in ("config", "figures", "command")}
    return [*previous.get("earlier_runs", []), own]
