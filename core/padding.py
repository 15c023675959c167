"""Whether a model reads padded rows as it reads them alone, and which rows share a pass when not.

The scorer and the gradient passes pad a batch's rows to its longest and mask the padding. An
encoder classifier (BERT, RoBERTa, ELECTRA, ...) then gives each row the logits it gets alone. A
decoder classifier (GPT-2, Llama, ... ``ForSequenceClassification``) reads its last real position
instead, which transformers finds through the config's ``pad_token_id``: in ``input_ids`` only when
the tokenizer pads with that id, and in ``inputs_embeds`` never (it reads the last position, padding
or not). Without a ``pad_token_id`` it refuses batches of more than one row. The classifier reads
such a model's logits at each row's last real token itself (``core.last_token``), which pads safely.

``padding_rule`` finds out once per loaded model by running a padded probe batch against each of
its rows alone, as token ids and as embeddings, through ``Classifier.logits_of``, and ``in_parts``
splits a batch by that rule: ``PADS`` (one pass), ``SAME_LENGTH`` (one pass per length, no
padding) or ``ONE_ROW``; the last two remain for a model of another structure that fails the
probe."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from core.encoding import PROBE_WORDS
from core.types import Example

if TYPE_CHECKING:
    from core.classifier import Classifier
    from core.encoding import Variant
    from core.loaded import LoadedClassifier

PADS, SAME_LENGTH, ONE_ROW = "pads", "same length", "one row"
_PROBE_TEXTS = (("good",), PROBE_WORDS)  # two lengths
# The largest difference from a row's own logits that still counts as the same (float32 rounding
# of another summation order is about 1e-6).
_TOLERANCE = 1e-4


def padded_batch(loaded: LoadedClassifier, chunk: Sequence[Variant]) -> dict[str, torch.Tensor]:
    """The model's input tensors of a chunk of variants, padded to its longest with the tokenizer's
    pad id and masked. A variant longer than the model accepts (a text at the limit whose word was
    replaced by a fill-in of more pieces) keeps its first ``max_length - 1`` tokens and its last."""
    limit = loaded.max_length
    tokenizer: Any = loaded.tokenizer
    pad = tokenizer.pad_token_id or 0
    rows = [(v.input_ids, v.token_type_ids) if v.input_ids else _no_text(tokenizer) for v in chunk]
    width = min(max(len(row_ids) for row_ids, _ in rows), limit)
    ids, types, mask = [], [], []
    for row_ids, row_types in rows:
        if len(row_ids) > limit:
            row_ids, row_types = row_ids[: limit - 1] + row_ids[-1:], row_types[: limit - 1] + row_types[-1:]
        padding = width - len(row_ids)
        ids.append((*row_ids, *[pad] * padding))
        types.append((*row_types, *[0] * padding))
        mask.append([1] * len(row_ids) + [0] * padding)
    batch = {"input_ids": ids, "attention_mask": mask}
    if uses_token_types(loaded.model):
        batch["token_type_ids"] = types
    return {k: torch.tensor(rows, dtype=torch.long).to(loaded.device) for k, rows in batch.items()}


def _no_text(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids and segment ids a row without tokens is read as: one token that marks a text's
    bounds (BOS, else EOS, pad or unknown). Only a tokenizer that adds no special tokens (GPT-2's)
    leaves a row empty, when every word is removed (LIME's, KernelSHAP's empty samples, the end of
    a deletion curve); BERT's keeps [CLS] [SEP]."""
    for token_id in (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id, tokenizer.unk_token_id):
        if token_id is not None:
            return (token_id,), (0,)
    raise ValueError("the tokenizer has no special token to read a text without words as")


def uses_token_types(model: torch.nn.Module) -> bool:
    """Whether the model reads segment ids (token type ids) other than 0."""
    return getattr(model.config, "type_vocab_size", 0) > 1


def padding_rule(clf: Classifier) -> str:
    """How rows of different lengths may share a pass on ``clf``'s model (module docstring). The
    probe's passes run outside autocast and are not counted."""
    pair = clf.loaded.pair is True
    variants = [clf.encode(Example((words, words) if pair else (words,))).variant for words in _PROBE_TEXTS]
    model = clf.logits_model
    with torch.inference_mode(), torch.autocast(clf.device.type, enabled=False):
        alone = torch.cat([clf.logits_of(model, padded_batch(clf.loaded, [v])) for v in variants])
        batch = padded_batch(clf.loaded, variants)
        rest = {key: t for key, t in batch.items() if key != "input_ids"}
        try:
            found = [
                clf.logits_of(model, batch),
                clf.logits_of(model, {"inputs_embeds": clf.input_embeddings(batch["input_ids"]), **rest}),
            ]
        except ValueError:  # transformers: "Cannot handle batch sizes > 1 if no padding token is defined."
            return ONE_ROW
    same = all(torch.allclose(logits, alone, rtol=_TOLERANCE, atol=_TOLERANCE) for logits in found)
    return PADS if same else SAME_LENGTH


def parts(rule: str, lengths: Sequence[int]) -> list[list[int]]:
    """The positions of the rows that share each pass under ``rule``: all of them where the model
    pads safely, else the rows of each length (one row each where the model refuses batches)."""
    if rule == PADS or (rule == SAME_LENGTH and len(set(lengths)) <= 1):
        return [list(range(len(lengths)))]
    if rule == ONE_ROW:
        return [[i] for i in range(len(lengths))]
    by_length: dict[int, list[int]] = {}
    for i, length in enumerate(lengths):
        by_length.setdefault(length, []).append(i)
    return list(by_length.values())


def in_parts(rule: Callable[[], str], lengths: Sequence[int], run: Callable[[list[int]], torch.Tensor]) -> torch.Tensor:
    """``run`` (the outputs of the rows at the given positions, in that order) over the ``parts``
    of a batch, put back in the batch's order; gradients flow through. ``rule`` is asked only for a
    batch of several rows."""
    found = parts(rule(), lengths) if len(lengths) > 1 else [[0]]
    if len(found) == 1:
        return run(found[0])
    outputs = torch.cat([run(rows) for rows in found])
    order = torch.tensor([i for rows in found for i in rows], device=outputs.device)
    return outputs[torch.argsort(order)]
