"""Model-parameter randomisation: does an explanation change when the model's weights are destroyed?

After Adebayo et al. (2018), as the thesis "Assessing the Interpretability of Large Language Models"
(Oxford MSc, 2022, sections 2.2.3.3 and 3.3) applies it to transformers:

* **cascading**: re-initialise the classifier head, then the top encoder block, then the next,
  down to the embeddings, and explain again after each step (the thesis's x-axis runs "Full, L,
  L-1, ..., 1" over the blocks; whether it re-initialised the head and the embeddings is not
  stated: ``components`` picks the blocks alone);
* **independent**: re-initialise one component at a time, every other weight kept.

A block is a whole transformer layer (self-attention and the MLP after it), as in the thesis. The
similarity of each step's explanation to the original one is Spearman's rho of the signed and of
the absolute scores and the top-k overlap; Pham et al. 2022 (Table A5) adds, for the classifier-head
reset, the share of words whose score changes sign and the mean absolute change. They are
reported for every step, as the mean over examples; the rank correlations also pooled over every
word of every example (the thesis's formula reads that way, its text says averaged).

By default weights are re-initialised with the model's own initializer
(``PreTrainedModel._init_weights``) on CPU under a forked, seeded generator; ``scheme="shuffle"``
permutes each weight tensor instead. A seed gives the same random weights on every device and in
both modes (component ``i`` always draws from the seed ``(seed, i)``). Every step works on a deep
copy: the shared model is never touched.

The package is split by job: ``components`` (what is re-initialised, and how), ``similarity``
(one step's scores against the original ones) and ``runs`` (a run over examples and methods).
The names below are its interface.
"""

from __future__ import annotations

from experiments.randomization.components import (
    EMBEDDINGS,
    HEAD,
    MODES,
    ORIGINAL,
    SCHEMES,
    Component,
    Step,
    component_seed,
    model_components,
    plan,
    randomized_copy,
    randomized_model,
    reinitialize,
    select_components,
)
from experiments.randomization.runs import ExampleRandomization, RandomizationResult, run_randomization, step_classifier
from experiments.randomization.similarity import MEASURES, Similarity, similarity

__all__ = [
    "EMBEDDINGS",
    "HEAD",
    "MEASURES",
    "MODES",
    "ORIGINAL",
    "SCHEMES",
    "Component",
    "ExampleRandomization",
    "RandomizationResult",
    "Similarity",
    "Step",
    "component_seed",
    "model_components",
    "plan",
    "randomized_copy",
    "randomized_model",
    "reinitialize",
    "run_randomization",
    "select_components",
    "similarity",
    "step_classifier",
]
