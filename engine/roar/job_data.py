"""A ROAR job's data: its train and evaluation examples, the task's training recipe and the
files its units keep under the run's folder (the saved models), with the masked LM, mask token,
starting encoder and saved classifiers each loaded once per process."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.types import Example
from engine.roar.recipe import Recipe
from experiments.roar.job import RoarJob

if TYPE_CHECKING:
    from core.classifier import Classifier
    from core.masked_lm import MaskedLM


@dataclass
class JobData:
    """The examples of a job (train and evaluation), the task's training recipe and its files."""

    job: RoarJob
    train: list[Example]
    eval: list[Example]
    info: dict[str, Any]  # the task.json of the retrained models
    folder: Path  # runs/<run_id> in the store: models/ and scores/ live here
    recipe: Recipe
    mlm: MaskedLM | None = None
    _base: Any = None
    _mask_token: str | None = None
    _models: dict[str, Classifier] = field(default_factory=dict)

    def examples(self, split: str) -> list[Example]:
        return self.train if split == "train" else self.eval

    def masked_lm(self) -> MaskedLM:
        if self.mlm is None:
            from core.masked_lm import MaskedLM

            self.mlm = MaskedLM.load(self.job.mlm)
        return self.mlm

    def mask_token(self) -> str:
        """The retrained classifier's own mask token (RoBERTa's ``<mask>``, BERT's ``[MASK]``),
        which the ``mask`` removal writes, as Madsen et al. 2022 (arXiv:2110.08412) do; ``[MASK]``
        for a tokenizer without one."""
        if self._mask_token is None:
            from core.models import base_source, load_tokenizer

            self._mask_token = load_tokenizer(base_source(self.info)).mask_token or "[MASK]"
        return self._mask_token

    def base(self):
        """The packaged encoder with the task's head, loaded once; training copies it."""
        if self._base is None:
            from core.models import base_model

            self._base = base_model(self.info)
        return self._base

    def model_folder(self, index: int) -> Path:
        return self.folder / "models" / f"unit-{index:05d}"

    def classifier(self, index: int) -> Classifier:
        """The saved model of unit ``index`` (loaded once per process; a few kept), reading at
        most the recipe's ``max_length`` tokens, as it was trained (it read up to 512)."""
        key = str(self.model_folder(index))
        if key not in self._models:
            from core.classifier import Classifier
            from core.loaded import load_classifier

            if not (Path(key) / "adapter_config.json").is_file():
                raise ValueError(f"the model of unit {index} is not saved under {key}")
            if len(self._models) >= 4:
                self._models.pop(next(iter(self._models)))
            loaded = load_classifier(key)  # its own tokenizer object: capping it changes no other model
            loaded.tokenizer.model_max_length = self.recipe.max_length  # type: ignore[attr-defined]
            self._models[key] = Classifier(loaded, batch_size=64)
        return self._models[key]
