"""The prediction as the head defines it (``core.heads``): one class with its softmax probability,
the set of labels whose own sigmoid reaches a threshold, or a regression head's score."""

from __future__ import annotations

from collections.abc import Sequence

import services
from core.types import DEFAULT_THRESHOLD
from ui.text import plain


def prediction_markdown(
    label_names: Sequence[str],
    outputs: Sequence[float],
    head: str,
    predicted: int,
    target: int,
    threshold: float = DEFAULT_THRESHOLD,
    gold: str | None = None,
) -> str:
    """Two markdown lines: what the model predicts, and the output the methods explain; a third
    with the example's ``gold`` label when it has one (names escaped, as a model's config or a
    dataset may name them anything). A gold label that is none of the model's (a dataset's class
    under a model of its target groups, or of a score) is named the dataset's label; one that is
    a model's label but for case or spaces counts as it, as a dataset run counts it."""
    names = [plain(n) for n in label_names]
    gold_line = ""
    if gold:
        gold_line = (
            f"  \n**Gold label:** {plain(gold)}"
            if services.is_model_class(gold, label_names)
            else f"  \n**Dataset label:** {plain(gold)} (not one of the model's labels)"
        )
    if head == "regression":
        return (
            f"**Score:** {names[target]} = {outputs[target]:.4f}  \n**Explaining:** the score of {names[target]}"
            + gold_line
        )
    if head == "multi_label":
        chosen = services.label_set(head, outputs, threshold)
        shown = ", ".join(f"{names[i]} ({outputs[i]:.1%})" for i in chosen) or "none"
        return (
            f"**Predicted labels** (probability ≥ {threshold:.0%}): {shown}  \n"
            f"**Explaining:** {names[target]} ({outputs[target]:.1%}, its own sigmoid)" + gold_line
        )
    return (
        f"**Predicted:** {names[predicted]} ({outputs[predicted]:.1%})  \n**Explaining:** {names[target]}" + gold_line
    )


def result_markdown(prediction, target: int, threshold: float = DEFAULT_THRESHOLD, gold: str | None = None) -> str:
    """``prediction_markdown`` of a page's ``services.PredictionResult``."""
    return prediction_markdown(
        prediction.label_names, prediction.probabilities, prediction.head, prediction.predicted, target, threshold, gold
    )
