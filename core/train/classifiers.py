"""Train and measure the single-label classifiers (``sst2``, ``esnli``, ``movies``, ``hatexplain``):
the bundled recipe (``fit_classifier``), a whole task's run (``train_classifier``) and accuracy."""

from __future__ import annotations

import random
import time
from pathlib import Path

import torch
from torch import nn

from core import datasets as ds
from core.models import base_model, base_source, encoder_path, load_sequence_classifier, load_tokenizer
from core.train.adapter import BASE, _adapt, save_adapter
from core.train.loop import _autocast, _batches, _encode, _log, _optimize, _schedule
from core.train.tasks import TASKS, TrainConfig
from core.types import Example, ProgressFn


def train_classifier(cfg: TrainConfig, data_root: str | None, out: Path) -> dict:
    spec = TASKS[cfg.task]
    train = ds.load_examples(spec.dataset, spec.train_split, data_root, limit=cfg.train_limit)
    report = ds.load_examples(spec.dataset, spec.report_split, data_root, limit=cfg.eval_limit)
    train = [e for e in train if e.label is not None and e.words]
    where = f"{spec.dataset}/{spec.train_split}"
    if not train:
        raise ValueError(f"{cfg.task}: no labelled training example in {where}")
    if len({e.label for e in train}) < 2:
        only, names = train[0].label, train[0].label_names
        name = names[only] if 0 <= only < len(names) else only
        raise ValueError(f"{cfg.task}: the training examples in {where} hold only one class, {name!r}")
    info = {
        "architecture": "sequence-classification",
        "task": cfg.task,
        "label_names": list(train[0].label_names),
        "pair": train[0].is_pair,
        "dataset": spec.dataset,
        "max_length": cfg.max_length,
        "base": BASE,
    }
    start = time.time()
    model = fit_classifier(cfg, train, info)
    train_s = time.time() - start
    tokenizer = load_tokenizer(encoder_path())
    save_adapter(model, out, info)
    merged = load_sequence_classifier(str(out))
    # Reported at the model's full input length, as the app and `predict` see the examples.
    full_length = min(512, merged.config.max_position_embeddings, tokenizer.model_max_length)
    accuracy = evaluate_classifier(merged, tokenizer, report, full_length)
    return {
        "report_split": f"{spec.dataset}/{spec.report_split}",
        "report_examples": len(report),
        "accuracy": round(accuracy, 4),
        "train_examples": len(train),
        "train_seconds": round(train_s, 1),
    }


def fit_classifier(
    cfg: TrainConfig,
    train: list[Example],
    info: dict,
    log: bool = True,
    base: nn.Module | None = None,
    progress: ProgressFn | None = None,
) -> nn.Module:
    """The bundled recipe on ``train`` (labelled examples): a fresh LoRA adapter (or ``init_from``)
    over the starting encoder (``core.models.base_source``: the packaged one unless ``info`` names
    a ``base_model``) with the head ``info`` asks for (``base``, copied, when the caller
    keeps one: loading it costs more than a few steps), ``cfg.steps`` AdamW steps; returns the
    ``peft`` model (``save_adapter`` writes it). The same seed gives the same model. ``progress``
    gets (fraction of the steps done, "step i of n") after each step."""
    import copy

    torch.manual_seed(cfg.seed)
    if base is None:
        start = base_model(info)
    else:  # the new head drawn again under this seed, as loading the encoder would draw it
        start = copy.deepcopy(base)
        head = start.classifier if hasattr(start, "classifier") else start.score
        head.apply(start._init_weights)
    model, trainable = _adapt(start, cfg, info["architecture"], packaged=not info.get("base_model"))
    tokenizer = load_tokenizer(base_source(info))
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = _schedule(optimizer, cfg.steps, cfg.warmup)
    model.train()
    rng = random.Random(cfg.seed)
    start = time.time()
    for step, idx in enumerate(_batches(len(train), cfg.batch_size, cfg.steps, rng), 1):
        batch = [train[i] for i in idx]
        enc = _encode(tokenizer, batch, cfg.max_length)
        with _autocast(cfg):
            loss = model(**enc, labels=torch.tensor([e.label for e in batch])).loss
        _optimize(loss, trainable, optimizer, scheduler)
        if progress is not None:
            progress(step / cfg.steps, f"step {step} of {cfg.steps}")
        if log and (step % 50 == 0 or step == cfg.steps):
            _log(f"step {step}/{cfg.steps} loss {loss.item():.4f} {time.time() - start:.0f}s")
    return model.eval()


@torch.inference_mode()
def evaluate_classifier(
    model: nn.Module, tokenizer, examples: list[Example], max_length: int, batch_size: int = 64
) -> float:
    labelled = [e for e in examples if e.label is not None]
    correct = 0
    for i in range(0, len(labelled), batch_size):
        batch = labelled[i : i + batch_size]
        logits = model(**_encode(tokenizer, batch, max_length)).logits
        correct += int((logits.argmax(-1) == torch.tensor([e.label for e in batch])).sum())
    return correct / max(1, len(labelled))
