"""The guided tours: each a sequence of steps that set the sidebar and a page's widgets for the
user and say what to look at. Data only; ``ui/tours.py`` runs them.

A step's ``state`` holds widget values by their keys (``"page.widget"``, see the pages); the
tours' AppTest runs every step of every tour, so a renamed widget shows up there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ui.roar import SYNTHETIC_SOURCE
from ui.text import THESIS

HEATMAPS = "app_pages/heatmaps.py"
IM = "app_pages/input_marginalization.py"
FAITHFULNESS = "app_pages/faithfulness.py"
RATIONALES = "app_pages/rationales.py"
SANITY = "app_pages/sanity_checks.py"
ADVERSARIAL = "app_pages/adversarial.py"
ROAR = "app_pages/roar.py"  # offered once app.py lists the page (ui.tours.available)


@dataclass(frozen=True)
class Step:
    """One stop: the page, the sidebar's model and example (or ``typed`` text instead), the page's
    widget values and what to look at."""

    page: str
    title: str
    text: str
    model: str = "minilm-sst2"
    dataset: str = "examples"
    split: str = "sst2"
    index: int = 0
    state: Mapping[str, Any] = field(default_factory=dict)
    typed: str | None = None  # typed text in the sidebar instead of the dataset example


@dataclass(frozen=True)
class Tour:
    key: str
    title: str
    label: str  # the sidebar's tour picker (the title ran past it)
    summary: str
    steps: tuple[Step, ...]


GRADIENT_AND_ATTENTION = ["saliency", "grad_x_input", "integrated_gradients", "attention_rollout"]

TOURS = (
    Tour(
        key="double_trouble",
        title="Double Trouble",
        label="Double Trouble",
        summary="Pham et al. 2022 (arXiv:2110.11929): Input Marginalization hides words the masked LM can restore, "
        "and the removal used to judge faithfulness decides which method wins.",
        steps=(
            Step(
                page=IM,
                title="A word the masked LM puts back",
                text="The sentence ends *the villain **is** silly*. Look at the word table: leave-one-out gives "
                "**is** a large score (deleting it moves the prediction), Input Marginalization almost none. The "
                "fill-ins below show why: the masked LM's top fill-in for the gap is *is* itself, so IM averages "
                "over inputs that are mostly the original sentence. The word matters to the classifier; IM cannot "
                "see it.",
                index=8,
                state={"im.word": 19},
            ),
            Step(
                page=FAITHFULNESS,
                title="Deletion versus masked-LM deletion",
                text="The same two methods scored two ways on the 12 bundled SST-2 sentences. Press **Run on the "
                "slice**, then compare the two columns. Pham et al. 2022 (Table 1) find the verdict flips: when "
                "removed words are **deleted**, leave-one-out wins; when they are **replaced by the masked LM's "
                "fill-ins** (Deletion_BERT), IM wins (the project reproduces this on SST-2 dev, see BENCHMARKS.md). "
                "Does it hold on these twelve? A faithfulness metric that uses an explainer's own kind of "
                "counterfactual rewards that explainer.",
                state={
                    "faithfulness.view": "Removal modes compared",
                    "faithfulness.methods": ["loo_empty", "im"],
                    "faithfulness.compare_a": "delete",
                    "faithfulness.compare_b": "mlm",
                    "faithfulness.slice_n": 12,
                },
            ),
        ),
    ),
    Tour(
        key="sanity",
        title="Do explanations pass sanity checks?",
        label="Sanity checks",
        summary="Adebayo et al. 2018 (arXiv:1810.03292): an explanation that does not change when the model's "
        "weights are destroyed cannot be explaining the model.",
        steps=(
            Step(
                page=HEATMAPS,
                title="This model versus its randomized copy",
                text="Each method has two rows: **A**, the trained model, and **B**, a copy whose every weight was "
                "re-initialised. Scroll to **Two models side by side** at the end of the page and look at the rank "
                "correlations under its heatmap: a method whose two rows "
                "still rank the words alike (ρ near 1) is describing the input, not what the model learned. The "
                "random baseline ignores the model altogether, so its ρ is exactly 1: the mark of an explanation "
                "that says nothing about the model.",
                index=0,
                state={
                    "heatmaps.methods": [*GRADIENT_AND_ATTENTION, "random"],
                    "heatmaps.compare.on": True,
                    "heatmaps.compare.model": "randomized",
                    "heatmaps.compare.path": "",
                },
            ),
            Step(
                page=SANITY,
                title="Cascading randomization, layer by layer",
                text="Press **Run the sanity check**. The weights are destroyed from the top (the classifier "
                "head, then block 6, 5, ...) down to the embeddings, and each step's explanation is compared with "
                f"the original one. A faithful method's curve falls; {THESIS} finds gradient methods near 0 after "
                "one or two blocks and attention falling slowly. Attention cannot react to the head step at all.",
                index=0,
                state={
                    "sanity.methods": GRADIENT_AND_ATTENTION,
                    "sanity.mode": "cascading",
                    "sanity.scope": "this example",
                },
            ),
        ),
    ),
    Tour(
        key="attacks",
        title="Explanations can be attacked",
        label="Attacks",
        summary=f"Ghorbani et al. 2019 (arXiv:1710.10547), as {THESIS} applies it to text: a small change of the "
        "input that keeps the prediction can move the words an explanation ranks highest.",
        steps=(
            Step(
                page=ADVERSARIAL,
                title="A substitution that keeps the prediction",
                text="The attack replaces a few words (never the explanation's top words) by the masked LM's "
                "fill-ins, keeping the predicted class and its probability, and keeps the substitutions that push "
                "the top words furthest down. Press **Run the attack**. Look at the **Probability Change** (near "
                "0: the model barely noticed) next to the **Rank Change** (how many of the top positions now hold "
                "other words), and at the attacked text with the substituted words marked.",
                index=3,
                state={
                    "adversarial.attack": "substitution",
                    "adversarial.methods": ["loo_empty", "saliency", "integrated_gradients"],
                    "adversarial.scope": "this example",
                },
            ),
        ),
    ),
    Tour(
        key="plausibility",
        title="Which method agrees with people?",
        label="Plausibility",
        summary="e-SNLI (Camburu et al. 2018, arXiv:1812.01193): annotators highlighted the words that justify the "
        "label; ERASER (DeYoung et al. 2020, arXiv:1911.03429) scores explanations against such highlights.",
        steps=(
            Step(
                page=RATIONALES,
                title="People's highlights, outlined",
                text="The outlined words are the ones the annotators highlighted. Compare each method's row with "
                "them, then the table: token F1 and IOU-F1 count overlap with the highlights, AUPRC ranks all "
                "words. Agreeing with people is plausibility, not faithfulness: a method can match the humans and "
                "still not describe the model.",
                model="minilm-esnli",
                split="esnli",
                index=0,
                state={"rationales.view": "This example"},
            ),
            Step(
                page=RATIONALES,
                title="Over the bundled e-SNLI pairs",
                text="Press **Run on the slice**: the same scores averaged over the ten bundled pairs with 95% "
                "intervals. Which method comes closest to the people? Each bundled pair carries one person's "
                "highlight, so there is no human ceiling row here; on HateXplain, whose posts three annotators "
                "highlighted (its data folder and model in the sidebar), the table adds one: how well one "
                "annotator matches the others, the most a method can be expected to reach.",
                model="minilm-esnli",
                split="esnli",
                index=0,
                state={"rationales.view": "Dataset slice", "rationales.slice_n": 10},
            ),
            Step(
                page=RATIONALES,
                title="Your own highlight",
                text="No one highlighted this typed review. Mark the words you would point to as the reasons for "
                "its label (the word buttons under the settings): every method is then scored against your "
                "highlight, with the same table. Which method picks your words? Try marking only the words that "
                "carry the sentiment, then add the ones you would keep for context, and watch the ranking move.",
                state={"rationales.view": "This example"},
                typed="the acting is superb but the plot is a dull , slow mess",
            ),
        ),
    ),
    Tour(
        key="roar",
        title="Does retraining change the verdict? (ROAR)",
        label="ROAR",
        summary="Hooker et al. 2019 (arXiv:1806.10758), ROAR_BERT (Pham et al. 2022) and Recursive ROAR (Madsen et al. "
        "2022, arXiv:2110.08412): remove each method's top words from the training data too, retrain, and see "
        "how far accuracy falls.",
        steps=(
            Step(
                page=ROAR,
                title="Accuracy as the top words are removed and the model retrained",
                text="Each curve is a method: the share of words removed on the x-axis, the retrained model's "
                "accuracy on the y-axis, with 95% bands over seeds. A method whose curve falls below random's "
                "found words the task needs; the faithfulness table turns the gap into one number (Madsen et al. 2022, "
                "Eq. 3: 0 is random, negative is worse than random). Watch the class-leakage warnings: removing "
                "words can itself reveal the label.",
            ),
            Step(
                page=ROAR,
                title="Why recursive: redundant features",
                text="A synthetic task with four informative features that can replace each other. Plain ROAR "
                "ranks once with the first model: while a redundant copy remains, accuracy stays high and the "
                "importance looks wrong. Recursive ROAR ranks again after each retraining and follows the truth. "
                "Compare the curves, not Eq. 3: random masks another feature in each example, which one linear "
                "model cannot retrain around, so it falls first and Eq. 3 scores even the truth below it here.",
                state={"roar.source": SYNTHETIC_SOURCE},
            ),
        ),
    ),
)
