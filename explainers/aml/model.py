"""AML's attribution model and its training step (Barkan et al. 2024, "LLM Explainability via
Attributive Masking Learning"): an encoder plus a per-token head, the loss of Eq. 4-7,
and the optimiser both pre-training (explainers/aml/pretrain.py) and fine-tuning use."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from core.classifier import Classifier
from core.params import param, seed_param
from explainers._masking import EPS, Batch, blend

_HEAD_LR_FACTOR = 10.0


class EmbeddingBackbone(nn.Module):
    """For classifiers without a transformer encoder (the toy bag-of-embeddings model): the
    hidden state of a token is its input embedding."""

    def __init__(self, embeddings: nn.Embedding) -> None:
        super().__init__()
        self.embeddings = embeddings

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def forward(self, inputs_embeds: torch.Tensor, attention_mask=None, token_type_ids=None):
        from transformers.modeling_outputs import BaseModelOutput

        return BaseModelOutput(last_hidden_state=inputs_embeds)


def own_backbone(clf: Classifier) -> tuple[nn.Module, str]:
    """An attribution-model encoder from the classifier itself, and its description: a deep copy of
    its transformer encoder, or of its input embeddings for models without one. (The engine's
    resources prefer the packaged pre-trained encoder of the bundled models,
    engine/resources.py.)"""
    base = clf.model.base_model
    if base is not clf.model:
        return copy.deepcopy(base), f"copy of {clf.name}'s encoder"
    return EmbeddingBackbone(copy.deepcopy(clf.embedding_layer())), f"copy of {clf.name}'s input embeddings"


class AttributionModel(nn.Module):
    """AML's G: encoder + shared per-token head (d -> d -> 1, tanh, sigmoid), conditioned on the
    class distribution ``y`` through ``z = z_0 + sum_j y_j z_j`` appended as one extra position."""

    def __init__(self, backbone: nn.Module, num_labels: int, max_length: int, uses_token_types: bool) -> None:
        super().__init__()
        self.backbone = backbone
        embeddings = backbone.get_input_embeddings()
        embeddings.weight.requires_grad_(False)  # frozen, as in the authors' code
        hidden = getattr(getattr(backbone, "config", None), "hidden_size", embeddings.embedding_dim)
        self.class_embeddings = nn.Parameter(0.02 * torch.randn(num_labels + 1, embeddings.embedding_dim))  # row 0: z_0
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.max_length = max_length
        self.uses_token_types = uses_token_types

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        condition: torch.Tensor,
    ) -> torch.Tensor:
        """(batch, seq) ids, mask and types, (batch, n_labels) condition -> (batch, seq) mask
        in (0, 1)."""
        embeds = self.backbone.get_input_embeddings()(input_ids)  # (batch, seq, dim)
        z = self.class_embeddings[0] + condition @ self.class_embeddings[1:]  # (batch, dim)
        n, width = input_ids.shape
        lengths = attention_mask.sum(1)
        if width + 1 <= self.max_length:  # z after each row's last token
            rows = torch.arange(n, device=input_ids.device)
            embeds = torch.cat([embeds, embeds.new_zeros(n, 1, embeds.shape[-1])], 1).index_put((rows, lengths), z)
            attention_mask = torch.cat([attention_mask, attention_mask.new_zeros(n, 1)], 1).index_put(
                (rows, lengths), attention_mask.new_ones(n)
            )
            token_type_ids = torch.cat([token_type_ids, token_type_ids.new_zeros(n, 1)], 1)
        else:  # no free position: z is added to the first ([CLS]) embedding
            embeds = torch.cat([embeds[:, :1] + z[:, None], embeds[:, 1:]], 1)
        # An additive (batch, 1, 1, seq) mask, used as given by the encoder: the 0/1 mask would be
        # checked for padding (``.all()``), which ``torch.func.vmap`` (fAML's batched copies) refuses.
        blocked = (1 - attention_mask[:, None, None, :].to(embeds.dtype)) * torch.finfo(embeds.dtype).min
        inputs = {"inputs_embeds": embeds, "attention_mask": blocked}
        if self.uses_token_types:
            inputs["token_type_ids"] = token_type_ids
        hidden = self.backbone(**inputs).last_hidden_state[:, :width]
        return torch.sigmoid(self.head(self.dropout(hidden)).squeeze(-1))


@dataclass(frozen=True)
class AmlParams:
    mode: str = param(
        "fine_tune",
        "fine_tune: fAML, the pre-trained model fine-tuned on this example for n_steps; "
        "pretrained: pAML, one forward pass of the pre-trained model",
        choices=("fine_tune", "pretrained"),
    )
    n_steps: int = param(5, "fAML fine-tuning steps (the authors' code: 5)", min=0, max=200)
    select_by: str = param(
        "aopc_comprehensiveness",
        "fAML keeps the step whose map scores best on this (deletion of the "
        "top words; AOPC over 1/5/10/20/50 %, or at 20 %) or has the lowest loss",
        choices=("aopc_comprehensiveness", "comprehensiveness", "sufficiency", "loss"),
    )
    weight_prediction: float = param(1.0, "weight of the prediction loss on the masked input", min=0.0, max=100.0)
    weight_sparsity: float = param(1.0, "weight of the sparsity loss -mean log(1 - a)", min=0.0, max=100.0)
    weight_inverse: float = param(
        1.0, "weight of the inverse-mask loss -log(1 - p(y | complement))", min=0.0, max=100.0
    )
    lr: float = param(1e-4, "AdamW learning rate of the encoder (the head learns 10x faster)", min=1e-7, max=1e-1)
    n_train: int = param(256, "pAML training examples (the paper: about 1,000)", min=1, max=100_000)
    n_epochs: int = param(1, "pAML training epochs (the authors' code: 5)", min=1, max=100)
    train_batch_size: int = param(16, "pAML training batch size", min=1, max=512)
    seed: int = seed_param("random seed of the training sample, the head's initialisation and dropout")


def uses_token_types(model: nn.Module) -> bool:
    return getattr(getattr(model, "config", None), "type_vocab_size", 0) > 1


@dataclass(frozen=True)
class AmlStep:
    """One evaluation of AML's loss on a batch: each example's total and terms, the probabilities
    and the mask."""

    total: torch.Tensor  # (batch,)
    prediction: torch.Tensor  # (batch,)
    sparsity: torch.Tensor  # (batch,)
    inverse: torch.Tensor  # (batch,)
    p_masked: torch.Tensor  # (batch,) probability of the explained class on the masked input
    p_complement: torch.Tensor
    mask: torch.Tensor  # (batch, seq), 1 on special and padding tokens

    @property
    def loss(self) -> torch.Tensor:
        """The batch's loss: the mean of the examples' totals."""
        return self.total.mean()

    def row(self, example: int | None = None) -> dict[str, float]:
        """Trace values: the batch's means, or one example's values."""
        pick = (lambda t: t.mean()) if example is None else (lambda t: t[example])
        values = {
            "loss": self.total,
            "prediction": self.prediction,
            "sparsity": self.sparsity,
            "inverse": self.inverse,
            "p_masked": self.p_masked,
            "p_complement": self.p_complement,
        }
        return {key: pick(value).item() for key, value in values.items()}


def aml_step(
    clf: Classifier,
    a: torch.Tensor,
    batch: Batch,
    condition: torch.Tensor,
    params: AmlParams,
    logits_fn: Callable[[torch.Tensor], torch.Tensor],
    fill: torch.Tensor,
) -> AmlStep:
    """AML's loss (Eq. 4-7) of the attribution model's mask ``a`` (batch, seq) with ``condition``
    (batch, n_labels) as y; the explained class is its argmax."""
    keep = torch.where(batch.word_flags, a, torch.ones_like(a))
    drop = torch.where(batch.word_flags, 1 - a, torch.ones_like(a))
    embeds = clf.input_embeddings(batch.input_ids)  # (batch, seq, dim), no gradient (frozen)
    n = len(condition)
    logits = logits_fn(torch.cat([blend(embeds, fill, keep), blend(embeds, fill, drop)]))  # (2 batch, labels)
    log_probs = torch.log_softmax(logits, -1)
    target = condition.argmax(-1)
    rows = torch.arange(n, device=logits.device)
    prediction = -(condition * log_probs[:n]).sum(-1)  # (batch,) cross-entropy against y
    p_complement = log_probs[n:][rows, target].exp()
    inverse = -torch.log1p(-p_complement.clamp(max=1 - EPS))
    flags = batch.word_flags.float()
    sparsity = -(torch.log1p(-a.clamp(max=1 - EPS)) * flags).sum(-1) / flags.sum(-1).clamp_min(1)
    total = params.weight_prediction * prediction + params.weight_sparsity * sparsity + params.weight_inverse * inverse
    return AmlStep(
        total,
        prediction,
        sparsity,
        inverse,
        log_probs[:n][rows, target].exp().detach(),
        p_complement.detach(),
        keep,
    )


def make_optimizer(head: list[torch.Tensor], encoder: list[torch.Tensor], lr: float) -> torch.optim.Optimizer:
    """AdamW with the head learning ``_HEAD_LR_FACTOR`` times faster than the encoder; on the CPU
    the fused kernel (one pass over all parameters instead of a loop of small ops), elsewhere
    torch's default (multi-tensor) kernel: the fused CUDA kernel refuses the gradients of the
    stacked fine-tuning copies (``_Copies``)."""
    groups = [{"params": head, "lr": lr * _HEAD_LR_FACTOR}]
    if encoder:
        groups.append({"params": encoder, "lr": lr})
    return torch.optim.AdamW(groups, fused=True if head[0].device.type == "cpu" else None)


def apply_gradients(loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
    """One optimiser step on the gradients of ``loss``, each laid out as its parameter is. Under
    ``vmap`` (the stacked fine-tuning copies) a linear layer's weight gradient comes back
    transposed in memory, and torch's fused AdamW kernel reads a gradient in its parameter's
    layout without checking the strides (pytorch/pytorch#106951 is the same family): the update
    then lands on the transposed elements. A gradient whose strides differ is copied first."""
    trainable = [p for group in optimizer.param_groups for p in group["params"]]
    for p, g in zip(trainable, torch.autograd.grad(loss, trainable, allow_unused=True)):
        p.grad = g if g is None or g.stride() == p.stride() else torch.empty_like(p).copy_(g)
    optimizer.step()


def mean_word_mask(mask: torch.Tensor, word_flags: torch.Tensor) -> float:
    return float(mask.detach()[word_flags].mean()) if bool(word_flags.any()) else 1.0
