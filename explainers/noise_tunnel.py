"""SmoothGrad, VarGrad and SmoothGrad over integrated gradients, through Captum's ``NoiseTunnel``.

* ``smoothgrad`` (Smilkov et al. 2017, arXiv:1706.03825): the gradient of the target output with
  respect to the input embeddings, averaged over ``n_samples`` copies of the input with Gaussian
  noise added (Captum ``NoiseTunnel(Saliency)``, ``nt_type="smoothgrad"``, signed gradients);
  each token's mean gradient is then reduced as ``saliency`` reduces it (L2 norm, a word's score
  the norm of all its subwords' mean gradients, or the signed sum);
* ``vargrad`` (Adebayo et al. 2018, arXiv:1810.03307): the per-coordinate variance of those
  noisy gradients (``nt_type="vargrad"``), summed over the embedding coordinates and a word's
  subwords (a variance has no sign, so no reduction choice);
* ``smoothgrad_ig`` (Smilkov et al. 2017 applied to Sundararajan et al. 2017): integrated
  gradients (Captum ``IntegratedGradients``, the baselines of ``integrated_gradients``) averaged
  over noisy inputs; word = sum of its subwords. It costs ``n_samples x n_steps`` passes.

The noise's standard deviation is ``noise`` times the spread (max - min) of the example's word
embeddings, the paper's "noise level" sigma / (x_max - x_min) (the paper finds 10-20% best on
images). Noise is added to every token's embedding, special tokens included, as Captum does. All
noisy copies go through one forward and backward batch (for integrated gradients, chunks of the
classifier's batch size), the noise drawn once from torch's generator seeded with ``seed``
(``core.global_rng``), so the scores do not depend on the batch size. With ``noise=0``
SmoothGrad is saliency and SmoothGrad-IG is integrated gradients. Cost: ``n_samples``
forward+backward passes (SmoothGrad, VarGrad); ``n_samples x n_steps`` (SmoothGrad-IG).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.classifier import Classifier
from core.encoding import Encoded
from core.global_rng import seeded_globals
from core.params import param, seed_param
from core.types import Attribution, Example
from explainers._masking import rng_devices
from explainers.base import Passes
from explainers.gradients import OUTPUTS, baseline_embeddings, embed, to_attribution

_SAMPLES_HELP = "noisy copies of the input"
_NOISE_HELP = "noise standard deviation as a fraction of the spread (max - min) of the word embeddings"


@dataclass(frozen=True)
class SmoothGradParams:
    n_samples: int = param(25, _SAMPLES_HELP, min=1, max=500)
    noise: float = param(0.1, _NOISE_HELP, min=0.0, max=2.0)
    reduction: str = param("l2", "reduce each mean gradient by its L2 norm or its signed sum", choices=("l2", "sum"))
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)
    seed: int = seed_param()


@dataclass(frozen=True)
class VarGradParams:
    n_samples: int = param(25, _SAMPLES_HELP, min=2, max=500)
    noise: float = param(0.1, _NOISE_HELP, min=0.0, max=2.0)
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)
    seed: int = seed_param()


@dataclass(frozen=True)
class SmoothGradIgParams:
    n_samples: int = param(10, _SAMPLES_HELP, min=1, max=200)
    noise: float = param(0.1, _NOISE_HELP, min=0.0, max=2.0)
    baseline: str = param("pad", "embedding every word token starts from", choices=("pad", "mask", "zero"))
    n_steps: int = param(20, "integration steps per noisy copy", min=2, max=512)
    output: str = param("probability", "differentiate the target probability or logit", choices=OUTPUTS)
    seed: int = seed_param()


def noise_stdev(encoded: Encoded, embeds: torch.Tensor, noise: float) -> float:
    """``noise`` times the spread of the word tokens' input embeddings (embeds: (1, seq, dim))."""
    words = embeds[0, encoded.scored_positions]
    return float(noise * (words.max() - words.min()))


def _tunnel(clf: Classifier, example: Example, target: int, params, nt_type: str) -> tuple[Encoded, torch.Tensor, dict]:
    """(encoding, NoiseTunnel attributions (seq, dim), extras) of saliency or integrated
    gradients."""
    from captum.attr import IntegratedGradients, NoiseTunnel, Saliency

    encoded = clf.encode(example)
    inputs = embed(clf, encoded)
    stdev = noise_stdev(encoded, inputs, params.noise)

    def forward(embeds: torch.Tensor) -> torch.Tensor:
        return clf.head.target_output(clf.forward_embeds(embeds, encoded.variant), target, params.output)

    options: dict = {"nt_type": nt_type, "nt_samples": params.n_samples, "stdevs": stdev}
    if isinstance(params, SmoothGradIgParams):
        method = IntegratedGradients(forward)
        options |= {
            "baselines": baseline_embeddings(clf, encoded, params.baseline),
            "n_steps": params.n_steps,
            # Captum's chunks must hold one step of every noisy copy.
            "internal_batch_size": max(clf.batch_size, params.n_samples),
        }
    else:
        method = Saliency(forward)
        options["abs"] = False
    with torch.enable_grad(), seeded_globals(params.seed, rng_devices(clf)):
        attributions = NoiseTunnel(method).attribute(inputs, **options)
    return encoded, attributions[0].detach(), {"noise_stdev": stdev}


def explain_smoothgrad(
    clf: Classifier, example: Example, target: int, params: SmoothGradParams, *, mlm=None, progress=None
) -> Attribution:
    encoded, grad, extras = _tunnel(clf, example, target, params, "smoothgrad")
    if params.reduction == "l2":
        token_scores = np.sqrt((grad**2).sum(-1).cpu().double().numpy())
        return to_attribution(
            example, target, clf, encoded, token_scores, word_reduce=lambda v: float(np.sqrt(np.sum(v**2))), **extras
        )
    return to_attribution(example, target, clf, encoded, grad.sum(-1).cpu().double().numpy(), **extras)


def explain_vargrad(
    clf: Classifier, example: Example, target: int, params: VarGradParams, *, mlm=None, progress=None
) -> Attribution:
    encoded, variance, extras = _tunnel(clf, example, target, params, "vargrad")
    return to_attribution(example, target, clf, encoded, variance.sum(-1).cpu().double().numpy(), **extras)


def explain_smoothgrad_ig(
    clf: Classifier, example: Example, target: int, params: SmoothGradIgParams, *, mlm=None, progress=None
) -> Attribution:
    encoded, attributions, extras = _tunnel(clf, example, target, params, "smoothgrad")
    return to_attribution(example, target, clf, encoded, attributions.sum(-1).cpu().double().numpy(), **extras)


def passes(n_words: int, params: SmoothGradParams | VarGradParams) -> Passes:
    """Cost model: one forward and backward pass per noisy copy."""
    return Passes(classifier=params.n_samples, backward=params.n_samples)


def passes_ig(n_words: int, params: SmoothGradIgParams) -> Passes:
    """Cost model: ``n_steps`` forward and backward passes per noisy copy."""
    return Passes(classifier=params.n_samples * params.n_steps, backward=params.n_samples * params.n_steps)
