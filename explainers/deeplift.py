"""DeepLIFT on the input word embeddings (Shrikumar et al. 2017, arXiv:1704.02685), through
Captum's ``DeepLift`` (Rescale rule).

DeepLIFT explains ``f(x) - f(b)`` by back-propagating multipliers: through an element-wise
non-linearity the multiplier is ``(y(x) - y(b)) / (x - b)`` instead of the gradient (Rescale),
through linear layers it is the weight. The scores are the multipliers times ``x - b`` summed
over the embedding coordinates; a word's score is the sum of its subwords'. The baseline is the
[PAD] embedding, the [MASK] embedding or zero on every word token (special tokens kept), as for
``integrated_gradients``; by default the target's logit is explained (the softmax of the output
is another non-linearity DeepLIFT has no exact rule for).

What this architecture does to it. Captum applies the Rescale rule only to non-linearities that
are modules of the types it knows (``nn.ReLU``, ``nn.Tanh``, ``nn.Sigmoid``, ``nn.Softmax``, ...):
in a BERT-style classifier that is the pooler's ``tanh``. Everything else gets the plain
gradient: the GELU of the feed-forward blocks (transformers' ``GELUActivation`` calls the
functional ``gelu``), the attention softmax (functional), LayerNorm's division by the standard
deviation and the products of queries, keys and values, which DeepLIFT's rules (written for
dense and convolutional networks) do not cover. So on a transformer the scores are a hybrid of
DeepLIFT and gradient x (input - baseline), and they need not add up to ``f(x) - f(b)``: Captum's
convergence delta (the gap) is in extras. On a network built only of linear maps and known
non-linearities the gap is zero up to rounding.

Captum registers hooks on the model's non-linear modules and keeps state on them during a call,
which would reach any other request running on the shared model at the same time; so when the
model has such a module the call runs on a private copy of its module tree
(``core.attention_view.module_view``: its own modules and hooks, the shared weights by identity,
which Captum only reads; the shared model's modules are never touched). Captum cannot explain a
model that calls one of those modules more than once in a forward pass; that, and any other
refusal of Captum's, is raised as a ValueError. Cost: one forward and backward pass on the input
and the baseline together (two of each), then one forward pass of each for the delta (four
forward, two backward).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import nn

from core.attention_view import module_view
from core.classifier import Classifier
from core.encoding import Variant
from core.params import param
from core.types import Attribution, Example
from explainers.gradients import OUTPUTS, baseline_embeddings, embed, to_attribution


@dataclass(frozen=True)
class DeepLiftParams:
    baseline: str = param("pad", "embedding every word token starts from", choices=("pad", "mask", "zero"))
    output: str = param("logit", "explain the target logit or probability", choices=OUTPUTS)


class _TargetOutput(nn.Module):
    """The classifier as a module from input embeddings to the target output (Captum's DeepLift
    takes a module, and hooks its pre-forward to pair inputs with baselines)."""

    def __init__(self, model: nn.Module, clf: Classifier, variant: Variant, target: int, output: str) -> None:
        super().__init__()
        self.model = model
        self.clf, self.variant, self.target, self.output = clf, variant, target, output

    def forward(self, embeds: torch.Tensor) -> torch.Tensor:
        n = embeds.shape[0]
        batch = {"attention_mask": torch.ones((n, len(self.variant.input_ids)), dtype=torch.long, device=embeds.device)}
        if self.clf._uses_token_types():
            batch["token_type_ids"] = torch.tensor([self.variant.token_type_ids] * n, device=embeds.device)
        logits = self.model(inputs_embeds=embeds, **batch).logits
        return self.clf.head.target_output(logits, self.target, self.output)


def rescaled_modules(model: nn.Module) -> list[str]:
    """Names of the modules Captum's DeepLift gives its Rescale (or softmax / max-pool) rule."""
    from captum.attr._core.deep_lift import SUPPORTED_NON_LINEAR

    return [name for name, module in model.named_modules() if type(module) in SUPPORTED_NON_LINEAR]


def explain(
    clf: Classifier, example: Example, target: int, params: DeepLiftParams, *, mlm=None, progress=None
) -> Attribution:
    from captum.attr import DeepLift

    encoded = clf.encode(example)
    inputs = embed(clf, encoded)
    baseline = baseline_embeddings(clf, encoded, params.baseline)
    rescaled = rescaled_modules(clf.model)
    model = module_view(clf.model) if rescaled else clf.model
    module = _TargetOutput(model, clf, encoded.variant, target, params.output)
    try:
        with torch.enable_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Setting forward, backward hooks")
            attributions, delta = DeepLift(module).attribute(
                inputs.clone().requires_grad_(True), baselines=baseline, return_convergence_delta=True
            )
    except (AssertionError, RuntimeError) as error:
        raise ValueError(f"DeepLIFT (Captum) cannot explain {clf.name}: {error}") from error
    # The input and the baseline forward and backward together (one call), then each forward again
    # for the delta (two calls).
    clf.forward_passes += 4
    clf.backward_passes += 2
    clf.model_calls += 3
    token_scores = attributions[0].detach().sum(-1).cpu().double().numpy()
    return to_attribution(
        example,
        target,
        clf,
        encoded,
        token_scores,
        convergence_delta=float(delta.abs().max()),
        rescaled_modules=rescaled,
    )
