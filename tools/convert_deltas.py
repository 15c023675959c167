"""One-off converter: the old home-made LoRA deltas of the bundled models -> standard ``peft`` adapters.

The old format (``delta.json`` + ``delta.safetensors``) held LoRA factors ``lora.<module>.A`` /
``.B`` with a scale per module (merged as ``W += scale * B @ A``; LoRA: Hu et al. 2021,
arXiv:2106.09685) and full tensors ``full.<parameter>``, all float16. Each becomes an adapter
folder with the same rank, alpha and target modules (``core.train.lora_config``), the full
tensors as ``modules_to_save`` and the masked LM's output bias as the ``lora_B`` bias of its
decoder; ``task.json`` keeps the label names and the rest of ``delta.json``. Nothing is retrained:
merging the adapter gives the same weights (tests/test_peft_adapters.py).

    python tools/convert_deltas.py [FOLDER ...]   # default: every delta under assets/models/
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.models import BUNDLED_DIR, base_model
from core.train import MLM_DECODER, TrainConfig, lora_config, save_adapter

OLD_CONFIG, OLD_WEIGHTS = "delta.json", "delta.safetensors"


@torch.no_grad()
def convert_delta(folder: Path, base: nn.Module, out: Path) -> Path:
    """Write the peft adapter for the old delta in ``folder`` (over the pristine ``base``) to ``out``."""
    from peft import get_peft_model

    old = json.loads((folder / OLD_CONFIG).read_text())
    tensors = load_file(str(folder / OLD_WEIGHTS))
    scales = old.pop("lora_scales")
    if len(set(scales.values())) != 1:
        raise ValueError(f"{folder}: LoRA scales differ across modules ({sorted(set(scales.values()))})")
    scale = next(iter(scales.values()))
    rank = tensors[f"lora.{next(iter(scales))}.A"].shape[0]
    dropout = TrainConfig.__dataclass_fields__["lora_dropout"].default
    model = get_peft_model(base, lora_config(old["architecture"], rank, rank * scale, dropout))
    params = dict(model.named_parameters())
    adapted = {n.removeprefix("base_model.model.").removesuffix(".lora_A.default.weight") for n in params}
    adapted = {n for n in adapted if f"base_model.model.{n}.lora_A.default.weight" in params} - {MLM_DECODER}
    if adapted != set(scales):
        raise ValueError(f"{folder}: the delta adapts {sorted(set(scales) - adapted)} the config does not")
    for name in adapted:
        if params[f"base_model.model.{name}.lora_A.default.weight"].shape != tensors[f"lora.{name}.A"].shape:
            raise ValueError(f"{folder}: {name} has rank {tensors[f'lora.{name}.A'].shape[0]}, not {rank}")
        params[f"base_model.model.{name}.lora_A.default.weight"].copy_(tensors[f"lora.{name}.A"])
        params[f"base_model.model.{name}.lora_B.default.weight"].copy_(tensors[f"lora.{name}.B"])
    # modules_to_save copies, by their name in the merged model
    full = {
        n.removeprefix("base_model.model.").replace(".modules_to_save.default.", "."): p
        for n, p in params.items()
        if ".modules_to_save.default." in n
    }
    for key, value in tensors.items():
        if not key.startswith("full."):
            continue
        name = key.removeprefix("full.")
        if name == "cls.predictions.bias":
            decoder = model.base_model.model.get_submodule(MLM_DECODER)
            decoder.lora_A["default"].weight.zero_()
            decoder.lora_B["default"].weight.zero_()
            decoder.lora_B["default"].bias.copy_((value.float() - decoder.base_layer.bias) / scale)
            continue
        if name not in full:
            raise ValueError(f"{folder}: full tensor {name!r} is not in the adapter's modules_to_save")
        full[name].copy_(value)
    return save_adapter(model, out, old)


def main(folders: list[str]) -> int:
    chosen = [Path(f) for f in folders] or sorted(p.parent for p in BUNDLED_DIR.glob(f"*/{OLD_CONFIG}"))
    for folder in chosen:
        info = json.loads((folder / OLD_CONFIG).read_text())
        convert_delta(folder, base_model(info), folder)
        (folder / OLD_CONFIG).unlink()
        (folder / OLD_WEIGHTS).unlink()
        print(f"{folder}: converted", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
