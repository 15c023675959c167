"""The Streamlit caching facade over the engine, split by concern; pages call ``services.<name>``.

Models are loaded once per process (``st.cache_resource``) and shared read-only; every call wraps
the shared ``LoadedClassifier`` in a fresh ``Classifier`` view, so each request counts its own
forward and backward passes. Results come back as plain picklable records. Engine errors
(``ValueError``) reach the pages as ``ValueError`` with a message meant for the user; pages show
them with ``st.error``.
"""

from core.datasets import FILE_PREFIX
from core.model_refs import model_ref, ref_autocast, split_ref
from core.progress import duration_text
from engine.evaluate import DEFAULT_METHODS, DEFAULT_METRICS
from explainers import DEFAULT_PANEL
from services import background, reproductions, runs
from services.access import heavy_slot, shared_mode
from services.agreement import method_agreement
from services.bundles import bundle_bytes
from services.compare import ComparisonResult, compare, label_refusal
from services.data import (
    DATA_FILE,
    FREE_TEXT,
    annotator_count,
    as_typed,
    check_data_file,
    data_file_splits,
    dataset_example,
    dataset_options,
    dataset_size,
    free_text_example,
    is_model_class,
    random_index,
    slice_examples,
    slice_indices,
)
from services.estimates import (
    CostEstimate,
    MaskCostEstimate,
    cost_model,
    estimate_attack,
    estimate_cost,
    estimate_mask_cost,
    estimate_perturbation_cost,
    estimate_slice,
    measured_rate,
    passes_text,
    pretraining_seconds,
    worth_estimating,
)
from services.experiments import attack, attack_summary, randomization_steps, randomize
from services.explain import HeatmapResult, PredictionResult, explain, label_set, predict_example, unknown_words
from services.faithfulness import (
    FaithfulnessResult,
    MetricsRun,
    faithfulness,
    score_attribution,
)
from services.im_tables import (
    im_candidate_rows,
    im_counterfactual_rows,
    im_word_rows,
    lime_counterfactual_rows,
    loo_counterfactual_rows,
    output_column,
)
from services.imports import with_imports
from services.methods import MethodInfo, MetricInfo, ParamField, attack_info, methods, metric_infos
from services.models import (
    DEFAULT_MLM,
    DEFAULT_MODEL,
    HEAD_CHOICES,
    ModelChoice,
    ModelInfo,
    autocast_choices,
    classifier,
    default_model,
    masked_lm,
    mlm_choices,
    model_choices,
    model_info,
    model_task,
    randomized_name,
)
from services.rationales import (
    human_outline,
    human_rows,
    rationale_ceiling,
    rationale_scores,
    selected,
    selection_name,
    with_highlight,
)
from services.slices import (
    RationaleSlice,
    SliceItem,
    SliceResult,
    evaluate_slice,
    rationale_slice,
    slice_stopped_at,
)
from services.store import examples_key
from services.uploads import (
    DATA_FILE_TYPES,
    DATA_UPLOAD_MB,
    SHARED_DATA_FILE_TYPES,
    delete_upload,
    is_upload,
    kept_uploads,
    save_upload,
)

__all__ = [
    "DATA_FILE",
    "DATA_FILE_TYPES",
    "DATA_UPLOAD_MB",
    "DEFAULT_MLM",
    "DEFAULT_MODEL",
    "DEFAULT_PANEL",
    "FILE_PREFIX",
    "FREE_TEXT",
    "HEAD_CHOICES",
    "RUN_METHODS",
    "RUN_METRICS",
    "SHARED_DATA_FILE_TYPES",
    "ComparisonResult",
    "CostEstimate",
    "FaithfulnessResult",
    "HeatmapResult",
    "MaskCostEstimate",
    "MethodInfo",
    "MetricInfo",
    "MetricsRun",
    "ModelChoice",
    "ModelInfo",
    "ParamField",
    "PredictionResult",
    "RationaleSlice",
    "SliceItem",
    "SliceResult",
    "annotator_count",
    "as_typed",
    "attack",
    "attack_info",
    "attack_summary",
    "autocast_choices",
    "background",
    "bundle_bytes",
    "check_data_file",
    "classifier",
    "compare",
    "cost_model",
    "data_file_splits",
    "dataset_example",
    "dataset_options",
    "dataset_size",
    "default_model",
    "delete_upload",
    "duration_text",
    "estimate_attack",
    "estimate_cost",
    "estimate_mask_cost",
    "estimate_perturbation_cost",
    "estimate_slice",
    "evaluate_slice",
    "examples_key",
    "explain",
    "faithfulness",
    "free_text_example",
    "heavy_slot",
    "human_outline",
    "human_rows",
    "im_candidate_rows",
    "im_counterfactual_rows",
    "im_word_rows",
    "is_model_class",
    "is_upload",
    "kept_uploads",
    "label_refusal",
    "label_set",
    "lime_counterfactual_rows",
    "loo_counterfactual_rows",
    "masked_lm",
    "measured_rate",
    "method_agreement",
    "methods",
    "metric_infos",
    "mlm_choices",
    "model_choices",
    "model_info",
    "model_ref",
    "model_task",
    "output_column",
    "passes_text",
    "predict_example",
    "pretraining_seconds",
    "random_index",
    "randomization_steps",
    "randomize",
    "randomized_name",
    "rationale_ceiling",
    "rationale_scores",
    "rationale_slice",
    "ref_autocast",
    "reproductions",
    "runs",
    "save_upload",
    "score_attribution",
    "selected",
    "selection_name",
    "shared_mode",
    "slice_examples",
    "slice_indices",
    "slice_stopped_at",
    "split_ref",
    "unknown_words",
    "with_highlight",
    "with_imports",
    "worth_estimating",
]

# The methods and metrics a new dataset run starts with (those of `python -m cli evaluate`).
RUN_METHODS = tuple(DEFAULT_METHODS.split(","))
RUN_METRICS = tuple(DEFAULT_METRICS.split(","))
