"""The GPU path: every explainer and metric on CUDA against its CPU result.

Run with ``pytest -m gpu`` on a machine with CUDA (``tools/gpu_check.sh`` runs these and the GPU
benchmark on a lent GPU); they are skipped where there is none. With ``GPU_REPORT=<file>`` each
test appends its figures (errors, peak and retained device memory) to that JSON-lines file.

The model is a small random BERT over the toy vocabulary with a wide weight initialisation
(``initializer_range=0.2``), so its outputs move well away from uniform when words are removed.

Stated tolerances, as the relative error ``||gpu - cpu|| / ||cpu||`` of the word scores (or of
the metric values):

- float32, deterministic methods: 1e-3 (matrix products summed in another order; TF32 is off, as
  in PyTorch's default for float32 matrix products);
- float32, MaRC, whose optimisation steps compound rounding: 0.05 (1e-7 measured on an
  H200);
- AML trains its attribution model with dropout, whose masks come from the device's generator:
  a Pearson correlation of at least 0.85 with the CPU's scores (0.93 measured on an H200);
- Captum's NoiseTunnel methods (SmoothGrad, VarGrad, SmoothGrad-IG) draw their noise from the
  device's own generator, so CPU and GPU draw other samples: they are compared as estimates of
  one quantity, by a Pearson correlation of at least 0.9 at 200 samples (GradientSHAP draws on
  the CPU and is held to 1e-3);
- scorer autocast (perturbation methods and faithfulness metrics): 0.05 in float16, 0.1 in
  bfloat16 (8 mantissa bits).
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import os

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.encoding import Variant
from core.loaded import LoadedClassifier, classifier_from_model
from core.masked_lm import MaskedLM
from core.types import Example
from engine.evaluate import metric_params, score_attribution
from engine.resources import Resources
from tests.toy import VOCAB, toy_tokenizer

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

NOISE_METHODS = {"smoothgrad", "vargrad", "smoothgrad_ig"}
OPTIMISERS = {"marc"}
PARAMS = {
    "integrated_gradients": {"n_steps": 32},
    "lime": {"n_samples": 200},
    "lime_mlm": {"n_samples": 100},
    "kernel_shap": {"n_samples": 200},
    "smoothgrad": {"n_samples": 200},
    "vargrad": {"n_samples": 200},
    "smoothgrad_ig": {"n_samples": 200, "n_steps": 8},
    "gradient_shap": {"n_samples": 200},
    "partition_shap": {"n_evals": 100},
    "sobol": {"n_designs": 16},
    "marc": {"n_steps": 60},
    "aml": {"n_steps": 20, "n_train": 16, "n_epochs": 1},
}
EXAMPLE = Example(
    segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "very", "boring", "and", "bad", "."),),
    id="gpu/0",
    label=1,
    rationale=(0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0),
    rationales=((0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0),),
)


def _report(record: dict) -> None:
    path = os.environ.get("GPU_REPORT")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


def _relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    value, reference = np.asarray(value, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    return float(np.linalg.norm(value - reference) / max(float(np.linalg.norm(reference)), 1e-12))


def _config(seed: int, **sizes):
    """A random BERT config over the toy vocabulary with wide weights; seeds torch for its model."""
    from transformers import BertConfig

    torch.manual_seed(seed)
    return BertConfig(vocab_size=len(VOCAB), max_position_embeddings=64, initializer_range=0.2, **sizes)


def _bert(seed: int):
    from transformers import BertForSequenceClassification

    config = _config(
        seed,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        num_labels=2,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
    )
    return BertForSequenceClassification(config).eval()


def _mlm(seed: int):
    from transformers import BertForMaskedLM

    config = _config(seed, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    return BertForMaskedLM(config).eval()


@pytest.fixture(scope="module")
def cpu_loaded() -> LoadedClassifier:
    return classifier_from_model(_bert(0), toy_tokenizer(), name="gpu-check", device="cpu")


@pytest.fixture(scope="module")
def gpu_loaded(cpu_loaded) -> LoadedClassifier:
    """The model on CUDA, after one gradient pass: the first matrix product allocates cuBLAS's
    workspace (32 MiB), which the process keeps and no request should be charged for."""
    loaded = classifier_from_model(copy.deepcopy(cpu_loaded.model), toy_tokenizer(), name="gpu-check", device="cuda")
    explainers.run_explainer(explainers.get("saliency"), Classifier(loaded), EXAMPLE, 1)
    return loaded


@pytest.fixture(scope="module")
def mlms() -> tuple[MaskedLM, MaskedLM]:
    model = _mlm(1)
    return (
        MaskedLM("toy-mlm", copy.deepcopy(model), toy_tokenizer(), torch.device("cpu")),
        MaskedLM("toy-mlm", model, toy_tokenizer(), torch.device("cuda")),
    )


def _params(spec: explainers.ExplainerSpec) -> object:
    names = {f.name for f in dataclasses.fields(spec.params_cls)}
    overrides = {k: v for k, v in PARAMS.get(spec.key, {}).items() if k in names}
    if "seed" in names:
        overrides["seed"] = 0
    return spec.make_params(overrides)


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: t.detach().clone() for name, t in model.state_dict().items()}


def _run(spec, clf: Classifier, mlm: MaskedLM):
    resources = Resources()
    try:
        return explainers.run_explainer(spec, clf, EXAMPLE, 1, _params(spec), mlm=mlm, resources=resources)
    finally:
        del resources


@pytest.mark.parametrize("key", list(explainers.REGISTRY))
def test_explainer_on_cuda_equals_cpu(key, cpu_loaded, gpu_loaded, mlms) -> None:
    spec = explainers.get(key)
    cpu = _run(spec, Classifier(cpu_loaded), mlms[0])
    before = _state(gpu_loaded.model)
    gc.collect()
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    gpu = _run(spec, Classifier(gpu_loaded), mlms[1])
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - baseline
    gc.collect()
    retained = torch.cuda.memory_allocated() - baseline

    # Nothing left on the device but the model, the shared model unchanged and still on the GPU.
    assert isinstance(gpu.scores, np.ndarray) and gpu.scores.shape == cpu.scores.shape
    assert np.isfinite(gpu.scores).all()
    after = gpu_loaded.model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before), "the shared model changed"
    assert all(p.device.type == "cuda" and not p.requires_grad for p in gpu_loaded.model.parameters())
    assert retained <= 1 << 20, f"{key} left {retained} bytes on the device"

    error = _relative_error(gpu.scores, cpu.scores)
    correlation = float(np.corrcoef(gpu.scores, cpu.scores)[0, 1]) if np.std(cpu.scores) > 0 else 1.0
    _report(
        {
            "test": "explainer",
            "method": key,
            "relative_error": error,
            "pearson": correlation,
            "peak_bytes": peak,
            "retained_bytes": retained,
            "cpu_s": cpu.runtime_s,
            "gpu_s": gpu.runtime_s,
        }
    )
    if key in NOISE_METHODS:
        assert correlation >= 0.9, f"{key}: CPU and GPU estimates correlate at {correlation:.3f}"
    elif key == "aml":
        assert correlation >= 0.85, f"aml: CPU and GPU scores correlate at {correlation:.3f}"
    elif key in OPTIMISERS:
        assert error <= 0.05, f"{key}: relative error {error:.2e}"
    else:
        assert error <= 1e-3, f"{key}: relative error {error:.2e}"
    assert gpu.forward_passes == cpu.forward_passes or key in OPTIMISERS | {"aml"}  # early stops may differ


PERTURBATION_METHODS = [k for k, s in explainers.REGISTRY.items() if s.sampling and k not in NOISE_METHODS]


@pytest.mark.parametrize("dtype,tolerance", [(torch.float16, 0.05), (torch.bfloat16, 0.1)], ids=["fp16", "bf16"])
@pytest.mark.parametrize("key", PERTURBATION_METHODS)
def test_perturbation_method_under_autocast(key, dtype, tolerance, cpu_loaded, gpu_loaded, mlms) -> None:
    spec = explainers.get(key)
    cpu = _run(spec, Classifier(cpu_loaded), mlms[0])
    gpu = _run(spec, Classifier(gpu_loaded, autocast=True, autocast_dtype=dtype), mlms[1])
    error = _relative_error(gpu.scores, cpu.scores)
    _report({"test": "autocast", "method": key, "dtype": str(dtype), "relative_error": error})
    assert error <= tolerance, f"{key} under {dtype}: relative error {error:.2e}"


@pytest.mark.parametrize("autocast", [None, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_every_metric_on_cuda_equals_cpu(autocast, cpu_loaded, gpu_loaded, mlms) -> None:
    """Every metric of one attribution (the faithfulness curves with every removal, masked-LM
    fill-ins included, and the plausibility metrics against the rationale)."""
    import metrics

    attribution = explainers.run_explainer(explainers.get("loo_empty"), Classifier(cpu_loaded), EXAMPLE, 1)
    keys = list(metrics.REGISTRY)
    faithfulness = ["deletion", "insertion", "comprehensiveness", "sufficiency", "log_odds"]
    gpu_clf = Classifier(gpu_loaded, autocast=autocast is not None, autocast_dtype=autocast or torch.float16)
    tolerance = 1e-4 if autocast is None else 0.05 if autocast == torch.float16 else 0.1
    for removal in ("delete", "mask", "mlm"):
        chosen = metric_params(keys, {key: {"removal": removal} for key in faithfulness})
        cpu = score_attribution(Classifier(cpu_loaded), EXAMPLE, attribution, chosen, mlm=mlms[0])
        gpu = score_attribution(gpu_clf, EXAMPLE, attribution, chosen, mlm=mlms[1])
        assert set(gpu) == set(cpu) == set(keys), "a metric was skipped on one device"
        for key in cpu:
            a, b = cpu[key].value, gpu[key].value
            error = abs(a - b) / max(abs(a), 1e-3)
            _report({"test": "metric", "metric": key, "removal": removal, "dtype": str(autocast), "error": error})
            assert error <= tolerance, f"{key} with {removal} ({autocast}): {a} on the CPU, {b} on CUDA"


def test_dataset_slice_on_cuda_equals_cpu(cpu_loaded, gpu_loaded) -> None:
    """A slice explained eight examples at a time (cross-example batching) gives on CUDA what it
    gives on the CPU."""
    from engine.evaluate import evaluate_slice
    from engine.slice_report import metric_values

    words = ("the", "movie", "was", "great", "but", "plot", "very", "boring", "and", "bad", "fun", "actors")
    rng = np.random.default_rng(0)
    examples = [
        Example(segments=(tuple(rng.choice(words, size=int(rng.integers(3, 12)))),), id=f"gpu/{i}") for i in range(10)
    ]
    methods = ["loo_empty", "saliency", "grad_x_input", "integrated_gradients", "attention_rollout", "lime"]
    params = metric_params(["deletion", "insertion", "comprehensiveness", "sufficiency"])
    cpu = evaluate_slice(Classifier(cpu_loaded), examples, methods, params, seed=0)
    gpu = evaluate_slice(Classifier(gpu_loaded), examples, methods, params, seed=0)
    for method, per_metric in metric_values(cpu).items():
        for metric, values in per_metric.items():
            other = np.asarray(metric_values(gpu)[method][metric], dtype=float)
            np.testing.assert_allclose(
                other, np.asarray(values, dtype=float), rtol=1e-3, atol=1e-5, err_msg=f"{method} {metric}"
            )
    for a, b in zip(cpu.results, gpu.results, strict=True):
        for method in methods:
            assert _relative_error(b.attributions[method].scores, a.attributions[method].scores) <= 1e-3


def test_running_out_of_device_memory_halves_the_batch(cpu_loaded, gpu_loaded) -> None:
    """A real CUDA out-of-memory error (the process capped at 32 MiB above what it holds) makes
    the scorer halve its batch and go on; the outputs equal the CPU's."""
    clf = Classifier(gpu_loaded, batch_size=8192)
    rng = np.random.default_rng(0)
    # 8,192 distinct 40-token inputs (the scorer scores identical variants once).
    variants = [
        Variant((VOCAB["[CLS]"], *map(int, rng.integers(5, len(VOCAB), size=38)), VOCAB["[SEP]"]), (0,) * 40)
        for _ in range(8192)
    ]
    gc.collect()
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    cap = (torch.cuda.memory_reserved() + (32 << 20)) / total
    torch.cuda.set_per_process_memory_fraction(cap)
    try:
        out = clf.predict_proba(variants)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    _report({"test": "out_of_memory", "batch_size_after": clf.batch_size, "cap_bytes": int(cap * total)})
    assert clf.batch_size < 8192, "the capped device never ran out: the test proves nothing"
    expected = Classifier(cpu_loaded, batch_size=512).predict_proba(variants)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)


# Methods that read each head and architecture their own way: gradients of a sigmoid or a raw
# score, attention rows of a decoder, the scorer's padded batches (a decoder's last real token).
OTHER_MODEL_METHODS = [
    "loo_empty", "saliency", "grad_x_input", "integrated_gradients", "deeplift", "occlusion", "attention_rollout",
    "lime", "kernel_shap", "partition_shap",
]  # fmt: skip
OTHER_MODEL_EXAMPLES = [
    Example((("the", "movie", "was", "great"),), id="gpu/a"),
    Example((("the", "plot", "was", "very", "boring", "and", "bad", "but", "the", "actors", "fun"),), id="gpu/b"),
    Example((("bad", "movie"),), id="gpu/c"),
]


def _other_model(kind: str) -> torch.nn.Module:
    """A random multi-label or regression BERT, or a GPT-2 classifier (with a pad id, or without
    one, when the scorer must not pad), over the toy vocabulary."""
    from transformers import BertForSequenceClassification, GPT2Config, GPT2ForSequenceClassification

    if kind.startswith("gpt2"):
        torch.manual_seed(2)
        config = GPT2Config(
            vocab_size=len(VOCAB), n_embd=64, n_layer=2, n_head=4, n_positions=64, initializer_range=0.2,
            bos_token_id=VOCAB["[CLS]"], eos_token_id=VOCAB["[SEP]"],
            pad_token_id=None if kind == "gpt2 without a pad id" else VOCAB["[PAD]"],
        )  # fmt: skip
        config.id2label, config.label2id = {0: "negative", 1: "positive"}, {"negative": 0, "positive": 1}
        return GPT2ForSequenceClassification(config).eval()
    names = ("toxic", "insult", "threat") if kind == "multi_label" else ("score",)
    problem = "multi_label_classification" if kind == "multi_label" else "regression"
    config = _config(
        3, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        num_labels=len(names), id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)},
        problem_type=problem,
    )  # fmt: skip
    return BertForSequenceClassification(config).eval()


@pytest.mark.parametrize("kind", ["multi_label", "regression", "gpt2", "gpt2 without a pad id"])
def test_other_heads_and_a_decoder_on_cuda_equal_cpu(kind: str, mlms) -> None:
    """A multi-label head, a regression head and a decoder (GPT-2, its logits read at each row's
    last real token) explain three examples of different lengths together on CUDA as on the CPU,
    and their faithfulness metrics agree."""
    from engine.evaluate import evaluate_slice
    from engine.slice_report import metric_values

    model = _other_model(kind)
    cpu = classifier_from_model(copy.deepcopy(model), toy_tokenizer(), name=kind, device="cpu")
    gpu = classifier_from_model(model, toy_tokenizer(), name=kind, device="cuda")
    targets = [len(Classifier(cpu).head.label_names) - 1] * len(OTHER_MODEL_EXAMPLES)
    for key in OTHER_MODEL_METHODS:
        spec = explainers.get(key)
        on_cpu = explainers.run_explainers(spec, Classifier(cpu), OTHER_MODEL_EXAMPLES, targets, _params(spec))
        on_gpu = explainers.run_explainers(spec, Classifier(gpu), OTHER_MODEL_EXAMPLES, targets, _params(spec))
        for a, b in zip(on_cpu, on_gpu, strict=True):
            error = _relative_error(b.scores, a.scores)
            _report({"test": "other_model", "model": kind, "method": key, "relative_error": error})
            assert np.isfinite(b.scores).all() and error <= 1e-3, f"{kind} {key}: relative error {error:.2e}"
    assert all(p.device.type == "cuda" and not p.requires_grad for p in gpu.model.parameters())
    params = metric_params(["deletion", "comprehensiveness", "sufficiency"])
    methods = ["loo_empty", "saliency"]
    cpu_slice = metric_values(evaluate_slice(Classifier(cpu), OTHER_MODEL_EXAMPLES, methods, params, seed=0))
    gpu_slice = metric_values(evaluate_slice(Classifier(gpu), OTHER_MODEL_EXAMPLES, methods, params, seed=0))
    for method, per_metric in cpu_slice.items():
        for metric, values in per_metric.items():
            np.testing.assert_allclose(
                np.asarray(gpu_slice[method][metric], dtype=float), np.asarray(values, dtype=float),
                rtol=1e-3, atol=1e-5, err_msg=f"{kind} {method} {metric}",
            )  # fmt: skip
