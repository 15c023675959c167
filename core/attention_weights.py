"""Every layer's attention weights from a pass that stops once the last layer's are read.

The attention methods (``attention_mean``, ``attention_rollout``) read the weights and nothing
after them: the last layer's output projection and feed-forward block, the pooler and the head
are wasted work (a quarter of a six-layer MiniLM's forward time on 2 CPU cores). The modules that
produce the weights are the ones transformers records as ``attentions`` (each model class's
``can_record_outputs``); a forward hook on each puts its weights in the request's capture list
(a ``ContextVar``, so concurrent requests on one shared eager view never see each other's), and
the last one's hook ends the pass by raising ``_AllWeightsRead``.

The hooks go on the eager view (``core.attention_view``), never on the shared model, once per
view. When a model has no recorded attention modules, or the pass does not end as planned
(weights missing or ``None``, a module after the last one registered), ``read_attention_weights``
returns None and the caller runs the whole pass with ``output_attentions=True``.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar

import torch

_capture: ContextVar[list[torch.Tensor | None] | None] = ContextVar("attention_capture", default=None)
_install_lock = threading.Lock()
_HOOKED = "_attention_weight_hooks"  # attribute of a hooked view: the number of hooked modules


class _AllWeightsRead(Exception):
    """Raised by the last attention module's hook: every layer's weights are in."""


def recorded_attention_modules(model: torch.nn.Module) -> list[tuple[torch.nn.Module, int]]:
    """The modules whose outputs transformers records as attention weights, each with the index
    of the weights in its output tuple, in registration order (the layers' order)."""
    from transformers import PreTrainedModel
    from transformers.utils.output_capturing import OutputRecorder

    found: dict[int, tuple[torch.nn.Module, int]] = {}
    for prefix, sub in model.named_modules():
        if not isinstance(sub, PreTrainedModel):
            continue
        specs = sub.can_record_outputs.get("attentions")
        for spec in specs if isinstance(specs, list) else [specs] if specs is not None else []:
            if not isinstance(spec, OutputRecorder):
                named = isinstance(spec, str)
                spec = OutputRecorder(target_class=None if named else spec, index=1, class_name=spec if named else None)
            for name, module in sub.named_modules(prefix=prefix):
                dotted = f".{name}."
                by_class = spec.target_class is not None and isinstance(module, spec.target_class)
                by_name = spec.class_name is not None and dotted[:-1].endswith(spec.class_name)
                if not (by_class or by_name):
                    continue
                if spec.layer_name is not None and f".{spec.layer_name.strip('.')}." not in dotted:
                    continue
                found.setdefault(id(module), (module, spec.index))
    return list(found.values())


def _hook(index: int, last: bool):
    def record(module: torch.nn.Module, args, output) -> None:
        captured = _capture.get()
        if captured is None:
            return
        captured.append(output[index] if isinstance(output, tuple) and len(output) > index else None)
        if last:
            raise _AllWeightsRead

    return record


def _hooked_modules(view: torch.nn.Module) -> int:
    """Install the capture hooks on ``view`` once; the number of hooked modules."""
    if not hasattr(view, _HOOKED):
        with _install_lock:
            if not hasattr(view, _HOOKED):
                modules = recorded_attention_modules(view)
                for position, (module, index) in enumerate(modules):
                    module.register_forward_hook(_hook(index, position == len(modules) - 1))
                setattr(view, _HOOKED, len(modules))
    return getattr(view, _HOOKED)


def read_attention_weights(view: torch.nn.Module, batch: dict[str, torch.Tensor]) -> list[torch.Tensor] | None:
    """Every layer's attention weights (batch, heads, seq, seq) for ``batch``, the pass stopped
    after the last layer's; None when this model cannot be read that way (see the module)."""
    expected = _hooked_modules(view)
    if expected == 0:
        return None
    captured: list[torch.Tensor | None] = []
    token = _capture.set(captured)
    try:
        view(**batch)
    except _AllWeightsRead:
        pass
    else:
        return None  # the pass went on after the last hooked module: not the layers' order
    finally:
        _capture.reset(token)
    if len(captured) != expected or any(weights is None for weights in captured):
        return None
    return [weights for weights in captured if weights is not None]
