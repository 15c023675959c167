"""What a training run trains: each bundled task's recipe (``TASKS``: data, splits, steps,
learning rate, LoRA rank, input length) and one run's settings (``TrainConfig``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskSpec:
    dataset: str
    train_split: str
    report_split: str
    steps: int
    lr: float
    rank: int
    max_length: int


TASKS: dict[str, TaskSpec] = {
    "sst2": TaskSpec("sst2", "train", "dev", 1100, 5e-4, 16, 64),
    "esnli": TaskSpec("esnli", "test", "dev", 1000, 5e-4, 64, 128),
    "movies": TaskSpec("movies", "train", "test", 1000, 5e-4, 16, 64),
    "hatexplain": TaskSpec("hatexplain", "val", "test", 40, 5e-4, 16, 64),
    "mlm": TaskSpec("mlm", "", "dev", 2400, 1e-3, 64, 32),
    # regression and multi-label heads (core.train_heads): same data and budget class as hatexplain
    "hatexplain-score": TaskSpec("hatexplain", "val", "test", 40, 1e-3, 16, 64),
    "hatexplain-targets": TaskSpec("hatexplain", "val", "test", 300, 1e-3, 16, 64),
}


@dataclass
class TrainConfig:
    task: str
    steps: int
    seed: int
    batch_size: int = 32
    lr: float = 5e-4
    rank: int = 16
    alpha_over_rank: float = 2.0
    lora_dropout: float = 0.05
    warmup: float = 0.06
    weight_decay: float = 0.01
    max_length: int = 64
    train_limit: int | None = None
    eval_limit: int | None = None
    init_from: str | None = None
    bf16: bool = False
