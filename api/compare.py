"""Two models side by side in a notebook: ``api.compare(model_a, model_b, text, methods=...)``.

Both models explain the same words with the same methods (model B explains model A's target
class, matched by label name, ``engine.compare.label_map``); the result renders both rows of each
method under the same words (``ui.heatmap.side_by_side``) with the per-method rank correlation
(Spearman's rho, ``engine.compare.compare_attributions``), as the heatmap page's second model
does. ``model_b="randomized"`` is model A with every weight re-initialised (Adebayo et al. 2018,
arXiv:1810.03292; ``experiments.randomization.randomized_model``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from api.inputs import check_seed
from api.results import ExplanationResult
from engine.compare import MethodAgreement, compare_attributions, label_map
from experiments.randomization import randomized_model
from ui.heatmap import heatmap_html, side_by_side

if TYPE_CHECKING:
    import pandas as pd

RANDOMIZED = "randomized"


@dataclass(frozen=True)
class ComparisonResult:
    """Model A's and model B's explanations of one text and each method's agreement."""

    first: ExplanationResult
    second: ExplanationResult
    agreements: dict[str, MethodAgreement]

    def to_pandas(self) -> pd.DataFrame:
        """One row per method: Spearman's rho of the signed and of the absolute scores, words
        compared."""
        import pandas as pd

        rows = [
            {"method": a.method, "spearman": a.spearman, "spearman_abs": a.spearman_abs, "n_words": a.n_words}
            for a in self.agreements.values()
        ]
        return pd.DataFrame(rows, columns=["method", "spearman", "spearman_abs", "n_words"]).set_index("method")

    def html(self) -> str:
        """Both models' predictions, their rows (``method · A`` above ``method · B``) and the
        correlations."""
        heads = []
        for label, result in zip("AB", (self.first, self.second), strict=True):
            heads.append(f"<p><b>{label}</b> = {html.escape(result.model)}: {result.prediction_html()}</p>")
        n_words, rows = side_by_side(self.first.attributions, self.second.attributions)
        example = self.first.example
        rationale = example.rationale[:n_words] if example.rationale is not None else None
        body = heatmap_html(example.words[:n_words], example.segment_ids[:n_words], rows, rationale=rationale)
        return f'<div class="attrx-comparison">{"".join(heads)}{body}{self.to_pandas().to_html()}</div>'

    def __repr__(self) -> str:
        """One line for a terminal (Jupyter shows both heatmaps): the two models and each
        method's Spearman's rho."""
        rhos = ", ".join(f"{a.method} {a.spearman:.2f}" for a in self.agreements.values()) or "none"
        return f"<ComparisonResult A={self.first.model!r}, B={self.second.model!r}: Spearman's rho {rhos}>"

    def _repr_html_(self) -> str:
        return self.html()


def compare(
    model_a: Any,
    model_b: Any,
    text_or_pair: Any,
    methods: Any = "panel",
    *,
    target: int | str | None = None,
    seed: int | None = None,
    randomized_seed: int = 0,
    tokenizer_b: Any = None,
    **options: Any,
) -> ComparisonResult:
    """Explain ``text_or_pair`` with ``model_a`` and ``model_b`` (any form ``api.load`` takes, or
    ``"randomized"``: model A with every weight re-initialised under ``randomized_seed``) and
    compare each method's two rows; ``methods`` as for ``api.explain`` (by default its seven fast
    ones). ``options`` are ``api.explain``'s (``params``, ``mlm``,
    ``tokenizer`` (for model A; ``tokenizer_b`` for a model object as model B), ``device``,
    ``batch_size``, ``progress``). Raises ``ValueError`` when no methods are given or the two label
    sets cannot be matched."""
    from api import _method_keys, explain, load

    keys = _method_keys(methods, "panel")
    check_seed(seed)  # before either model loads
    tokenizer = options.pop("tokenizer", None)
    first_model = load(model_a, tokenizer, device=options.get("device"))
    second_model = (
        randomized_model(first_model, seed=randomized_seed)
        if isinstance(model_b, str) and model_b == RANDOMIZED
        else load(model_b, tokenizer_b, device=options.get("device"))
    )
    mapping = label_map(first_model.label_names, second_model.label_names)
    first = explain(first_model, text_or_pair, keys, target=target, seed=seed, **options)
    second = explain(second_model, text_or_pair, keys, target=mapping[first.target], seed=seed, **options)
    return ComparisonResult(first, second, compare_attributions(first.attributions, second.attributions))
