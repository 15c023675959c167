"""The ROAR job definition: validation, the units it expands to (shared 0% and 100% models
counted once), what each unit is explained with, and the cost estimate, all by hand."""

from __future__ import annotations

import json
import re

import pytest

from experiments.roar.job import RoarJob, Unit
from experiments.roar.removal import MADSEN_2022_LEVELS, ONE_TOKEN_LEVELS, PHAM_2022_LEVELS, Level
from experiments.roar.scores import SHARED

METHODS = ("loo_empty", "integrated_gradients", "im")
RATES = {"loo_empty": 0.02, "integrated_gradients": 0.1, "im": 0.3, "random": 0.0}


def pham2022_job(**changes) -> RoarJob:
    settings = {"methods": METHODS, "task": "sst2", "levels": PHAM_2022_LEVELS, "seeds": 3}
    return RoarJob(**(settings | {"train_size": 2000, "eval_size": 872, "train_steps": 300} | changes))


def test_defaults_resolved_and_random_added():
    job = pham2022_job()
    assert job.methods == (*METHODS, "random")
    assert (job.removal, job.rounding, job.order, job.target, job.scope) == (
        "delete",
        "pham2022",
        "signed",
        "gold",
        "main",
    )
    assert (RoarJob(methods=("saliency", "random"), task="sst2").train_steps) == 1100  # the sst2 recipe
    masked = pham2022_job(removal="mask")
    assert (masked.rounding, masked.order) == ("madsen2022", "absolute")
    assert pham2022_job(removal="mask", rounding="pham2022", order="signed").rounding == "pham2022"
    hub = RoarJob(methods=("saliency",), model="bert-base-uncased", dataset="hub:sst2", train_steps=50)
    assert hub.task is None and hub.methods == ("saliency", "random")


def test_units_share_the_0_and_100_percent_models():
    job = pham2022_job()
    units = job.units
    # 3 seeds x (0% and 100%) + 4 methods x 3 seeds x 3 levels
    assert len(units) == 6 + 36 == len(set(units))
    assert [u for u in units if u.method == SHARED] == [
        Unit(SHARED, Level(level), seed) for seed in range(3) for level in (0, 100)
    ]
    assert Unit("im", Level(20), 2) in units and Unit("im", Level(0), 2) not in units
    assert job.curve_levels == (Level(0), *PHAM_2022_LEVELS)
    assert Unit("im", Level(20), 2).key == "im/20%/2"
    madsen2022 = RoarJob(
        methods=("saliency",), task="sst2", removal="mask", levels=MADSEN_2022_LEVELS, recursive=True, seeds=5
    )
    # Madsen et al. 2022: 9 iterations per measure, the 0% and 100% models once per seed
    assert len(madsen2022.units) == 10 + 2 * 5 * 9
    assert madsen2022.curve_levels == MADSEN_2022_LEVELS
    tokens = pham2022_job(levels=ONE_TOKEN_LEVELS)
    assert tokens.middle_levels == ONE_TOKEN_LEVELS[1:] and tokens.curve_levels == ONE_TOKEN_LEVELS
    assert Unit("im", Level(3, "tokens"), 0).key == "im/3t/0"


def test_what_explains_each_unit():
    plain, recursive = pham2022_job(), pham2022_job(recursive=True)
    assert plain.depends_on(Unit("im", Level(30), 1)) == Unit(SHARED, Level(0), 1)
    assert recursive.depends_on(Unit("im", Level(30), 1)) == Unit("im", Level(20), 1)
    assert recursive.depends_on(Unit("im", Level(10), 1)) == Unit(SHARED, Level(0), 1)
    assert recursive.depends_on(Unit(SHARED, Level(100), 1)) is None


def test_cost_estimate_by_hand():
    plain = pham2022_job().estimate(0.5, RATES, seconds_per_prediction=0.001)
    assert (plain.retrains, plain.training_steps, plain.predictions) == (42, 42 * 300, 42 * 872)
    assert plain.explanations == dict.fromkeys((*METHODS, "random"), 2872 * 3)
    assert plain.total_explanations == 4 * 2872 * 3 and plain.fills == 0
    assert plain.seconds == pytest.approx(12600 * 0.5 + 8616 * (0.02 + 0.1 + 0.3) + 36624 * 0.001)
    recursive = pham2022_job(recursive=True).estimate(0.5, RATES, seconds_per_prediction=0.001)
    assert recursive.explanations["im"] == 2872 * 3 * 3  # explained again at each level
    assert recursive.seconds == pytest.approx(6300 + 25848 * 0.42 + 36.624)
    mlm = pham2022_job(removal="mlm").estimate(0.5, 0.01, seconds_per_fill=0.002, n_train=100, n_eval=50)
    assert mlm.fills == 150 * 3 * (4 * 3 + 1)  # + 1: each seed's shared 100% unit
    assert mlm.seconds == pytest.approx(12600 * 0.5 + 4 * 150 * 3 * 0.01 + 5850 * 0.002)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"task": "imdb"}, "unknown task 'imdb'; choose one of sst2, esnli, movies, hatexplain"),
        ({"model": "bert-base-uncased"}, "give a task (e.g. sst2) or a model and a dataset, not both"),
        (
            {"task": None, "model": "bert-base-uncased"},
            "a model and a dataset go together, got model 'bert-base-uncased', dataset None",
        ),
        (
            {"task": None, "model": "m", "dataset": "sst2", "train_steps": None},
            "train_steps is needed for a model and dataset",
        ),
        ({"task": None, "model": "m", "dataset": "imdb"}, "unknown dataset 'imdb'; choose one of sst2, esnli,"),
        ({"methods": ("loo_empty", "shap")}, "unknown method 'shap'; choose from loo_empty,"),
        ({"methods": ("random",)}, "give at least one method besides the random baseline"),
        ({"removal": "erase"}, "unknown removal 'erase'; choose one of delete, mask, mlm"),
        ({"target": "label"}, "unknown target 'label'; choose one of gold, predicted"),
        ({"rounding": "round"}, "unknown rounding 'round'; choose one of pham2022, madsen2022"),
        ({"levels": (Level(20), Level(10))}, "levels must increase, got ['20%', '10%']"),
        ({"levels": (Level(0), Level(100))}, "at least one level between 0% and 100%, got ['0%', '100%']"),
        ({"levels": (Level(10), Level(20, "tokens"))}, "levels are all percentages or all token counts"),
        ({"seeds": 0}, "seeds must be a whole number from 1 to 100, got 0"),
        ({"train_size": 2.5}, "train_size must be a whole number of at least 1, got 2.5"),
        ({"seeds": 10**20}, f"seeds must be a whole number from 1 to 100, got {10**20}"),  # units() hung
        ({"train_steps": 10**23}, f"train_steps must be a whole number from 1 to 1,000,000, got {10**23}"),
    ],
)
def test_invalid_jobs_fail_with_one_line_naming_the_value(changes, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        pham2022_job(**changes)


def test_json_round_trip():
    for job in (pham2022_job(removal="mlm"), pham2022_job(levels=ONE_TOKEN_LEVELS, recursive=True)):
        data = job.to_json()
        assert json.loads(json.dumps(data)) == data
        assert RoarJob.from_json(data) == job
    assert pham2022_job().to_json()["levels"] == ["10%", "20%", "30%"]
    assert pham2022_job().to_json()["train_steps"] == 300
    with pytest.raises(ValueError, match="unknown job settings colour"):
        RoarJob.from_json(pham2022_job().to_json() | {"colour": "red"})


def test_estimate_errors():
    job = pham2022_job(train_size=None)
    with pytest.raises(ValueError, match="the estimate needs the number of training and evaluation examples"):
        job.estimate(0.5, RATES)
    with pytest.raises(ValueError, match="no seconds per explanation for im, random"):
        pham2022_job().estimate(0.5, {"loo_empty": 0.1, "integrated_gradients": 0.1})
    with pytest.raises(ValueError, match="seconds_per_step must be at least 0, got -1"):
        pham2022_job().estimate(-1, RATES)


def test_jobs_stored_under_the_old_rounding_names_read_as_the_new_ones():
    """Reports and runs stored before the rule names were renamed say paper000 / paper001."""
    job = pham2022_job(removal="mask", rounding="pham2022")
    old = RoarJob.from_json(job.to_json() | {"rounding": "paper000"})
    assert old == job and old.rounding == "pham2022"
    assert pham2022_job(removal="delete", rounding="paper001").rounding == "madsen2022"


def test_the_command_line_reads_the_old_preset_and_rule_names():
    import argparse

    from cli import roar
    from experiments.roar.removal import MADSEN_2022_LEVELS

    assert roar.parse_levels("paper001") == roar.parse_levels("madsen2022") == MADSEN_2022_LEVELS
    assert roar.parse_levels("paper000") == PHAM_2022_LEVELS
    parser = argparse.ArgumentParser()
    roar.register(parser.add_subparsers())
    args = parser.parse_args(["roar", "--rounding", "paper001"])
    assert args.rounding == "madsen2022" and roar.job_from_args(args).rounding == "madsen2022"
    with pytest.raises(SystemExit):
        parser.parse_args(["roar", "--rounding", "paper002"])
