"""``core.devices.chosen_device``: the device a caller names, refused in one line where this machine
has none of that kind (torch failed at the first tensor moved there, with an AssertionError)."""

from __future__ import annotations

import pytest
import torch

import api
from core.devices import best_device, chosen_device


def test_no_device_named_is_the_best_one_and_the_cpu_is_always_there() -> None:
    assert chosen_device(None) == best_device()
    assert chosen_device("cpu") == torch.device("cpu") == chosen_device(torch.device("cpu"))


def test_cuda_is_given_where_there_is_one_and_refused_where_there_is_none() -> None:
    if torch.cuda.is_available():
        assert chosen_device("cuda:0") == torch.device("cuda:0")
    else:
        with pytest.raises(ValueError, match="device 'cuda:0' is not available on this machine"):
            chosen_device("cuda:0")


def test_a_name_torch_does_not_know_is_refused() -> None:
    with pytest.raises(ValueError, match="device 'gpu' is not a torch device"):
        chosen_device("gpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal needs a machine without CUDA")
def test_the_api_refuses_a_missing_device_in_one_line(toy_bert_folder) -> None:
    with pytest.raises(ValueError, match="device 'cuda' is not available on this machine"):
        api.explain(toy_bert_folder, "good film", ["saliency"], device="cuda")


def test_a_loaded_classifier_prints_as_one_line(toy_bert_loaded) -> None:
    """``repr(api.load(...))`` printed the whole model and tokenizer into a notebook cell."""
    assert repr(toy_bert_loaded) == (
        f"<LoadedClassifier {toy_bert_loaded.name!r}: BertForSequenceClassification on cpu, labels negative, positive>"
    )
