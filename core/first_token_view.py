"""A view of the shared model whose last encoder layer is computed at the first position only,
for the passes that read nothing but the logits.

A BERT-style sequence classifier reads its last layer at the first token alone: BERT's pooler
takes ``hidden[:, 0]``, and so do the classification heads of RoBERTa and ELECTRA. Every other
position of that layer feeds nothing: its query, its attention output and its feed-forward block
are computed and thrown away. The view (``core.attention_view.module_view``: its own modules,
the shared weights by identity) replaces the last layer by ``FirstTokenLayer``, which computes
the keys and values at every position (the first token attends to all of them) and the rest at
the first position only, so the logits are the full model's to float rounding and the last
layer costs about a sixth of its work. On MiniLM (6 layers) a forward pass of 32 sentences is
about 10% faster on 2 CPU cores, a backward pass through it likewise (BENCHMARKS.md).

The replacement needs BERT's layer structure (``attention.self`` with ``query``, ``key`` and
``value``; ``attention.output``; ``intermediate``; ``output``), and its result is checked against
the full model on a padded probe batch when the view is built: a model of another structure,
one whose head reads other positions (mean pooling, the last token), or one that fails the check
in any way keeps its full forward pass (``first_token_view`` returns None).
"""

from __future__ import annotations

import torch
from torch import nn

from core.attention_view import module_view

# The largest difference from the full model's logits the probe accepts (float32 rounding of a
# different summation order is about 1e-6).
CHECK_TOLERANCE = 1e-4
# Model types whose sequence-classification head reads the first position of the last layer.
_FIRST_TOKEN_HEADS = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "electra"})


class FirstTokenLayer(nn.Module):
    """A BERT encoder layer that returns its output at the first position only, ``(batch, 1, dim)``:
    keys and values at every position, the query, attention output and feed-forward block at the
    first. Same weights, same attention kernel (``config._attn_implementation``) as the layer."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, *args, **kwargs):
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
        from transformers.models.bert.modeling_bert import eager_attention_forward

        attention = self.layer.attention.self
        batch, length, _ = hidden_states.shape
        first = hidden_states[:, :1]

        def heads(states: torch.Tensor, rows: int) -> torch.Tensor:
            return states.view(batch, rows, -1, attention.attention_head_size).transpose(1, 2)

        query = heads(attention.query(first), 1)
        key = heads(attention.key(hidden_states), length)
        value = heads(attention.value(hidden_states), length)
        if attention_mask is not None and attention_mask.shape[-2] != 1:
            attention_mask = attention_mask[..., :1, :]  # the first query's row of a (batch, 1, q, k) mask
        kernel = ALL_ATTENTION_FUNCTIONS.get_interface(attention.config._attn_implementation, eager_attention_forward)
        context, _ = kernel(attention, query, key, value, attention_mask, dropout=0.0, scaling=attention.scaling)
        attended = self.layer.attention.output(context.reshape(batch, 1, -1).contiguous(), first)
        return self.layer.output(self.layer.intermediate(attended), attended)


def _last_layer_slot(model: nn.Module) -> tuple[nn.ModuleList, int] | None:
    """The encoder's layer list and the last layer's index, for a model of BERT's layer
    structure."""
    if getattr(model.config, "model_type", None) not in _FIRST_TOKEN_HEADS:
        return None
    layers = getattr(getattr(model.base_model, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        return None
    last = layers[-1]
    attention = getattr(getattr(last, "attention", None), "self", None)
    parts = (
        getattr(last, "intermediate", None),
        getattr(last, "output", None),
        getattr(last.attention, "output", None),
    )
    needed = ("query", "key", "value", "attention_head_size", "scaling", "config")
    if attention is None or any(p is None for p in parts) or not all(hasattr(attention, a) for a in needed):
        return None
    if getattr(last, "add_cross_attention", False) or getattr(model.config, "is_decoder", False):
        return None
    return layers, len(layers) - 1


def _probe(model: nn.Module) -> dict[str, torch.Tensor]:
    """Two rows of different lengths (the second padded), ids drawn from the vocabulary's middle."""
    device = next(model.parameters()).device
    vocab = int(getattr(model.config, "vocab_size", 1000))
    ids = torch.arange(7, device=device).repeat(2, 1) * 13 % max(vocab // 2, 1) + vocab // 4
    attention = torch.ones_like(ids)
    attention[1, 4:] = 0
    return {"input_ids": ids, "attention_mask": attention}


def first_token_view(model: nn.Module) -> nn.Module | None:
    """A view of ``model`` with its last layer computed at the first position only, or None when
    the model does not fit (see the module) or its logits differ from the full model's."""
    slot = _last_layer_slot(model)
    if slot is None:
        return None
    view = module_view(model)
    layers, index = _last_layer_slot(view)  # the view's own layer list: the shared model keeps its layers
    layers[index] = FirstTokenLayer(layers[index])
    try:
        probe = _probe(model)
        with torch.inference_mode():
            full = model(**probe).logits.float()
            pruned = view(**probe).logits.float()
    except Exception:  # noqa: BLE001 - any failure means: keep the full model
        return None
    if pruned.shape != full.shape or not torch.allclose(pruned, full, atol=CHECK_TOLERANCE, rtol=0):
        return None
    return view
