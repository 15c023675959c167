"""pAML: training AML's attribution model once per classifier on a slice of training data
(Barkan et al. 2024, "LLM Explainability via Attributive Masking Learning").

Nothing here loads a model or a dataset or keeps a cache: the training examples and the encoder
come from the caller through an ``AmlResources`` (the engine's, engine/resources.py, loads the
classifier's training split and the packaged encoder and caches the trained models; without one,
``OnTheExample`` trains a copy of the classifier's own encoder on the explained example).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from core.classifier import Classifier, ProgressFn
from core.global_rng import seeded_globals
from core.types import Example
from explainers._masking import Batch, rng_devices, special_embedding, trace_row
from explainers.aml.model import (
    AmlParams,
    AttributionModel,
    aml_step,
    apply_gradients,
    make_optimizer,
    mean_word_mask,
    own_backbone,
    uses_token_types,
)

# Raise when a change of the pre-training code changes the model it makes: models kept on disk
# under an older version are then trained again (engine/pretrained_store.py).
PRETRAIN_VERSION = 1
# The parameters that change the pre-trained model (a cache key of the caller's).
PRETRAIN_FIELDS = (
    "weight_prediction",
    "weight_sparsity",
    "weight_inverse",
    "lr",
    "n_train",
    "n_epochs",
    "train_batch_size",
    "seed",
)
# pAML's training source when no training split is found: the explained example, repeated.
FALLBACK_SOURCE = "the explained example"
MAX_TRAIN_TOKENS = 128

BackboneFn = Callable[[Classifier], tuple[nn.Module, str]]


@dataclass
class PretrainedAml:
    """A pre-trained attribution model with what it was trained on and its training trace."""

    model: AttributionModel
    backbone: str
    source: str
    n_examples: int
    runtime_s: float
    forward_passes: int
    backward_passes: int
    trace: dict[str, list[float]]
    # The folder it was read back from, when it was not trained in this process
    # (engine/pretrained_store.py); the other fields are those of the training that made it.
    loaded_from: str | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "loaded_from": self.loaded_from,
            "backbone": self.backbone,
            "source": self.source,
            "on_explained_example": self.source == FALLBACK_SOURCE,
            "n_examples": self.n_examples,
            "runtime_s": self.runtime_s,
            "forward_passes": self.forward_passes,
            "backward_passes": self.backward_passes,
            "trace": self.trace,
        }


class AmlResources(Protocol):
    """What AML takes from its caller: the pre-trained attribution model for this classifier,
    example and parameters (trained on first use)."""

    def pretrained(
        self, clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None = None
    ) -> PretrainedAml: ...


class OnTheExample:
    """Resources with no data and no cache: every call pre-trains a copy of the classifier's own
    encoder on the explained example (``FALLBACK_SOURCE``). Used when the caller passes none."""

    def pretrained(
        self, clf: Classifier, example: Example, params: AmlParams, progress: ProgressFn | None = None
    ) -> PretrainedAml:
        return pretrain_aml(clf, [example] * params.n_train, FALLBACK_SOURCE, params, own_backbone, progress)


def new_attribution_model(clf: Classifier, backbone: BackboneFn) -> tuple[AttributionModel, str]:
    """An untrained attribution model for ``clf`` on the encoder ``backbone`` gives, on the
    classifier's device, and the encoder's name."""
    encoder, backbone_name = backbone(clf)
    model = AttributionModel(encoder, clf.num_labels, clf.loaded.max_length, uses_token_types(encoder))
    return model.to(clf.device), backbone_name


def freeze(model: AttributionModel) -> None:
    """A pre-trained model is only read: evaluation mode, no gradients."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)


def select_training_examples(
    clf: Classifier, pool: Sequence[Example], example: Example, n_train: int, seed: int
) -> tuple[list[Example], bool]:
    """pAML's training slice from ``pool``: a seeded random sample of ``n_train`` examples of at
    most 128 tokens that fit the classifier (pairs for a pair model); the explained example
    repeated ``n_train`` times when none fits. The flag says whether the pool was used."""
    chosen: list[Example] = []
    for i in np.random.default_rng(seed).permutation(len(pool)):
        candidate = pool[int(i)]
        fits = clf.loaded.pair is None or candidate.is_pair == clf.loaded.pair
        if fits and len(clf.encode(clf.fit_example(candidate)[0]).input_ids) <= MAX_TRAIN_TOKENS:
            chosen.append(candidate)
            if len(chosen) == n_train:
                break
    return (chosen, True) if chosen else ([example] * n_train, False)


def pretrain_aml(
    clf: Classifier,
    examples: Sequence[Example],
    source: str,
    params: AmlParams,
    backbone: BackboneFn,
    progress: ProgressFn | None = None,
) -> PretrainedAml:
    """pAML: train a fresh attribution model, its encoder from ``backbone(clf)``, on ``examples``
    (named ``source``), counted on a private ``Classifier`` view so the explanation that triggers
    it is not charged for it."""
    start = time.perf_counter()
    own = Classifier(clf.loaded, batch_size=clf.batch_size, head_type=clf.head_type)
    encodings = [own.encode(own.fit_example(e)[0]) for e in examples]
    conditions = torch.tensor(own.predict_proba([e.variant for e in encodings]), dtype=torch.float32, device=clf.device)
    fill = special_embedding(own, ("mask", "unk"))
    pad_id = own.tokenizer.pad_token_id or 0
    trace: dict[str, list[float]] = {}
    with seeded_globals(params.seed, rng_devices(clf)), torch.enable_grad():
        model, backbone_name = new_attribution_model(own, backbone)
        for p in model.backbone.parameters():
            p.requires_grad_(p is not model.backbone.get_input_embeddings().weight)
        model.train()
        encoder_params = [p for p in model.backbone.parameters() if p.requires_grad]
        optimizer = make_optimizer([*model.head.parameters(), model.class_embeddings], encoder_params, params.lr)
        generator = torch.Generator().manual_seed(params.seed)
        orders = [torch.randperm(len(encodings), generator=generator).tolist() for _ in range(params.n_epochs)]
        chunks = [
            order[i : i + params.train_batch_size]
            for order in orders
            for i in range(0, len(order), params.train_batch_size)
        ]
        for step, rows in enumerate(chunks):
            batch = Batch.of([encodings[r] for r in rows], pad_id, clf.device)
            variants = [encodings[r].variant for r in rows] * 2  # masked rows, then complement rows
            a = model(batch.input_ids, batch.attention_mask, batch.token_type_ids, conditions[rows])
            result = aml_step(
                own, a, batch, conditions[rows], params, lambda e, v=variants: own.forward_embeds(e, v).float(), fill
            )
            apply_gradients(result.loss, optimizer)
            optimizer.zero_grad(set_to_none=True)
            trace_row(trace, step=step, **result.row(), mean_mask=mean_word_mask(result.mask, batch.word_flags))
            if progress is not None:
                progress(
                    (step + 1) / len(chunks),
                    f"pre-training the attribution model on {source} ({step + 1}/{len(chunks)})",
                )
    freeze(model)
    return PretrainedAml(
        model,
        backbone_name,
        source,
        len(examples),
        time.perf_counter() - start,
        own.forward_passes,
        own.backward_passes,
        trace,
    )
