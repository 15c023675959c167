"""An eager-attention view of a shared model: the same weight tensors, its own modules and config.

Models load with transformers' default attention, the fused kernel where the architecture has
one (``sdpa``: PyTorch's ``scaled_dot_product_attention``, flash attention on a GPU; eager
otherwise). The fused kernel returns no attention weights, and on the CPU it has no second
derivative. The requests that need either (the methods whose registry entry declares
``needs_attention_weights``, and double back-propagation) run on this view instead.

transformers reads ``config._attn_implementation`` at every forward pass, and every module of a
model refers to one config object, so switching the shared model (``set_attn_implementation``)
would switch every concurrent request with it. The view is a deep copy of the module tree that
keeps the parameters and buffers by identity (a ``deepcopy`` memo holding each tensor): it costs
no weight memory, follows the shared model's device, and has its own config (set to eager) and
its own hook dictionaries, so the capture hooks transformers installs on the first
``output_attentions=True`` call land on the view, never on the shared model.
"""

from __future__ import annotations

import copy
import itertools

import torch

EAGER = "eager"


def attention_implementation(model: torch.nn.Module) -> str | None:
    """The model's attention implementation as transformers records it (None for a model without
    one)."""
    config = getattr(model, "config", None)
    return getattr(config, "_attn_implementation", None)


def module_view(model: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``model``'s module tree that keeps every parameter and buffer by identity:
    its own modules, hooks and config at no weight memory (about 8 ms for MiniLM, where a full
    ``deepcopy`` takes 50 ms warm and about a second cold). For callers that hook or reconfigure
    modules but never write a weight."""
    shared: dict[int, object] = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
    return copy.deepcopy(model, memo=shared)


def eager_view(model: torch.nn.Module) -> torch.nn.Module:
    """A view of ``model`` with eager attention, sharing every parameter and buffer (see module)."""
    view = module_view(model)
    current = attention_implementation(view)
    if current is not None and current != EAGER and hasattr(view, "set_attn_implementation"):
        view.set_attn_implementation(EAGER)  # the view's own config; a model that cannot switch keeps its kernel
    return view
