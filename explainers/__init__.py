"""The explainer registry: one key per method, each an ``ExplainerSpec``.

Variants of one method (the leave-one-out family) are the same function registered under their
own keys with other default parameters.
"""

from __future__ import annotations

from explainers import attention, gradients, input_marginalization, lime, loo, mask_optimization, random_baseline, shap
from explainers.base import ExplainerSpec, NoParams, run_explainer

_LOO = "leave-one-out (paper 000)"

REGISTRY: dict[str, ExplainerSpec] = {
    spec.key: spec
    for spec in (
        ExplainerSpec(
            "loo_empty", loo.explain, loo.LooParams, "leave-one-out: delete the word", _LOO, {"removal": "delete"}
        ),
        ExplainerSpec(
            "loo_unk", loo.explain, loo.LooParams, "leave-one-out: replace the word by [UNK]", _LOO, {"removal": "unk"}
        ),
        ExplainerSpec(
            "loo_pad", loo.explain, loo.LooParams, "leave-one-out: replace the word by [PAD]", _LOO, {"removal": "pad"}
        ),
        ExplainerSpec(
            "loo_mask",
            loo.explain,
            loo.LooParams,
            "leave-one-out: replace the word by [MASK]",
            _LOO,
            {"removal": "mask"},
        ),
        ExplainerSpec(
            "loo_zero",
            loo.explain,
            loo.LooParams,
            "leave-one-out: zero the word's input embedding",
            _LOO,
            {"removal": "zero"},
        ),
        ExplainerSpec(
            "saliency",
            gradients.explain_saliency,
            gradients.SaliencyParams,
            "gradient of the target w.r.t. the input embedding (L2 norm or sum)",
            "gradient",
            gradient=True,
        ),
        ExplainerSpec(
            "grad_x_input",
            gradients.explain_grad_x_input,
            gradients.GradXInputParams,
            "dot product of input embedding and its gradient",
            "gradient",
            gradient=True,
        ),
        ExplainerSpec(
            "integrated_gradients",
            gradients.explain_integrated_gradients,
            gradients.IntegratedGradientsParams,
            "integrated gradients from a [PAD]/[MASK]/zero baseline (Captum)",
            "gradient",
            gradient=True,
        ),
        ExplainerSpec(
            "attention_mean",
            attention.explain_mean,
            NoParams,
            "attention received, averaged over layers, heads and queries",
            "attention",
        ),
        ExplainerSpec(
            "attention_rollout",
            attention.explain_rollout,
            attention.RolloutParams,
            "attention rollout across layers (Abnar & Zuidema)",
            "attention",
        ),
        ExplainerSpec(
            "im",
            input_marginalization.explain,
            input_marginalization.ImParams,
            "input marginalization over masked-LM fill-ins (Kim et al. 2020; paper 000)",
            "input marginalization (paper 000)",
            needs_mlm=True,
        ),
        ExplainerSpec("lime", lime.explain, lime.LimeParams, "LIME: ridge surrogate on random word removals", "LIME"),
        ExplainerSpec(
            "lime_mlm",
            lime.explain_mlm,
            lime.LimeMlmParams,
            "LIME with removed words filled by the masked LM's top-1 (paper 000's LIME_BERT)",
            "LIME",
            needs_mlm=True,
        ),
        ExplainerSpec("kernel_shap", shap.explain, shap.KernelShapParams, "KernelSHAP over words (Captum)", "SHAP"),
        ExplainerSpec(
            "marc",
            mask_optimization.explain_marc,
            mask_optimization.MarcParams,
            "MaRC: Gaussian-span word mask optimised for sufficiency and comprehensiveness (paper 003)",
            "mask optimization",
        ),
        ExplainerSpec(
            "aml",
            mask_optimization.explain_aml,
            mask_optimization.AmlParams,
            "AML: learned attribution model, pre-trained (pAML) or fine-tuned on the example (fAML) (paper 004)",
            "mask optimization",
        ),
        ExplainerSpec(
            "random", random_baseline.explain, random_baseline.RandomParams, "seeded random baseline", "baseline"
        ),
    )
}


def get(key: str) -> ExplainerSpec:
    if key not in REGISTRY:
        raise ValueError(f"unknown method {key!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[key]


def resolve(methods: str | list[str]) -> list[str]:
    """``"all"`` or a comma-separated list of keys -> validated keys in registry order for "all"."""
    if isinstance(methods, str):
        if methods == "all":
            return list(REGISTRY)
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    for key in methods:
        get(key)
    return list(methods)


__all__ = ["REGISTRY", "ExplainerSpec", "get", "resolve", "run_explainer"]
