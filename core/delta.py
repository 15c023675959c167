"""Small weight deltas over the packaged encoder: low-rank (LoRA) updates plus a few full tensors.

The bundled demo models are stored as such a delta (``delta.safetensors`` + ``delta.json``)
and merged on load into a plain transformers model, so gradient, attention and randomization
methods see an ordinary model. LoRA: Hu et al. 2021, ``W' = W + (alpha / r) * B @ A``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

DELTA_WEIGHTS = "delta.safetensors"
DELTA_CONFIG = "delta.json"


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update (used only while training)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float) -> None:
        super().__init__()
        self.base = base
        self.scale = alpha / rank
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (self.dropout(x) @ self.lora_A.T @ self.lora_B.T) * self.scale


def add_lora(model: nn.Module, pattern: str, rank: int, alpha: float, dropout: float) -> list[str]:
    """Replace every ``nn.Linear`` whose qualified name matches ``pattern`` by a ``LoRALinear``."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and re.fullmatch(pattern, n)]
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        setattr(parent, child, LoRALinear(getattr(parent, child), rank, alpha, dropout))
    return names


def save_delta(model: nn.Module, full_tensor_names: list[str], out_dir: Path, config: dict) -> Path:
    """Write the LoRA factors and the named full tensors (fp16) and the config to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    scales: dict[str, float] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoRALinear):
            tensors[f"lora.{name}.A"] = module.lora_A.detach().to(torch.float16).contiguous()
            tensors[f"lora.{name}.B"] = module.lora_B.detach().to(torch.float16).contiguous()
            scales[name] = module.scale
    params = dict(model.named_parameters())
    for name in full_tensor_names:
        tensors[f"full.{_plain_name(name)}"] = params[name].detach().to(torch.float16).contiguous()
    save_file(tensors, str(out_dir / DELTA_WEIGHTS))
    (out_dir / DELTA_CONFIG).write_text(json.dumps({**config, "lora_scales": scales}, indent=2) + "\n")
    return out_dir


@torch.no_grad()
def load_trainable_delta(model: nn.Module, folder: Path) -> None:
    """Copy a saved delta into a model prepared for training (``add_lora`` already applied).

    Used to continue a training run: the LoRA factors go back into their ``LoRALinear``
    modules (ranks must match) and the full tensors into their parameters.
    """
    tensors = load_file(str(folder / DELTA_WEIGHTS))
    lora = {n: m for n, m in model.named_modules() if isinstance(m, LoRALinear)}
    params = {_plain_name(n): p for n, p in model.named_parameters()}
    for key, value in tensors.items():
        kind, _, rest = key.partition(".")
        if kind == "lora":
            name, _, factor = rest.rpartition(".")
            if name not in lora:
                raise ValueError(f"delta has LoRA factors for {name!r}, which the model does not adapt")
            target = lora[name].lora_A if factor == "A" else lora[name].lora_B
            if target.shape != value.shape:
                raise ValueError(f"LoRA factor {key!r} has shape {tuple(value.shape)}, the model {tuple(target.shape)}")
            target.copy_(value.float())
        elif rest in params:
            params[rest].copy_(value.float())
        else:
            raise ValueError(f"delta tensor {rest!r} has no parameter in {type(model).__name__}")


def _plain_name(name: str) -> str:
    """The parameter's name in the merged model (``...query.base.weight`` -> ``...query.weight``)."""
    return name.replace(".base.", ".")


def read_config(folder: Path) -> dict:
    return json.loads((folder / DELTA_CONFIG).read_text())


@torch.no_grad()
def apply_delta(model: nn.Module, folder: Path) -> nn.Module:
    """Merge a saved delta into a plain model in place (``W += scale * B @ A``; full tensors copied)."""
    config = read_config(folder)
    tensors = load_file(str(folder / DELTA_WEIGHTS))
    params = dict(model.named_parameters())
    for name, scale in config["lora_scales"].items():
        weight = model.get_submodule(name).weight
        a, b = tensors[f"lora.{name}.A"].float(), tensors[f"lora.{name}.B"].float()
        weight += scale * (b @ a)
    for key, value in tensors.items():
        if key.startswith("full."):
            name = key[len("full.") :]
            if name not in params:
                raise ValueError(f"delta tensor {name!r} has no parameter in {type(model).__name__}")
            params[name].copy_(value.float())
    return model
