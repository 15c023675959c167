r"""Hand-written teaching text for the Methods page, keyed by method: what it computes (a LaTeX
formula and one sentence) and its known pitfalls. Everything else on a card (paper, parameters,
cost, flags) comes from the explainer registry; a method without a note here gets a generic card
(``ui.method_cards``).

The formulas' notation is ``NOTATION``, shown under every formula.
"""

from __future__ import annotations

from dataclasses import dataclass

NOTATION = (
    r"$x$: the words; $x_{\setminus i}$: without word $i$; $e_i$: word $i$'s input embedding; $p_c$: the model's "
    r"probability of the explained class $c$; $\mathrm{lo}(p) = \log_2 \frac{p}{1-p}$, the log-odds."
)


@dataclass(frozen=True)
class MethodNote:
    formula: str  # LaTeX for st.latex
    computes: str  # markdown, one or two sentences
    pitfalls: tuple[str, ...]  # markdown, one item each


_LOO_PITFALLS = (
    (
        "The removal decides the answer: deleting a word, [UNK], [PAD], [MASK] and a zero embedding are different "
        "counterfactuals, and most are inputs the model never saw in training (out of distribution)."
    ),
    (
        "One word at a time misses interactions: two words that can replace each other (*great ... great*) each look "
        "unimportant."
    ),
)
_LOO = MethodNote(
    formula=r"s_i = \mathrm{lo}\big(p_c(x)\big) - \mathrm{lo}\big(p_c(x_{\setminus i})\big)",
    computes="How much the log-odds of the class drop when word $i$ is removed ($x_{\\setminus i}$: deleted, or "
    "replaced by one special token or a zero embedding, as the variant says).",
    pitfalls=_LOO_PITFALLS,
)
_GRADIENT_PITFALL = (
    "A gradient is local: it says how the output moves for an infinitesimal change of the embedding, not what "
    "happens when the word is removed; saturated outputs have small gradients on important words."
)
_LIME_NOISE = (
    "Sampling noise: another seed or fewer samples gives another ranking; compare two seeds before trusting the "
    "order of close words."
)

NOTES: dict[str, MethodNote] = {
    **{f"loo_{name}": _LOO for name in ("empty", "unk", "pad", "mask", "zero")},
    "saliency": MethodNote(
        formula=r"s_i = \big\lVert \nabla_{e_i}\, p_c(x) \big\rVert_2",
        computes="The size of the gradient of the class probability with respect to each word's embedding.",
        pitfalls=(
            _GRADIENT_PITFALL,
            "The norm has no sign: it cannot tell a word that supports the class from one that speaks against it.",
        ),
    ),
    "grad_x_input": MethodNote(
        formula=r"s_i = e_i \cdot \nabla_{e_i}\, p_c(x)",
        computes="The first-order Taylor term of each word: its embedding times the gradient, summed over dimensions.",
        pitfalls=(_GRADIENT_PITFALL, "Embeddings are not zero-centred, so the implicit baseline (0) is arbitrary."),
    ),
    "integrated_gradients": MethodNote(
        formula=r"s_i = (e_i - e'_i) \cdot \int_0^1 \nabla_{e_i}\, p_c\big(e' + \alpha\,(e - e')\big)\, d\alpha",
        computes="Gradients averaged along the straight path from a baseline $e'$ to the input; the scores add up to "
        "$p_c(e) - p_c(e')$ (completeness, checked by the convergence delta).",
        pitfalls=(
            (
                "Baseline choice: [PAD], [MASK] and zero embeddings give different attributions, and none means "
                "'no word' to the model; the straight path runs through inputs no sentence produces."
            ),
            "Too few steps break completeness: watch the convergence delta in the cost table.",
        ),
    ),
    "attention_mean": MethodNote(
        formula=r"s_j = \frac{1}{L H n} \sum_{l=1}^{L} \sum_{h=1}^{H} \sum_{i=1}^{n} A^{(l,h)}_{ij}",
        computes="The attention each word receives, averaged over layers, heads and query positions.",
        pitfalls=(
            (
                "Attention is not explanation (Jain & Wallace 2019): other attention weights can give the same "
                "prediction, and attention ignores the value vectors, the MLPs and the classifier head."
            ),
            "Scores are never negative and do not depend on the explained class.",
        ),
    ),
    "attention_rollout": MethodNote(
        formula=r"R = \tilde A^{(L)} \cdots \tilde A^{(1)},\quad \tilde A^{(l)} = \tfrac12 \bar A^{(l)} + \tfrac12 I,"
        r"\quad s_j = \frac{1}{n} \sum_i R_{ij}",
        computes="Attention propagated through the layers, with the residual connection as an identity term "
        "(Abnar & Zuidema 2020); $\\bar A^{(l)}$ is layer $l$'s head-averaged attention.",
        pitfalls=(
            "Still attention: class-independent and blind to the MLPs and the head.",
            "Rollout tends towards a uniform matrix in deep models; the identity weight is a modelling choice.",
        ),
    ),
    "im": MethodNote(
        formula=r"s_i = \mathrm{lo}\big(p_c(x)\big) - \mathrm{lo}\Big(\sum_{\tilde w} q(\tilde w \mid x_{\setminus i})"
        r"\; p_c(x_{i \leftarrow \tilde w})\Big)",
        computes="Leave-one-out where the removed word is marginalised over a masked language model's fill-ins "
        "$q(\\tilde w \\mid x_{\\setminus i})$ (Kim et al. 2020).",
        pitfalls=(
            (
                "Masked-LM dependence (Pham et al. 2022): when the masked LM restores the original word, the "
                "counterfactuals are the input itself and the word scores near zero however much the classifier uses "
                "it; another masked LM gives other scores."
            ),
            "Scored by a metric that also fills in with a masked LM, IM looks best: the judge shares its bias.",
        ),
    ),
    "lime": MethodNote(
        formula=r"w = \arg\min_{w} \sum_{z} \pi_x(z)\,\big(p_c(z) - w_0 - w^\top z\big)^2 + \alpha \lVert w \rVert^2,"
        r"\quad s_i = w_i",
        computes="A weighted linear surrogate fitted to the model on random word removals $z$ (0/1 per word), "
        "weighted by their closeness $\\pi_x(z)$ to the input (Ribeiro et al. 2016).",
        pitfalls=(_LIME_NOISE, "The kernel width and the removal (deletion) shape the answer as much as the model."),
    ),
    "lime_mlm": MethodNote(
        formula=r"w = \arg\min_{w} \sum_{z} \pi_x(z)\,\big(p_c(\mathrm{fill}(z)) - w_0 - w^\top z\big)^2"
        r" + \alpha \lVert w \rVert^2",
        computes="LIME whose removed words are replaced by the masked LM's top-1 fill-in (Pham et al.'s LIME_BERT), "
        "so the perturbed inputs stay fluent.",
        pitfalls=(_LIME_NOISE, "The same masked-LM dependence as IM: a restored word is not removed at all."),
    ),
    "kernel_shap": MethodNote(
        formula=r"\phi = \arg\min_{\phi} \sum_{z} \frac{M - 1}{\binom{M}{|z|}\, |z|\, (M - |z|)}"
        r"\big(p_c(h(z)) - \phi_0 - \textstyle\sum_i \phi_i z_i\big)^2",
        computes="Shapley values of the words estimated by a weighted regression over coalitions $z$ "
        "(Lundberg & Lee 2017); absent words are deleted.",
        pitfalls=(
            "Sampling noise with fewer coalitions than $2^M$; exact only for short texts.",
            "Shapley values of deleted words: the value of a coalition depends on the removal, as for LOO.",
        ),
    ),
    "marc": MethodNote(
        formula=r"\min_{w,s}\; -\log p_c\big(\tilde e(m)\big) - \log\big(1 - p_c(\tilde e(1-m))\big)"
        r" + \alpha_m \bar{m}^2 - \alpha_w \overline{\log s},\quad"
        r" m_j = \mathrm{sigmoid}\Big(\sum_i w_i \exp\big(-(i-j)^2 / s_i\big)\Big),\quad"
        r" \tilde e(m) = m \odot e + (1-m)\, e_{\mathrm{PAD}}",
        computes="A word mask made of Gaussian spans (a weight $w_i$ and a width $s_i$ per word), optimised with "
        "Adam so the kept words alone keep the class (sufficiency) and the rest alone lose it (by default "
        "$-\\log(1-p_c)$; Eq. 4's $+\\log p_c$ is the option `complement=log_prob`). Masked words are blended "
        "toward the [PAD] embedding, with noise and random mask flips at every step; $\\bar m$ is the mean mask, "
        "$\\alpha_m = 1$ and $\\alpha_w = 1.2$ by default (Brinner & Zarrieß 2023).",
        pitfalls=(
            (
                "An optimisation: another seed or step count can end in another optimum; the trace shows whether it "
                "converged."
            ),
            "Blending embeddings toward [PAD] creates inputs between words that no text produces.",
        ),
    ),
    "aml": MethodNote(
        formula=r"\min_\theta\; -\sum_k y_k \log p_k\big(\tilde e(a)\big) - \lambda_{\mathrm{inv}}"
        r" \log\big(1 - p_c(\tilde e(1-a))\big) - \lambda_s \frac{1}{n} \sum_i \log(1 - a_i),\quad"
        r" a = m_\theta(x),\ \tilde e(a) = a \odot e + (1-a)\, e_{\mathrm{MASK}}",
        computes="A learned attribution model $m_\\theta$ (an encoder with a per-token head) pre-trained on a slice "
        "and fine-tuned on the example (Barkan et al. 2024). $y$: the model's own probabilities on $x$ (one-hot "
        "on $c$ when $c$ is not its prediction); masked words are blended toward the [MASK] embedding ([UNK] "
        "without one); the sparsity term $-\\log(1-a_i)$ pushes every mask value toward 0. Every weight is 1 "
        "by default.",
        pitfalls=(
            "Its answer depends on the pre-training slice and budget, far smaller here than in the paper.",
            "The fine-tuning step is picked by a faithfulness metric, which then favours AML when reported.",
        ),
    ),
    "random": MethodNote(
        formula=r"s_i \sim \mathcal{U}(0, 1)\ \text{i.i.d. (seeded)}",
        computes="No explanation at all: the control every method must beat (Adebayo et al. 2018).",
        pitfalls=("A method that does not beat it on a metric has not shown it explains anything on that metric.",),
    ),
    "smoothgrad": MethodNote(
        formula=r"s_i = \Big\lVert \frac{1}{n} \sum_{k=1}^{n} \nabla_{e_i}\, p_c(e + \varepsilon_k) \Big\rVert,"
        r"\quad \varepsilon_k \sim \mathcal{N}(0, \sigma^2 I)",
        computes="Saliency averaged over noisy copies of the embeddings (Smilkov et al. 2017), which smooths the "
        "gradient's local jitter.",
        pitfalls=(
            (
                "The noise level $\\sigma$ (a fraction of the embedding spread) is a free choice: too small changes "
                "nothing, too large explains other inputs."
            ),
            _GRADIENT_PITFALL,
        ),
    ),
    "vargrad": MethodNote(
        formula=r"s_i = \mathrm{Var}_{k}\big[\nabla_{e_i}\, p_c(e + \varepsilon_k)\big],"
        r"\quad \varepsilon_k \sim \mathcal{N}(0, \sigma^2 I)",
        computes="The variance of the gradient over noisy copies of the embeddings (Adebayo et al. 2018).",
        pitfalls=(
            (
                "Unsigned, and Adebayo et al. found it partly independent of the model's weights: check it against the "
                "randomized copy."
            ),
        ),
    ),
    "gradient_shap": MethodNote(
        formula=r"s_i = \mathbb{E}_{e' \sim B,\ \alpha \sim \mathcal{U}(0,1)}"
        r"\big[(e_i - e'_i) \cdot \nabla_{e_i}\, p_c\big(e' + \alpha (e - e')\big)\big]",
        computes="Integrated gradients with the baseline and the point on the path drawn at random; its mean "
        "approximates SHAP values (Lundberg & Lee 2017).",
        pitfalls=(
            "The baseline distribution ([PAD], [MASK], zero embeddings) matters as much as IG's baseline.",
            "Completeness holds only in expectation: few samples leave a large gap.",
        ),
    ),
    "deeplift": MethodNote(
        formula=r"s_i = (e_i - e'_i) \cdot m_i,\qquad \sum_i s_i \approx z_c(e) - z_c(e')",
        computes="Differences from a reference input (by default [PAD] on every word) propagated backwards with "
        "the rescale rule's multipliers $m_i$ (Shrikumar et al. 2017); by default of the class's logit $z_c$ "
        "(the option `output=probability` explains $p_c$ instead).",
        pitfalls=(
            (
                "Its rules are defined for ReLU-like layers; softmax attention, GELU and LayerNorm fall back to "
                "approximations, so summation to delta can fail on transformers."
            ),
            "A reference input is needed, with the same arbitrariness as IG's baseline.",
        ),
    ),
    "occlusion": MethodNote(
        formula=r"s_i = \frac{1}{|W_i|} \sum_{w \in W_i} \big[p_c(x) - p_c(x_{\setminus w})\big]",
        computes="Sliding windows $w$ of one to three words (three by default) replaced by [MASK] in turn (Zeiler & "
        "Fergus 2014); a word's score is the mean effect of the windows $W_i$ that cover it, a probability "
        "difference. Window 1 is leave-one-out with the same removal, but not the loo\\_ methods' numbers: "
        "they score a log-odds difference.",
        pitfalls=("Wider windows blur the scores of neighbouring words together.", _LOO_PITFALLS[0]),
    ),
    "partition_shap": MethodNote(
        formula=r"\phi_i = \sum_{S \subseteq N \setminus \{i\}} \frac{|S|!\,(n - |S| - 1)!}{n!}"
        r"\big[v(S \cup \{i\}) - v(S)\big]\ \text{over coalitions that respect a word hierarchy}",
        computes="Owen values: Shapley values computed recursively over a hierarchical partition of the words "
        "(the shap package's Partition explainer; Lundberg & Lee 2017), far fewer evaluations than exact Shapley.",
        pitfalls=(
            "The hierarchy (which words are grouped) changes the values; words grouped together share credit.",
            "Masked words are a removal choice like LOO's.",
        ),
    ),
}
