"""What a ROAR job will cost, before it starts: counts from the job, rates measured here.

The counts (retrains, training steps, explanations per method, masked-LM fills, predictions)
come from ``experiments.roar.job.RoarJob.estimate``; the rates are measured on this machine with
the job's own data: three training steps of the job's recipe (after one untimed step), each
method explaining ``n_probe`` evaluation examples with the task's bundled model (a job on a
model and a dataset: the model of those three steps), the batched
scorer on a batch of evaluation examples, and the masked LM filling them (``mlm`` removal). The
time is for one worker; Ray divides the per-unit work over its workers, not the explanations of
one unit.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, cast

from engine.roar.job_data import JobData
from engine.roar.unit import train_config
from experiments.roar.job import Cost


@dataclass(frozen=True)
class Rates:
    seconds_per_step: float
    seconds_per_explanation: dict[str, float]
    seconds_per_prediction: float
    seconds_per_fill: float


def measure(data: JobData, n_probe: int = 2) -> Rates:
    """Per-item seconds on this machine (module docstring)."""
    import numpy as np

    from core.classifier import Classifier
    from core.loaded import classifier_from_model, load_classifier
    from core.models import base_source, load_tokenizer
    from core.train import fit_classifier
    from engine.explain import explain_example
    from engine.roar.run import task_model
    from experiments.roar.removal import removed_views

    job = data.job
    config = train_config(data, 0)
    config.steps = 1
    fit_classifier(config, data.train, data.info, log=False, base=data.base())
    config.steps = 3
    start = time.perf_counter()
    probe_model = fit_classifier(config, data.train, data.info, log=False, base=data.base())
    per_step = (time.perf_counter() - start) / 3
    if job.task is not None:
        clf = Classifier(load_classifier(task_model(job)))
    else:  # no trained classifier of the job's labels yet: the probe's three steps stand in
        merged = cast(Any, probe_model).merge_and_unload().eval()
        clf = Classifier(classifier_from_model(merged, load_tokenizer(base_source(data.info)), name=task_model(job)))
    probe = data.eval[:n_probe]
    rates = {}
    for method in job.methods:
        start = time.perf_counter()
        for example in probe:
            explain_example(clf, example, [method], target=example.label, seed=0, mlm=_mlm_for(data, method))
        rates[method] = (time.perf_counter() - start) / len(probe)
    batch = data.eval[:64]
    start = time.perf_counter()
    clf.predict_proba([clf.encode(clf.fit_example(e)[0]).variant for e in batch])
    per_prediction = (time.perf_counter() - start) / len(batch)
    per_fill = 0.0
    if job.removal == "mlm":
        removed = [np.arange(len(e.words)) % 3 == 0 for e in batch]
        start = time.perf_counter()
        removed_views(batch, removed, "mlm", mlm=data.masked_lm())
        per_fill = (time.perf_counter() - start) / len(batch)
    return Rates(per_step, rates, per_prediction, per_fill)


def _mlm_for(data: JobData, method: str):
    import explainers

    return data.masked_lm() if explainers.get(method).needs_mlm else None


def estimate(data: JobData, rates: Rates | None = None) -> tuple[Cost, Rates]:
    """The job's counts and estimated seconds on one worker."""
    rates = rates or measure(data)
    cost = data.job.estimate(
        rates.seconds_per_step,
        rates.seconds_per_explanation,
        seconds_per_prediction=rates.seconds_per_prediction,
        seconds_per_fill=rates.seconds_per_fill,
        n_train=len(data.train),
        n_eval=len(data.eval),
    )
    return cost, rates


def cost_json(cost: Cost, rates: Rates) -> dict[str, Any]:
    return {
        "retrains": cost.retrains,
        "training_steps": cost.training_steps,
        "explanations": cost.explanations,
        "fills": cost.fills,
        "predictions": cost.predictions,
        "seconds": round(cost.seconds, 1),
        "rates": asdict(rates),
    }
