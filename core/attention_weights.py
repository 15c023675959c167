"""Every layer's attention weights from a pass that stops once the last layer's are read.

The attention methods (``attention_mean``, ``attention_rollout``) read the weights and nothing
after them: the last layer's output projection and feed-forward block, the pooler and the head
are wasted work (a quarter of a six-layer MiniLM's forward time on 2 CPU cores). The modules that
produce the weights are the ones transformers records as ``attentions`` (each model class's
``can_record_outputs``); a forward hook on each puts its weights in the request's capture list
(a ``ContextVar``, so concurrent requests on one shared eager view never see each other's), and
the last one's hook ends the pass by raising ``_AllWeightsRead``.

The hooks go on the eager view (``core.attention_view``), never on the shared model, once per
view. The first read on a view is checked against the whole pass with ``output_attentions=True``
(the same number of layers, the same weights): a model that calls one attention module for
several layers (ALBERT shares its layer) or runs layers in another order than it registers them
fails the check. Such a model, or one without recorded attention modules, is never read this
way: ``read_attention_weights`` returns None and the caller runs the whole pass. (The check's
whole pass, once per view and process, is not counted in the request's passes.)
"""

from __future__ import annotations

import threading
from contextvars import ContextVar

import torch

_capture: ContextVar[list[torch.Tensor | None] | None] = ContextVar("attention_capture", default=None)
_install_lock = threading.Lock()
_HOOKED = "_attention_weight_hooks"  # attribute of a hooked view: the number of hooked modules
_CHECKED = "_attention_weights_checked"  # attribute of a view: whether the early stop gives the whole pass's weights


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
    if getattr(view, _CHECKED, True) is False or _hooked_modules(view) == 0:
        return None
    captured = _stopped_pass(view, batch)
    if not hasattr(view, _CHECKED):
        whole = view(**batch, output_attentions=True).attentions or ()
        same = captured is not None and len(captured) == len(whole)
        same = same and all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(captured, whole, strict=True))
        setattr(view, _CHECKED, same)
        if not same:
            return None
    return captured


def _stopped_pass(view: torch.nn.Module, batch: dict[str, torch.Tensor]) -> list[torch.Tensor] | None:
    """The weights the hooks captured, or None when the pass did not end at the last hooked module
    with every module's weights."""
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
    if len(captured) != _hooked_modules(view) or any(weights is None for weights in captured):
        return None
    return [weights for weights in captured if weights is not None]
