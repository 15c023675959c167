"""GradientSHAP (expected gradients) on the input word embeddings, through Captum's
``GradientShap``.

Lundberg & Lee 2017 (arXiv:1705.07874) define SHAP values; Erion et al. 2019 (arXiv:1906.10670)
approximate them for differentiable models by expected gradients, which Captum implements as
``GradientShap``: each of ``n_samples`` draws picks a baseline at random from a set, a point
``b + alpha (x - b)`` with ``alpha ~ U(0, 1)`` on the straight path to the input (plus Gaussian
noise of ``noise`` times the word embeddings' spread, none by default), and multiplies the
gradient of the target output there by ``x - b``; the attributions are the mean. In expectation
their sum is ``f(x) - E_b f(b)`` (completeness over the baseline set), reported in extras with
Captum's convergence delta.

The baseline set is where every word token's embedding is the [PAD] embedding, the [MASK]
embedding or zero (special tokens kept, as ``integrated_gradients`` builds them), or just one
of them. Captum draws the baselines and ``alpha`` from numpy's global generator and the noise
from torch's, seeded with ``seed`` in ``core.global_rng.seeded_globals`` (global states restored).
All draws go through one forward and backward batch. A word's score is the sum of its
subwords'. Cost: ``n_samples`` forward+backward passes and one forward pass per baseline and
one on the input for the completeness figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.classifier import Classifier
from core.global_rng import seeded_globals
from core.params import param, seed_param
from core.types import Attribution, Example
from explainers._masking import rng_devices
from explainers.base import Passes
from explainers.gradients import OUTPUTS, baseline_embeddings, embed, to_attribution
from explainers.noise_tunnel import noise_stdev

BASELINES = ("pad", "mask", "zero")


@dataclass(frozen=True)
class GradientShapParams:
    n_samples: int = param(50, "random (baseline, path point) draws", min=1, max=2000)
    baselines: str = param(
        "all", "baseline set: [PAD], [MASK] and zero embeddings, or one of them", choices=("all", *BASELINES)
    )
    noise: float = param(0.0, "noise standard deviation as a fraction of the word embeddings' spread", min=0.0, max=2.0)
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)
    seed: int = seed_param()


def baseline_set(clf: Classifier, encoded, choice: str) -> torch.Tensor:
    """(k, seq, dim): the chosen baselines the tokenizer has tokens for."""
    names = BASELINES if choice == "all" else (choice,)
    available = [name for name in names if name == "zero" or clf.special_tokens[name] is not None]
    if not available:
        raise ValueError(f"{clf.name} has no [{choice.upper()}] token for the baseline")
    return torch.cat([baseline_embeddings(clf, encoded, name) for name in available])


def explain(
    clf: Classifier, example: Example, target: int, params: GradientShapParams, *, mlm=None, progress=None
) -> Attribution:
    from captum.attr import GradientShap

    encoded = clf.encode(example)
    inputs = embed(clf, encoded)
    baselines = baseline_set(clf, encoded, params.baselines)

    def forward(embeds: torch.Tensor) -> torch.Tensor:
        return clf.head.target_output(clf.forward_embeds(embeds, encoded.variant), target, params.output)

    with torch.enable_grad(), seeded_globals(params.seed, rng_devices(clf)):
        attributions = GradientShap(forward).attribute(
            inputs,
            baselines=baselines,
            n_samples=params.n_samples,
            stdevs=noise_stdev(encoded, inputs, params.noise),
        )
    with torch.no_grad():
        values = forward(torch.cat([inputs, baselines])).double().cpu().numpy()
    token_scores = attributions[0].detach().sum(-1).cpu().double().numpy()
    extras = {
        "full_value": float(values[0]),
        "baseline_values": values[1:].tolist(),
        "sum_of_scores": float(token_scores[encoded.scored_positions].sum()),
        "expected_sum": float(values[0] - values[1:].mean()),
    }
    return to_attribution(example, target, clf, encoded, token_scores, **extras)


def passes(n_words: int, params: GradientShapParams) -> Passes:
    """Cost model: ``n_samples`` forward+backward passes, and at most four forward passes (the
    input and three baselines) for the completeness figures."""
    return Passes(classifier=params.n_samples + 1 + len(BASELINES), backward=params.n_samples)
