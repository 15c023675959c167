"""The bundled models as ``peft`` LoRA adapters (Hu et al. 2021, arXiv:2106.09685): the
conversion from the old home-made delta format is exact.

``REFERENCE`` holds numbers computed with the OLD delta loader (commit f736a38, before the
conversion; the script is in the message of the commit that converted the models): logits of
three sentences per classifier and the masked LM's top-5 fill-ins of three masked sentences.
The tiny-model test converts a delta made here, in the old format, and compares the peft merge
with a copy of the old merge math.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

from core.models import encoder_path, load_masked_lm, load_sequence_classifier, load_tokenizer
from core.train import ENCODER_LORA
from tools.convert_deltas import convert_delta

SINGLE = [
    "a gorgeous , witty and seductive film that never loses its charm , even when the ending drags a little .",
    "the movie is a disaster from start to finish .",
    "it 's a charming and often affecting journey .",
]
PAIRS = [
    ("a man is playing a guitar on stage .", "a person is performing music ."),
    ("two dogs run through a field .", "the animals are sleeping indoors ."),
    ("a woman is reading a book in a park .", "the woman is outside ."),
]
MASKED = [
    "this is the worst [MASK] i have ever seen .",
    "a group of people are standing in front of a [MASK] .",
    "the film is a [MASK] and moving portrait of love .",
]
REFERENCE = {
    "minilm-sst2": [[-3.255727, 2.948601], [2.663072, -2.450703], [-3.45873, 3.13776]],
    "minilm-movies": [[-2.846105, 3.559452], [2.941892, -3.746962], [-2.960359, 3.706606]],
    "minilm-hatexplain": [
        [-0.563268, 0.629558, 0.159764],
        [-0.519883, 0.419507, 0.221498],
        [-0.507461, 0.566166, 0.092374],
    ],
    "minilm-esnli": [[3.524829, -1.281081, -2.07156], [-2.715989, -1.24301, 4.334205], [2.28907, -0.191739, -2.173578]],
}
MLM_REFERENCE = [  # (token id, probability), best first
    [(3185, 0.381022), (5691, 0.1285), (2143, 0.044294), (3152, 0.039099), (4933, 0.037009)],
    [(2311, 0.152945), (2395, 0.060257), (4306, 0.039853), (2795, 0.037095), (2813, 0.030668)],
    [(17160, 0.038935), (16465, 0.027033), (3048, 0.026447), (3376, 0.024535), (7244, 0.021724)],
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(encoder_path())


@pytest.mark.parametrize("name", sorted(REFERENCE))
@torch.no_grad()
def test_bundled_classifier_reproduces_the_old_delta_logits(name: str, tokenizer) -> None:
    model = load_sequence_classifier(name)
    if name == "minilm-esnli":
        enc = tokenizer([p[0] for p in PAIRS], [p[1] for p in PAIRS], padding=True, return_tensors="pt")
    else:
        enc = tokenizer(SINGLE, padding=True, return_tensors="pt")
    logits = model(**enc).logits
    # 1e-6 rounding of the reference, plus float32 kernels that differ between CPUs by a few units
    # in the last place (2.4e-6 on a logit of 2.3 seen on an AMD EPYC): a real conversion error is
    # orders of magnitude larger
    torch.testing.assert_close(logits, torch.tensor(REFERENCE[name]), rtol=0, atol=1e-5)
    torch.testing.assert_close(logits.softmax(-1), torch.tensor(REFERENCE[name]).softmax(-1), rtol=0, atol=1e-5)


@torch.no_grad()
def test_bundled_masked_lm_reproduces_the_old_delta_fill_ins(tokenizer) -> None:
    model = load_masked_lm("minilm-mlm")
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight  # still tied
    enc = tokenizer(MASKED, padding=True, return_tensors="pt")
    top = model(**enc).logits[enc["input_ids"] == tokenizer.mask_token_id].softmax(-1).topk(5)
    assert top.indices.tolist() == [[i for i, _ in row] for row in MLM_REFERENCE]
    expected = torch.tensor([[p for _, p in row] for row in MLM_REFERENCE])
    torch.testing.assert_close(top.values, expected, rtol=0, atol=1.5e-6)


# --------------------------------------------------------------------------- tiny conversion


def _tiny(architecture: str) -> torch.nn.Module:
    config = BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, num_labels=3
    )
    torch.manual_seed(0)
    model = BertForMaskedLM(config) if architecture == "masked-lm" else BertForSequenceClassification(config)
    return model.eval()


def _old_delta(model: torch.nn.Module, architecture: str, folder: Path, rank: int = 4, scale: float = 2.0) -> None:
    """A delta in the old format: random LoRA factors on the encoder, random full tensors (fp16)."""
    generator = torch.Generator().manual_seed(1)
    tensors, scales = {}, {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and __import__("re").fullmatch(ENCODER_LORA, name):
            tensors[f"lora.{name}.A"] = torch.randn(rank, module.in_features, generator=generator).half()
            tensors[f"lora.{name}.B"] = torch.randn(module.out_features, rank, generator=generator).half()
            scales[name] = scale
    if architecture == "masked-lm":
        full = [n for n, _ in model.named_parameters() if n.startswith("cls.") or "output.LayerNorm" in n]
    else:
        full = [n for n, _ in model.named_parameters() if n.startswith(("classifier.", "bert.pooler."))]
    params = dict(model.named_parameters())
    for name in full:
        tensors[f"full.{name}"] = torch.randn(params[name].shape, generator=generator).half()
    folder.mkdir()
    save_file(tensors, str(folder / "delta.safetensors"))
    info = {"architecture": architecture, "task": "tiny", "label_names": ["a", "b", "c"], "lora_scales": scales}
    (folder / "delta.json").write_text(json.dumps(info))


@torch.no_grad()
def _old_merge(model: torch.nn.Module, folder: Path) -> torch.nn.Module:
    """A copy of the old ``core.delta.apply_delta``: ``W += scale * B @ A``; full tensors copied."""
    from safetensors.torch import load_file

    config = json.loads((folder / "delta.json").read_text())
    tensors = load_file(str(folder / "delta.safetensors"))
    params = dict(model.named_parameters())
    for name, scale in config["lora_scales"].items():
        weight = model.get_submodule(name).weight
        weight += scale * (tensors[f"lora.{name}.B"].float() @ tensors[f"lora.{name}.A"].float())
    for key, value in tensors.items():
        if key.startswith("full."):
            params[key[len("full.") :]].copy_(value.float())
    return model


@pytest.mark.parametrize("architecture", ["sequence-classification", "masked-lm"])
def test_a_converted_delta_merges_to_the_old_weights(architecture: str, tmp_path: Path) -> None:
    from peft import PeftModel

    base = _tiny(architecture)
    _old_delta(base, architecture, tmp_path / "old")
    old = _old_merge(copy.deepcopy(base), tmp_path / "old")
    convert_delta(tmp_path / "old", copy.deepcopy(base), tmp_path / "new")
    assert {p.name for p in (tmp_path / "new").iterdir()} == {
        "adapter_config.json",
        "adapter_model.safetensors",
        "task.json",
    }
    assert json.loads((tmp_path / "new" / "task.json").read_text())["label_names"] == ["a", "b", "c"]
    new = PeftModel.from_pretrained(copy.deepcopy(base), str(tmp_path / "new")).merge_and_unload()
    old_state, new_state = old.state_dict(), new.state_dict()
    assert old_state.keys() == new_state.keys()
    changed = 0
    for key in old_state:
        torch.testing.assert_close(new_state[key], old_state[key], rtol=0, atol=1e-6, msg=key)
        changed += not torch.equal(old_state[key], base.state_dict()[key])
    assert changed >= 12  # the LoRA-adapted weights and the full tensors really moved
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    torch.testing.assert_close(new(input_ids=ids).logits, old(input_ids=ids).logits, rtol=0, atol=1e-6)


def test_a_delta_with_a_module_the_config_does_not_adapt_is_refused(tmp_path: Path) -> None:
    base = _tiny("sequence-classification")
    _old_delta(base, "sequence-classification", tmp_path / "old")
    info = json.loads((tmp_path / "old" / "delta.json").read_text())
    info["lora_scales"]["bert.embeddings.word_embeddings"] = 2.0
    (tmp_path / "old" / "delta.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="bert.embeddings.word_embeddings"):
        convert_delta(tmp_path / "old", base, tmp_path / "new")
