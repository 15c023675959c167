"""The explained output: what a classifier's head means, decided once from its config.

A ``transformers`` sequence classifier returns logits; what they mean depends on the head
(``config.problem_type`` and ``config.num_labels``, as ``BertForSequenceClassification`` picks its
loss):

* ``single_label``: one softmax over the labels; the explained output of a label is its softmax
  probability, the prediction the argmax;
* ``multi_label``: one sigmoid per label (``problem_type == "multi_label_classification"``); the
  explained output of a label is its own sigmoid probability, the prediction the set of labels
  at or above a threshold (0.5 by default);
* ``regression``: the raw score (``problem_type == "regression"`` or one label without a
  problem type); the explained output is the score itself.

``Classifier.predict_proba`` (the one batched scorer) returns ``Head.outputs`` of the logits, so
every perturbation method and metric explains the output the model defines; gradient methods
differentiate ``Head.target_output``. A user may override the detected type (``head_type``) for
models whose config is wrong; the override lives on the per-request ``Classifier`` and never
changes the shared model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.types import DEFAULT_THRESHOLD, HEAD_TYPES

# Short names (the sidebar's head picker shows them in a narrow box; its help says what each means).
HEAD_LABELS = {
    "single_label": "single-label (softmax)",
    "multi_label": "multi-label (sigmoids)",
    "regression": "regression",
}
# An attack keeps a regression head's prediction when the score moves by at most this much.
SCORE_TOLERANCE = 0.05
_PROBLEM_TYPES = {
    "single_label_classification": "single_label",
    "multi_label_classification": "multi_label",
    "regression": "regression",
}
KINDS = tuple(_PROBLEM_TYPES.values())


@dataclass(frozen=True)
class Head:
    """The head type and its labels (for regression: the name of each score)."""

    kind: str
    label_names: tuple[str, ...]

    @property
    def is_probability(self) -> bool:
        """Outputs are probabilities in [0, 1] (softmax or sigmoid), so log-odds are defined."""
        return self.kind != "regression"

    def outputs(self, logits: torch.Tensor) -> torch.Tensor:
        """The explained output of every label, (batch, n_labels), from logits of that shape."""
        if self.kind == "single_label":
            return torch.softmax(logits, dim=-1)
        if self.kind == "multi_label":
            return torch.sigmoid(logits)
        return logits

    def target_output(self, logits: torch.Tensor, target: int | Sequence[int], output: str) -> torch.Tensor:
        """The differentiated output of ``target`` (one label, or one per row), (batch,): its
        probability (softmax or sigmoid) or its logit; a regression head's raw score either way
        (it is its own logit)."""
        values = logits if output == "logit" or self.kind == "regression" else self.outputs(logits)
        if isinstance(target, int):
            return values[:, target]
        return values.gather(1, torch.as_tensor(list(target), device=values.device).view(-1, 1))[:, 0]

    def transform(self, values: np.ndarray, output: str) -> np.ndarray:
        """Explained outputs in a method's score space: the probability, its log2-odds (Pham
        et al. 2022), or for a regression head the raw score whatever ``output`` asks."""
        values = np.asarray(values, dtype=np.float64)
        if output == "log_odds" and self.is_probability:
            return log2_odds(values)
        return values

    def predicted(self, outputs: np.ndarray) -> int:
        """The default target: the most probable label (single- and multi-label) or the first
        score."""
        return int(np.argmax(outputs)) if self.kind != "regression" else 0

    def label_set(self, outputs: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> tuple[int, ...]:
        """Labels the head predicts: the argmax (single-label), every label at or above
        ``threshold`` (multi-label); none for regression."""
        if self.kind == "single_label":
            return (int(np.argmax(outputs)),)
        if self.kind == "multi_label":
            return tuple(int(i) for i in np.flatnonzero(np.asarray(outputs) >= threshold))
        return ()

    def kept(self, original: np.ndarray, attacked: np.ndarray, target: int, tolerance: float | None = None) -> bool:
        """An attacked input keeps the prediction: the same class (single-label), the same label
        set at the default threshold (multi-label), a score within ``SCORE_TOLERANCE``
        (regression); with ``tolerance`` the target's output must also move by at most that much."""
        change = abs(float(attacked[target]) - float(original[target]))
        if self.kind == "regression":
            return change <= (SCORE_TOLERANCE if tolerance is None else tolerance)
        same = self.label_set(original) == self.label_set(attacked)
        return same and (tolerance is None or change <= tolerance)

    def require_probability(self, what: str) -> None:
        """Refuse ``what`` (a metric or option defined on probabilities) on a regression head."""
        if not self.is_probability:
            raise ValueError(
                f"{what} needs probabilities and is not defined for a regression head (raw score); "
                "use deletion, insertion, comprehensiveness or sufficiency, which measure the change in score"
            )


def detect_head(config: object, override: str | None = None, name: str = "the model") -> Head:
    """The head of a ``transformers`` config, or ``override`` (one of ``HEAD_TYPES``) when given.

    A config with no labels (``num_labels == 0``, or none at all) has no head to explain and is
    refused in one line naming what was found.
    """
    num_labels = int(getattr(config, "num_labels", 0) or 0)
    problem_type = getattr(config, "problem_type", None)
    if num_labels <= 0:
        architectures = ", ".join(getattr(config, "architectures", None) or []) or "unknown architecture"
        raise ValueError(
            f"{name} has no classification head to explain: num_labels={num_labels} "
            f"(problem_type={problem_type!r}, {architectures})"
        )
    if override is not None and override not in HEAD_TYPES:
        raise ValueError(f"unknown head type {override!r}; known: {', '.join(HEAD_TYPES)}")
    if override is not None:
        kind = override
    elif problem_type in _PROBLEM_TYPES:
        kind = _PROBLEM_TYPES[problem_type]
    else:
        kind = "regression" if num_labels == 1 else "single_label"
    if kind == "single_label" and num_labels == 1:
        raise ValueError(
            f"{name} has one output: a softmax over it is always 1, so it cannot be explained as "
            "single-label; use head type regression or multi_label"
        )
    id2label = getattr(config, "id2label", None) or {}
    names = tuple(str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(num_labels))
    return Head(kind, names)


def log2_odds(p: np.ndarray | float, eps: float = 1e-15) -> np.ndarray:
    """log2(p / (1 - p)) with p clipped to [eps, 1 - eps] (Pham et al.'s log-odds space). The
    probabilities are float64 from the logits, so ``eps`` sits near float64's resolution: with
    1e-7 every p above 1 - 1e-7 read as the same ±23.25, and leave-one-out found 0 for a word
    that moved a very confident model's probability from 1 - 1e-9 to 1 - 1e-12."""
    p = np.clip(np.asarray(p, dtype=np.float64), eps, 1 - eps)
    return np.log2(p / (1 - p))
