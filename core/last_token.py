"""Logits of a decoder classifier read at each row's last real token, so that its padded rows
share a pass.

A decoder sequence classifier (GPT-2, Llama, Mistral, Qwen2, ... ``ForSequenceClassification``)
scores the hidden state at the last real position of a row. transformers finds that position from
the config's ``pad_token_id`` in ``input_ids``; with ``inputs_embeds`` it reads the last position,
padding or not, and without a ``pad_token_id`` it refuses batches of more than one row. Such a
model's rows of different lengths then went one length per pass, or one row per pass
(``core.padding``).

Its attention is causal, so the real positions of a right-padded row never see the padding: the
hidden state at the last real position (read from the attention mask) is the one the row gets
alone. ``last_token_logits`` runs the decoder (``model.base_model``) and applies the head
(``model.score``) there, for token ids and embeddings alike, on the shared model or on any view of
it (``core.attention_view.module_view`` keeps both attributes). ``reads_last_token`` tells whether
a model is one of these: it has the two parts, and its logits from them equal transformers' own on
a probe, each row alone and the rows padded together.
"""

from __future__ import annotations

import torch
from torch import nn

# The largest difference from transformers' logits the probe accepts (float32 rounding of a
# different summation order is about 1e-6).
CHECK_TOLERANCE = 1e-4


def last_token_logits(model: nn.Module, attention_mask: torch.Tensor, **inputs: torch.Tensor) -> torch.Tensor:
    """The head's logits at each row's last real position (``attention_mask``: right padding)."""
    hidden = model.base_model(attention_mask=attention_mask, **inputs)[0]
    last = attention_mask.sum(-1) - 1
    return model.score(hidden[torch.arange(hidden.shape[0], device=hidden.device), last])


def reads_last_token(model: nn.Module) -> bool:
    """Whether ``model`` is a decoder classifier whose logits ``last_token_logits`` computes (see
    the module): checked against transformers' logits of two probe rows, alone and padded together,
    as token ids and as embeddings. Any failure means no."""
    score = getattr(model, "score", None)
    base = getattr(model, "base_model", model)
    if not isinstance(score, nn.Linear) or base is model or getattr(model.config, "is_encoder_decoder", False):
        return False
    device = next(model.parameters()).device
    vocab = int(getattr(model.config, "vocab_size", 1000))
    ids = torch.arange(7, device=device).repeat(2, 1) * 13 % max(vocab // 2, 1) + vocab // 4
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0  # the second row is four tokens long, padded to seven
    try:
        with torch.inference_mode(), torch.autocast(device.type, enabled=False):
            alone = torch.cat([model(input_ids=ids[:1]).logits, model(input_ids=ids[1:, :4]).logits]).float()
            embeds = model.get_input_embeddings()(ids)
            found = [
                last_token_logits(model, mask, input_ids=ids).float(),
                last_token_logits(model, mask, inputs_embeds=embeds).float(),
            ]
    except Exception:  # noqa: BLE001 - any failure means: not a model of this kind
        return False
    return all(f.shape == alone.shape and torch.allclose(f, alone, atol=CHECK_TOLERANCE, rtol=0) for f in found)
