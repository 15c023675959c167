"""What the mask optimisers (explainers/marc.py, explainers/aml/) share: blending word embeddings
toward a filler token's embedding, padded batches of several examples (both optimise several
examples in one batch), rationale spans of a word mask and their trace records; and the input
embeddings of token ids (``embed_ids``, also used by explainers/gradients.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.classifier import Classifier
from core.encoding import Encoded

EPS = 1e-6


def trace_row(trace: dict[str, list[float]], **values: float) -> None:
    for key, value in values.items():
        trace.setdefault(key, []).append(float(value))


def rationale_spans(mask: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Maximal runs of words whose mask is at least ``threshold``, as ``(start, end)`` (end
    exclusive)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, value in enumerate(np.asarray(mask)):
        if value >= threshold and start is None:
            start = i
        elif value < threshold and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(mask)))
    return spans


def span_extras(mask: np.ndarray, threshold: float) -> dict[str, Any]:
    spans = rationale_spans(mask, threshold)
    rationale = np.zeros(len(mask), dtype=int)
    for start, end in spans:
        rationale[start:end] = 1
    return {"rationale": rationale.tolist(), "rationale_spans": [list(s) for s in spans], "span_threshold": threshold}


def token_word_index(encoded: Encoded, device: torch.device) -> torch.Tensor:
    """(seq,) word index of each token, ``n_words`` for special tokens (they index a constant 1)."""
    return torch.tensor([encoded.n_words if w is None else w for w in encoded.word_ids], device=device)


def embed_ids(clf: Classifier, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return clf.input_embeddings(torch.tensor([ids])).detach()  # (1, len(ids), dim)


def special_embedding(clf: Classifier, choices: tuple[str, ...]) -> torch.Tensor:
    """(dim,) input embedding of the first special token of ``choices`` the tokenizer has."""
    for name in choices:
        token = clf.special_tokens[name]
        if token is not None:
            return embed_ids(clf, [token])[0, 0]
    raise ValueError(f"{clf.name} has none of the tokens {', '.join(f'[{c.upper()}]' for c in choices)}")


def blend(embeds: torch.Tensor, fill: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``keep * embeds + (1 - keep) * fill``; embeds (..., seq, dim), keep (..., seq), fill
    (dim,)."""
    keep = keep.unsqueeze(-1)
    return keep * embeds + (1 - keep) * fill


@dataclass(frozen=True)
class Batch:
    """Padded encodings: ids, types, attention (1 on tokens) and word flags (1 on word tokens)."""

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    word_flags: torch.Tensor

    @staticmethod
    def of(encodings: list[Encoded], pad_id: int, device: torch.device) -> Batch:
        width = max(len(e.input_ids) for e in encodings)
        ids = torch.full((len(encodings), width), pad_id, dtype=torch.long)
        types = torch.zeros_like(ids)
        attention = torch.zeros_like(ids)
        words = torch.zeros(ids.shape, dtype=torch.bool)
        for row, e in enumerate(encodings):
            n = len(e.input_ids)
            ids[row, :n] = torch.tensor(e.input_ids)
            types[row, :n] = torch.tensor(e.token_type_ids)
            attention[row, :n] = 1
            words[row, :n] = torch.tensor([w is not None for w in e.word_ids])
        return Batch(ids.to(device), types.to(device), attention.to(device), words.to(device))


def padded(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """Per-example tensors (..., seq_i, dim) zero-padded along the sequence to ``width`` and
    concatenated along the first axis."""
    return torch.cat([torch.nn.functional.pad(r, (0, 0, 0, width - r.shape[-2])) for r in rows])


def groups(count: int, size: int) -> list[range]:
    """``range(count)`` cut into consecutive groups of at most ``size`` (at least 1)."""
    size = max(1, size)
    return [range(start, min(count, start + size)) for start in range(0, count, size)]


def rng_devices(clf: Classifier) -> list[int]:
    return [clf.device.index or 0] if clf.device.type == "cuda" else []
