"""Train the regression and multi-label demo heads on HateXplain
(``python -m cli train hatexplain-score`` and ``hatexplain-targets``), the same way as the
single-label demos (``core.train``: a LoRA adapter, Hu et al. 2021, arXiv:2106.09685, with the head
in full), on the annotations of HateXplain (Mathew et al. 2021, arXiv:2012.10289) that
``core.datasets.hatexplain_annotations`` reads:

* ``hatexplain-score``: one regression output, the share of the three annotators who marked the
  post hate speech or offensive (mean squared error; reported: MSE and Pearson r on test);
* ``hatexplain-targets``: one sigmoid per target community named by at least two annotators
  (binary cross-entropy, each label's positives weighted by its negatives-to-positives ratio;
  reported: micro and macro F1 at 0.5 on test).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from core import datasets as ds
from core.catalog import HATEXPLAIN_SCORE_LABEL as SCORE_LABEL
from core.models import base_model, encoder_path, load_sequence_classifier, load_tokenizer
from core.train.adapter import BASE, _adapt, save_adapter
from core.train.loop import _autocast, _batches, _encode, _log, _optimize, _schedule
from core.train.tasks import TASKS, TrainConfig

TARGETS = {
    "hatexplain-score": "regression (MSE): the share of the three annotators who marked the post hate speech "
    "or offensive, in {0, 1/3, 2/3, 1}",
    "hatexplain-targets": "multi-label (one sigmoid per label, binary cross-entropy with each label's positives "
    "weighted by its negatives-to-positives ratio): the target communities "
    f"{', '.join(ds.HATEXPLAIN_COMMUNITIES)}, each present when at least two of the three annotators named it",
}
PROBLEM_TYPES = {"hatexplain-score": "regression", "hatexplain-targets": "multi_label_classification"}


def _targets(task: str, rows: list[tuple]) -> np.ndarray:
    """(n, n_labels) float32: the share (regression) or the community flags (multi-label)."""
    if task == "hatexplain-score":
        return np.array([[share] for _, share, _ in rows], dtype=np.float32)
    return np.array([flags for _, _, flags in rows], dtype=np.float32)


def train_head(cfg: TrainConfig, data_root: str | None, out: Path) -> dict:
    spec = TASKS[cfg.task]
    train = [r for r in ds.hatexplain_annotations(spec.train_split, data_root) if r[0].words][: cfg.train_limit]
    report = ds.hatexplain_annotations(spec.report_split, data_root)[: cfg.eval_limit]
    if not train:
        raise ValueError(f"{cfg.task}: no usable training example in {spec.dataset}/{spec.train_split}")
    labels = [SCORE_LABEL] if cfg.task == "hatexplain-score" else list(ds.HATEXPLAIN_COMMUNITIES)
    info = {
        "architecture": "sequence-classification",
        "task": cfg.task,
        "problem_type": PROBLEM_TYPES[cfg.task],
        "label_names": labels,
        "pair": False,
        "dataset": spec.dataset,
        "max_length": cfg.max_length,
        "base": BASE,
    }

    torch.manual_seed(cfg.seed)
    model, trainable = _adapt(base_model(info), cfg, info["architecture"])
    tokenizer = load_tokenizer(encoder_path())
    targets = torch.from_numpy(_targets(cfg.task, train))
    # Multi-label: each label's positives weighted by its negatives-to-positives ratio in the
    # training split (4-16% positives here), else the tagger learns to name no target at all.
    positives = targets.sum(0).clamp(min=1)
    pos_weight = (len(train) - positives) / positives if cfg.task == "hatexplain-targets" else None
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = _schedule(optimizer, cfg.steps, cfg.warmup)
    model.train()
    rng = random.Random(cfg.seed)
    start = time.time()
    for step, idx in enumerate(_batches(len(train), cfg.batch_size, cfg.steps, rng), 1):
        enc = _encode(tokenizer, [train[i][0] for i in idx], cfg.max_length)
        with _autocast(cfg):
            if pos_weight is None:
                loss = model(**enc, labels=targets[idx]).loss  # mean squared error
            else:
                logits = model(**enc).logits.float()
                loss = F.binary_cross_entropy_with_logits(logits, targets[idx], pos_weight=pos_weight)
        _optimize(loss, trainable, optimizer, scheduler)
        if step % 25 == 0 or step == cfg.steps:
            _log(f"step {step}/{cfg.steps} loss {loss.item():.4f} {time.time() - start:.0f}s")
    train_s = time.time() - start
    save_adapter(model, out, info)
    merged = load_sequence_classifier(str(out))
    full_length = min(512, merged.config.max_position_embeddings, tokenizer.model_max_length)
    outputs = _outputs(merged, tokenizer, [r[0] for r in report], full_length)
    figures = head_figures(cfg.task, outputs, _targets(cfg.task, report))
    return {
        "report_split": f"{spec.dataset}/{spec.report_split}",
        "report_examples": len(report),
        **figures,
        "train_examples": len(train),
        "train_seconds": round(train_s, 1),
    }


@torch.inference_mode()
def _outputs(model, tokenizer, examples, max_length: int, batch_size: int = 64) -> np.ndarray:
    """The raw logits of every example, (n, n_labels)."""
    rows = [
        model(**_encode(tokenizer, examples[i : i + batch_size], max_length)).logits.float()
        for i in range(0, len(examples), batch_size)
    ]
    return torch.cat(rows).numpy()


def head_figures(task: str, logits: np.ndarray, targets: np.ndarray) -> dict:
    """Regression: MSE and Pearson r of the score (None when the prediction or the gold is
    constant: r is undefined there); multi-label: micro and macro F1 of the labels whose sigmoid
    is at least 0.5 (a label absent from both gold and prediction counts F1 = 1 in the macro
    average; here every label occurs in test)."""
    if task == "hatexplain-score":
        predicted, gold = logits[:, 0], targets[:, 0]
        constant = np.ptp(predicted) == 0 or np.ptp(gold) == 0
        return {
            "mse": round(float(np.mean((predicted - gold) ** 2)), 4),
            "pearson": None if constant else round(float(np.corrcoef(predicted, gold)[0, 1]), 4),
            "mse_of_mean_baseline": round(float(np.var(gold)), 4),
        }
    chosen = 1 / (1 + np.exp(-logits)) >= 0.5
    gold = targets.astype(bool)
    tp, fp, fn = (chosen & gold).sum(0), (chosen & ~gold).sum(0), (~chosen & gold).sum(0)
    per_label = np.where(tp + fp + fn == 0, 1.0, 2 * tp / np.maximum(1, 2 * tp + fp + fn))
    return {
        "micro_f1": round(float(2 * tp.sum() / max(1, 2 * tp.sum() + fp.sum() + fn.sum())), 4),
        "macro_f1": round(float(per_label.mean()), 4),
        "f1_per_label": {
            name: round(float(f), 4) for name, f in zip(ds.HATEXPLAIN_COMMUNITIES, per_label, strict=True)
        },
    }
