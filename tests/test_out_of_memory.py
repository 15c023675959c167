"""Running out of device memory halves the batch and tries again (issue 20, item 7).

There is no GPU here, so the error is simulated: the model's forward raises
``torch.cuda.OutOfMemoryError`` whenever it is given more rows than a limit, as a GPU with too
little memory would. The scorer retries the chunk at half the batch size; the gradient path (and
every explainer) runs again at half the batch size. The results must equal the unconstrained
run's, and only the passes of the successful run are counted.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explainers
from core.classifier import Classifier
from core.types import Example

LONG = Example(segments=(("the", "movie", "was", "great", "but", "the", "plot", "was", "bad", ".") * 2,), id="long")
PLANTED = [
    Example(segments=(("the", "movie", "was", "great"),), id="a"),
    Example(segments=(("it", "is", "a", "bad", "film", "and", "a", "boring", "plot"),), id="b"),
    Example(segments=(("great", "actors"),), id="c"),
]


def _limit_rows(model: torch.nn.Module, monkeypatch, limit: int) -> list[int]:
    """Make ``model`` raise ``torch.cuda.OutOfMemoryError`` above ``limit`` rows; the rows of every call."""
    original = model.forward
    seen: list[int] = []

    def forward(*args, **kwargs):
        inputs = kwargs.get("input_ids") if kwargs.get("input_ids") is not None else kwargs["inputs_embeds"]
        seen.append(inputs.shape[0])
        if inputs.shape[0] > limit:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", forward)
    return seen


def test_scorer_halves_the_batch_and_scores_the_chunk_again(toy_linear_loaded, monkeypatch):
    free = Classifier(toy_linear_loaded, batch_size=16)
    encoded = free.encode(LONG)
    variants = [encoded.perturb(replace_words={w: ()}) for w in range(encoded.n_words)]
    expected = free.predict_proba(variants)

    tight = Classifier(toy_linear_loaded, batch_size=16)
    seen = _limit_rows(toy_linear_loaded.logits_model, monkeypatch, limit=5)
    got = tight.predict_proba(variants)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert tight.batch_size == 4  # 16 -> 8 -> 4
    assert seen[:3] == [16, 8, 4] and max(seen[2:]) <= 4
    assert tight.forward_passes == free.forward_passes == len(set(variants))  # failed chunks are not counted


@pytest.mark.parametrize(
    ("method", "overrides"),
    [
        ("saliency", {}),
        ("integrated_gradients", {"n_steps": 20}),
        ("marc", {"n_steps": 12}),
        ("loo_empty", {}),
    ],
)
def test_gradient_path_and_explainers_halve_the_batch_and_run_again(toy_bert_loaded, monkeypatch, method, overrides):
    spec = explainers.get(method)
    params = spec.make_params(overrides)
    targets = [1, 0, 1]
    free = Classifier(toy_bert_loaded, batch_size=16)
    expected = explainers.run_explainers(spec, free, PLANTED, targets, params)

    tight = Classifier(toy_bert_loaded, batch_size=16)
    seen = _limit_rows(toy_bert_loaded.logits_model, monkeypatch, limit=2)
    got = explainers.run_explainers(spec, tight, PLANTED, targets, params)
    assert tight.batch_size == 2  # 16 -> 8 -> 4 -> 2
    assert max(seen) > 2  # it did run out of memory before
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-5)
        assert (a.forward_passes, a.backward_passes) == (b.forward_passes, b.backward_passes)


def test_deeplift_halves_the_batch_and_runs_again(toy_bert_loaded, monkeypatch):
    """DeepLIFT runs on a private copy of the module tree (its hooks), so the simulated limit is
    set on the model's class, which the copy shares; Captum's errors become ValueErrors, but an
    out-of-memory error reaches the runner, which halves the batch."""
    spec = explainers.get("deeplift")
    targets = [1, 0, 1]
    expected = explainers.run_explainers(spec, Classifier(toy_bert_loaded, batch_size=16), PLANTED, targets)
    original = type(toy_bert_loaded.model).forward
    seen: list[int] = []

    def forward(self, *args, **kwargs):
        seen.append(kwargs["inputs_embeds"].shape[0])
        if seen[-1] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(toy_bert_loaded.model), "forward", forward)
    tight = Classifier(toy_bert_loaded, batch_size=16)
    got = explainers.run_explainers(spec, tight, PLANTED, targets)
    assert tight.batch_size == 2 and seen[0] == 6  # 16 -> 8 -> 4 -> 2: one example (2 rows) a call
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-5)
        assert (a.forward_passes, a.backward_passes) == (b.forward_passes, b.backward_passes) == (2, 2)


def test_out_of_memory_at_batch_size_one_is_raised(toy_linear_loaded, monkeypatch):
    clf = Classifier(toy_linear_loaded, batch_size=4)
    _limit_rows(toy_linear_loaded.logits_model, monkeypatch, limit=0)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        explainers.run_explainer(explainers.get("saliency"), clf, PLANTED[0], 1)
    assert clf.batch_size == 1
