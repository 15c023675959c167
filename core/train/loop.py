"""The pieces every training loop here shares: the learning-rate schedule, autocast, one
optimizer step, the batches of a run, encoding examples and the progress log."""

from __future__ import annotations

import random
import sys

import torch
from torch import nn

from core.train.tasks import TrainConfig
from core.types import Example


def _schedule(optimizer: torch.optim.Optimizer, steps: int, warmup: float) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up then linear decay. Not transformers' ``get_linear_schedule_with_warmup``: this
    one starts at 1/warm (not 0) of the peak, so the bundled models' runs are reproduced."""
    warm = max(1, int(steps * warmup))
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )


def _autocast(cfg: TrainConfig):
    """bfloat16 autocast for the forward pass (``--bf16``); master weights and optimizer stay
    float32."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16)


def _optimize(loss: torch.Tensor, trainable: list[nn.Parameter], optimizer, scheduler) -> None:
    """One optimizer step on ``loss``, gradients clipped to norm 1."""
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()


def _batches(n: int, batch_size: int, steps: int, rng: random.Random):
    order: list[int] = []
    for _ in range(steps):
        if len(order) < batch_size:
            fresh = list(range(n))
            rng.shuffle(fresh)
            order += fresh
        yield order[:batch_size]
        order = order[batch_size:]


def _encode(tokenizer, examples: list[Example], max_length: int) -> dict:
    firsts = [list(e.segments[0]) for e in examples]
    seconds = [list(e.segments[1]) for e in examples] if examples[0].is_pair else None
    return tokenizer(
        firsts,
        seconds,
        is_split_into_words=True,
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
