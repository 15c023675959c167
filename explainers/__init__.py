"""The explainer registry: one key per method, each an ``ExplainerSpec`` written with keyword
arguments. Its flags and cost models are what the command line, the app's method picker, forms
and estimates, the attacks and the contract test read: adding a method is its module plus one
entry here (docs/ARCHITECTURE.md, "Adding an explainer").

Variants of one method (the leave-one-out family) are the same function registered under their
own keys with other default parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from core.params import NoParams
from explainers import (
    aml,
    attention,
    deeplift,
    gradient_shap,
    gradients,
    input_marginalization,
    lime,
    loo,
    marc,
    noise_tunnel,
    occlusion,
    partition_shap,
    random_baseline,
    shap,
    sobol,
)
from explainers.base import ExplainerSpec, Paper, Passes, Steps, fixed_passes, run_explainer, run_explainers

_LOO_PAPER = Paper(authors="Li et al.", year=2016, arxiv="1612.08220", note="compared with IM by Pham et al. 2022")
_LOO = "leave-one-out"
_LOO_REMOVALS = {
    "empty": ("delete", "delete the word"),
    "unk": ("unk", "replace the word by [UNK]"),
    "pad": ("pad", "replace the word by [PAD]"),
    "mask": ("mask", "replace the word by [MASK]"),
    "zero": ("zero", "zero the word's input embedding"),
}
_GRADIENT = "gradient"
_IM_PAPER = Paper(authors="Kim et al.", year=2020, arxiv="2010.13984", note="re-examined by Pham et al. 2022")
_SMOOTHGRAD_PAPER = Paper(authors="Smilkov et al.", year=2017, arxiv="1706.03825")


def _registry(*specs: ExplainerSpec) -> MappingProxyType[str, ExplainerSpec]:
    """A read-only mapping key -> spec; a key registered twice is an error."""
    registry: dict[str, ExplainerSpec] = {}
    for spec in specs:
        if spec.key in registry:
            raise ValueError(f"explainer {spec.key!r} is registered twice")
        registry[spec.key] = spec
    return MappingProxyType(registry)


REGISTRY: MappingProxyType[str, ExplainerSpec] = _registry(
    *(
        ExplainerSpec(
            key=f"loo_{name}",
            explain=loo.explain,
            explain_batch=loo.explain_batch,
            params_cls=loo.LooParams,
            description=f"leave-one-out: {what}",
            family=_LOO,
            paper=_LOO_PAPER,
            defaults={"removal": removal},
            passes=loo.passes,
            windowable=True,
        )
        for name, (removal, what) in _LOO_REMOVALS.items()
    ),
    ExplainerSpec(
        key="saliency",
        explain=gradients.explain_saliency,
        explain_batch=gradients.explain_saliency_batch,
        params_cls=gradients.SaliencyParams,
        description="gradient of the target w.r.t. the input embedding (L2 norm or sum)",
        family=_GRADIENT,
        paper=Paper(authors="Simonyan et al.", year=2014, arxiv="1312.6034"),
        gradient=True,
        windowable=True,
        predicts=True,
        passes=fixed_passes(1, backward=1),
    ),
    ExplainerSpec(
        key="grad_x_input",
        explain=gradients.explain_grad_x_input,
        explain_batch=gradients.explain_grad_x_input_batch,
        params_cls=gradients.GradXInputParams,
        description="dot product of input embedding and its gradient",
        family=_GRADIENT,
        paper=Paper(authors="Shrikumar et al.", year=2016, arxiv="1605.01713"),
        gradient=True,
        windowable=True,
        predicts=True,
        passes=fixed_passes(1, backward=1),
    ),
    ExplainerSpec(
        key="integrated_gradients",
        explain=gradients.explain_integrated_gradients,
        explain_batch=gradients.explain_integrated_gradients_batch,
        params_cls=gradients.IntegratedGradientsParams,
        description="integrated gradients from a [PAD]/[MASK]/zero baseline (Captum)",
        family=_GRADIENT,
        paper=Paper(authors="Sundararajan et al.", year=2017, arxiv="1703.01365"),
        gradient=True,
        windowable=True,
        passes=gradients.passes_integrated_gradients,
    ),
    ExplainerSpec(
        key="smoothgrad",
        explain=noise_tunnel.explain_smoothgrad,
        params_cls=noise_tunnel.SmoothGradParams,
        description="SmoothGrad: saliency averaged over noisy copies of the input embeddings (Captum NoiseTunnel)",
        family=_GRADIENT,
        paper=_SMOOTHGRAD_PAPER,
        sampling=True,
        passes=noise_tunnel.passes,
    ),
    ExplainerSpec(
        key="vargrad",
        explain=noise_tunnel.explain_vargrad,
        params_cls=noise_tunnel.VarGradParams,
        description="VarGrad: variance of the gradient over noisy copies of the input embeddings (Captum NoiseTunnel)",
        family=_GRADIENT,
        paper=Paper(
            authors="Adebayo et al.", year=2018, arxiv="1810.03307", note="VarGrad; NoiseTunnel of Smilkov et al."
        ),
        sampling=True,
        passes=noise_tunnel.passes,
    ),
    ExplainerSpec(
        key="smoothgrad_ig",
        explain=noise_tunnel.explain_smoothgrad_ig,
        params_cls=noise_tunnel.SmoothGradIgParams,
        description="integrated gradients averaged over noisy copies of the input embeddings (Captum NoiseTunnel)",
        family=_GRADIENT,
        paper=Paper(authors="Smilkov et al.", year=2017, arxiv="1706.03825", note="over integrated gradients"),
        sampling=True,
        passes=noise_tunnel.passes_ig,
    ),
    ExplainerSpec(
        key="gradient_shap",
        explain=gradient_shap.explain,
        params_cls=gradient_shap.GradientShapParams,
        description="GradientSHAP: expected gradients from [PAD]/[MASK]/zero baselines (Captum)",
        family="SHAP",
        paper=Paper(
            authors="Erion et al.",
            year=2019,
            arxiv="1906.10670",
            note="expected gradients; SHAP of Lundberg & Lee 2017",
        ),
        sampling=True,
        passes=gradient_shap.passes,
    ),
    ExplainerSpec(
        key="deeplift",
        explain=deeplift.explain,
        explain_batch=deeplift.explain_batch,
        params_cls=deeplift.DeepLiftParams,
        description="DeepLIFT (Rescale) from a [PAD]/[MASK]/zero baseline (Captum; gradient through GELU, softmax, LayerNorm)",
        family=_GRADIENT,
        paper=Paper(authors="Shrikumar et al.", year=2017, arxiv="1704.02685"),
        passes=fixed_passes(2, backward=2),
    ),
    ExplainerSpec(
        key="occlusion",
        explain=occlusion.explain,
        explain_batch=occlusion.explain_batch,
        params_cls=occlusion.OcclusionParams,
        description="occlusion: sliding windows of 1-3 words removed, drop averaged per word (Captum)",
        family="occlusion",
        paper=Paper(authors="Zeiler & Fergus", year=2014, arxiv="1311.2901"),
        sampling=True,
        passes=occlusion.passes,
    ),
    ExplainerSpec(
        key="attention_mean",
        explain=attention.explain_mean,
        explain_batch=attention.explain_mean_batch,
        params_cls=NoParams,
        description="attention received, averaged over layers, heads and queries",
        family="attention",
        paper=Paper(authors="Jain & Wallace", year=2019, arxiv="1902.10186", note="attention as explanation"),
        needs_attention_weights=True,
        passes=fixed_passes(1),
    ),
    ExplainerSpec(
        key="attention_rollout",
        explain=attention.explain_rollout,
        explain_batch=attention.explain_rollout_batch,
        params_cls=attention.RolloutParams,
        description="attention rollout across layers (Abnar & Zuidema)",
        family="attention",
        paper=Paper(authors="Abnar & Zuidema", year=2020, arxiv="2005.00928"),
        needs_attention_weights=True,
        passes=fixed_passes(1),
    ),
    ExplainerSpec(
        key="im",
        explain=input_marginalization.explain,
        params_cls=input_marginalization.ImParams,
        description="input marginalization over masked-LM fill-ins (Kim et al. 2020; Pham et al. 2022)",
        family="input marginalization",
        paper=_IM_PAPER,
        needs_mlm=True,
        sampling=True,
        passes=input_marginalization.passes,
        windowable=True,
    ),
    ExplainerSpec(
        key="lime",
        explain=lime.explain,
        explain_batch=lime.explain_batch,
        params_cls=lime.LimeParams,
        description="LIME: ridge surrogate on random word removals",
        family="LIME",
        paper=Paper(authors="Ribeiro et al.", year=2016, arxiv="1602.04938"),
        sampling=True,
        passes=lime.passes,
    ),
    ExplainerSpec(
        key="lime_mlm",
        explain=lime.explain_mlm,
        params_cls=lime.LimeMlmParams,
        description="LIME with removed words filled by the masked LM's top-1 (Pham et al.'s LIME_BERT)",
        family="LIME",
        paper=Paper(authors="Pham et al.", year=2022, arxiv="2110.11929", note="LIME_BERT"),
        needs_mlm=True,
        sampling=True,
        passes=lime.passes_mlm,
    ),
    ExplainerSpec(
        key="kernel_shap",
        explain=shap.explain,
        params_cls=shap.KernelShapParams,
        description="KernelSHAP over words (Captum)",
        family="SHAP",
        paper=Paper(authors="Lundberg & Lee", year=2017, arxiv="1705.07874"),
        sampling=True,
        passes=shap.passes,
    ),
    ExplainerSpec(
        key="partition_shap",
        explain=partition_shap.explain,
        params_cls=partition_shap.PartitionShapParams,
        description="Partition SHAP: Owen values over shap's text hierarchy of the words (shap)",
        family="SHAP",
        paper=Paper(authors="Lundberg & Lee", year=2017, arxiv="1705.07874", note="shap's PartitionExplainer"),
        sampling=True,
        passes=partition_shap.passes,
    ),
    ExplainerSpec(
        key="sobol",
        explain=sobol.explain,
        explain_batch=sobol.explain_batch,
        params_cls=sobol.SobolParams,
        description="Sobol total-order indices of binary word masks (scipy's Sobol sampler, Jansen estimator)",
        family="Sobol",
        paper=Paper(authors="Fel et al.", year=2021, arxiv="2111.04138"),
        sampling=True,
        passes=sobol.passes,
    ),
    ExplainerSpec(
        key="marc",
        explain=marc.explain_marc,
        explain_batch=marc.explain_marc_batch,
        params_cls=marc.MarcParams,
        description=(
            "MaRC: Gaussian-span word mask optimised for sufficiency and comprehensiveness (Brinner & Zarrieß 2023)"
        ),
        family="mask optimization",
        paper=Paper(authors="Brinner & Zarrieß", year=2023),
        mask_optimiser=True,
        mask_filler="[PAD]",
        steps=marc.steps,
    ),
    ExplainerSpec(
        key="aml",
        explain=aml.explain_aml,
        explain_batch=aml.explain_aml_batch,
        params_cls=aml.AmlParams,
        description=(
            "AML: learned attribution model, pre-trained (pAML) or fine-tuned on the example (fAML; Barkan et al. 2024)"
        ),
        family="mask optimization",
        paper=Paper(authors="Barkan et al.", year=2024),
        mask_optimiser=True,
        mask_filler="[MASK]",
        steps=aml.steps,
        takes_resources=True,
    ),
    ExplainerSpec(
        key="random",
        explain=random_baseline.explain,
        params_cls=random_baseline.RandomParams,
        description="seeded random baseline",
        family="baseline",
        paper=Paper(authors="Adebayo et al.", year=2018, arxiv="1810.03292", note="random attribution as a control"),
        windowable=True,
        passes=fixed_passes(0),
    ),
)


def get(key: str) -> ExplainerSpec:
    if key not in REGISTRY:
        raise ValueError(f"unknown method {key!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[key]


# The heatmap page's first panel (the keyword ``"panel"``), what ``cli explain`` and
# ``api.explain`` run by default: the methods that need one pass or a few dozen each (the seven
# from a new process in about 6 s on 2 CPU cores).
DEFAULT_PANEL = (
    "loo_empty",
    "saliency",
    "grad_x_input",
    "integrated_gradients",
    "attention_mean",
    "attention_rollout",
    "random",
)


def resolve(methods: str | Sequence[str], default: str | Sequence[str] = "panel") -> list[str]:
    """Validated method keys from ``"all"`` (registry order), ``"panel"`` (``DEFAULT_PANEL``),
    ``"default"`` (``default``: what the caller runs when no methods are named, so that naming
    ``"default"`` and naming nothing are the same), comma-separated keys or a list of keys. A key
    named twice is run once, where it is first named."""
    if methods == "default":
        methods = default
    if isinstance(methods, str):
        if methods == "all":
            return list(REGISTRY)
        if methods == "panel":
            return list(DEFAULT_PANEL)
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    if not isinstance(methods, Sequence) or not all(isinstance(key, str) for key in methods):
        raise ValueError(
            f"methods must be method keys (a list or comma-separated), 'panel' or 'all', got {methods!r:.80}"
        )
    for key in methods:
        get(key)
    return list(dict.fromkeys(methods))


__all__ = [
    "DEFAULT_PANEL",
    "REGISTRY",
    "ExplainerSpec",
    "Paper",
    "Passes",
    "Steps",
    "get",
    "resolve",
    "run_explainer",
    "run_explainers",
]
