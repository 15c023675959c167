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
and the baseline together (two of each). The convergence delta is computed from that pass's
outputs, ``sum(scores) - (f(x) - f(b))``, as Captum defines it (Captum's own delta would run the
input and the baseline through the model a second time). Several examples (``explain_batch``: a
dataset run) share that one model call, padded and masked.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from core.attention_view import module_view
from core.classifier import Classifier
from core.devices import is_out_of_memory
from core.encoding import Variant, length_chunks
from core.params import param
from core.types import Attribution, Example
from explainers.base import one_example
from explainers.gradients import OUTPUTS, padded_baselines, padded_embeddings, to_attribution


@dataclass(frozen=True)
class DeepLiftParams:
    baseline: str = param("pad", "embedding every word token starts from", choices=("pad", "mask", "zero"))
    output: str = param("logit", "explain the target logit or probability", choices=OUTPUTS)


class _TargetOutput(nn.Module):
    """The classifier as a module from input embeddings to each row's target output (Captum's
    DeepLift takes a module, and hooks its pre-forward to pair inputs with baselines). The rows
    are the examples', right-padded and masked (``Classifier.forward_embeds``, which counts each
    pass for its example); Captum sends the inputs and their baselines through together, so a
    call has twice the examples' rows: their layouts, owners and targets repeated twice. The
    outputs of the last call are kept (``outputs``) for the convergence delta."""

    def __init__(
        self,
        model: nn.Module,
        clf: Classifier,
        layouts: list[Variant],
        owners: list[int],
        targets: list[int],
        output: str,
    ) -> None:
        super().__init__()
        self.model = model
        self.clf, self.layouts, self.owners, self.targets, self.output = clf, layouts, owners, targets, output
        self.outputs: torch.Tensor | None = None

    def forward(self, embeds: torch.Tensor) -> torch.Tensor:
        times = embeds.shape[0] // len(self.layouts)
        logits = self.clf.forward_embeds(embeds, self.layouts * times, owners=self.owners * times, model=self.model)
        outputs = self.clf.head.target_output(logits, self.targets * times, self.output)
        self.outputs = outputs.detach()
        return outputs


def rescaled_modules(model: nn.Module) -> list[str]:
    """Names of the modules Captum's DeepLift gives its Rescale (or softmax / max-pool) rule."""
    from captum.attr._core.deep_lift import SUPPORTED_NON_LINEAR

    return [name for name, module in model.named_modules() if type(module) in SUPPORTED_NON_LINEAR]


def explain_batch(
    clf: Classifier,
    examples: Sequence[Example],
    targets: Sequence[int],
    params: DeepLiftParams,
    *,
    mlm=None,
    progress=None,
) -> list[Attribution]:
    """DeepLIFT of several examples: one Captum call per chunk of examples of similar length,
    their inputs and baselines right-padded with [PAD]'s embedding (equal in both, so padding
    contributes nothing) and masked, each example getting the scores and delta it gets alone."""
    from captum.attr import DeepLift

    encodings = [clf.encode(example) for example in examples]
    base = clf.logits_model
    rescaled = rescaled_modules(base)
    model = module_view(base) if rescaled else base
    out: dict[int, Attribution] = {}
    # inputs and baselines go through together: half the batch size in examples
    for rows in length_chunks([len(e.input_ids) for e in encodings], clf.batch_size // 2):
        chunk = [encodings[i] for i in rows]
        inputs = padded_embeddings(clf, chunk)
        baselines = padded_baselines(clf, chunk, inputs, params.baseline)
        module = _TargetOutput(model, clf, [e.variant for e in chunk], rows, [targets[i] for i in rows], params.output)
        try:
            with torch.enable_grad(), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Setting forward, backward hooks")
                attributions = DeepLift(module).attribute(inputs.clone().requires_grad_(True), baselines=baselines)
        except (AssertionError, RuntimeError) as error:
            if is_out_of_memory(error):
                raise  # the runner halves the batch and runs the method again
            raise ValueError(f"DeepLIFT (Captum) cannot explain {clf.name}: {error}") from error
        assert module.outputs is not None and module.outputs.shape[0] == 2 * len(chunk)
        delta = attributions.detach().sum((1, 2)) - (module.outputs[: len(chunk)] - module.outputs[len(chunk) :])
        for r, (i, encoded) in enumerate(zip(rows, chunk, strict=True)):
            token_scores = attributions[r, : len(encoded.input_ids)].detach().sum(-1).cpu().double().numpy()
            out[i] = to_attribution(
                examples[i],
                targets[i],
                clf,
                encoded,
                token_scores,
                convergence_delta=float(delta[r].abs()),
                rescaled_modules=rescaled,
            )
    return [out[i] for i in range(len(examples))]


explain = one_example(explain_batch)
