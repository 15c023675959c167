"""``python -m cli attack``: adversarial attacks on explanations, as in the thesis "Assessing the
Interpretability of Large Language Models" (Oxford MSc, 2022, section 3.5).

Per example and method: Rank Change, Top-k Sum Change, Probability Change, Spearman's rho between
the two explanations, success, and the original and attacked words and scores; with several
examples, the mean measures per method and a fragility ranking.
"""

from __future__ import annotations

import argparse

from cli.common import (
    add_dataset,
    add_methods,
    add_model,
    load_dataset_examples,
    method_keys,
    parse_params,
    positive_int,
    print_json,
    printable,
    progress_bar,
    seed_int,
)
from cli.texts import TEXT_B_ALONE, check_text_alone, text_example

COMMAND = "attack"
HELP = "attack explanations: perturb the input, keep the prediction, change the ranking"
DEFAULT_METHODS = "saliency,grad_x_input,integrated_gradients"


def run(args: argparse.Namespace) -> int:
    import explainers
    from core.classifier import Classifier
    from core.loaded import load_classifier
    from core.numbers import fixed
    from engine.resources import Resources
    from experiments.attacks import attack_example, make_params, summarize

    if (args.text is None) == (args.dataset is None):
        raise ValueError("give either --text or --dataset")
    methods = method_keys(args)
    given = parse_params(args.param)
    overrides = dict(given.pop("attack", {}))
    unknown = set(given) - set(methods)
    if unknown:
        raise ValueError(f"--param for methods not requested: {', '.join(sorted(unknown))}")
    if args.attack == "embedding":
        if args.seed is not None:
            raise ValueError("--seed applies to the substitution attack: the embedding attack is deterministic")
        overrides.setdefault("objective", args.objective or "unconstrained")
    else:
        if args.objective is not None:
            raise ValueError("--objective applies to the embedding attack: the substitution attack keeps the class")
        if args.seed is not None:
            overrides.setdefault("seed", args.seed)
    params = make_params(args.attack, args.preset, overrides)
    if args.text is None and args.text_b is not None:
        raise ValueError(TEXT_B_ALONE)
    check_text_alone(args)
    if args.text is not None:
        examples = [text_example(args.text, args.text_b)]
    else:
        examples = load_dataset_examples(args)
    clf = Classifier(load_classifier(args.model), batch_size=args.batch_size, head_type=args.head_type)
    mlm = None
    if args.attack == "substitution" or any(explainers.get(m).needs_mlm for m in methods):
        from core.masked_lm import MaskedLM

        mlm = MaskedLM.load(args.mlm)
    rows, results = [], []
    resources = Resources.saved()  # one per command: AML pre-trains once for all the examples
    bar = progress_bar(100, enabled=not args.quiet, unit="%")  # tqdm: rate and time left
    for index, example in enumerate(examples):

        def step(fraction: float, message: str, index: int = index) -> None:
            if bar is not None:
                bar((index + fraction) / len(examples), f"example {index + 1} of {len(examples)}, {message}")

        per_method = attack_example(
            clf, example, methods, args.attack, params, mlm=mlm, explainer_params=given, resources=resources,
            progress=step,
        )  # fmt: skip
        results.append(per_method)
        rows.append({"id": example.id, "results": {m: r.to_json() for m, r in per_method.items()}})
        if not args.json:
            for method, result in per_method.items():
                measures = result.measures()
                rho = "n/a" if measures["spearman"] is None else fixed(measures["spearman"], 3, signed=True)
                print(
                    printable(
                        f"{example.id} {method}: rank_change {measures['rank_change']:.3f}, topk_sum_change "
                        f"{measures['topk_sum_change']:+.4g}, probability_change "
                        f"{fixed(measures['probability_change'], 4, signed=True)}, spearman {rho}, success {measures['success']}"
                    )
                )
                print(printable(f"  original: {' '.join(result.original.words)}"))
                print(printable(f"  attacked: {' '.join(result.attacked.words)}"))
    summary = summarize(results)
    if args.json:
        print_json(
            {
                "model": args.model,
                "attack": args.attack,
                "label_names": list(clf.label_names),
                "examples": rows,
                "summary": summary,
            }
        )
    else:
        for method in sorted(summary, key=lambda m: summary[m]["fragility_rank"]):
            row = summary[method]
            print(
                f"#{row['fragility_rank']} {method}: mean rank_change {row['rank_change']['mean']:.3f}, success rate {row['success_rate']:.2f}"
            )
    return 0


def register(sub) -> None:
    parser = sub.add_parser(COMMAND, help=HELP)
    add_model(parser)
    parser.add_argument("--text", help="the text (the premise for pair tasks)")
    parser.add_argument("--text-b", help="the second text (hypothesis) for pair tasks")
    add_dataset(parser)
    add_methods(parser, DEFAULT_METHODS, "; the embedding attack takes gradient methods")
    parser.add_argument("--attack", choices=["embedding", "substitution"], default="embedding")
    parser.add_argument(
        "--objective",
        choices=["unconstrained", "constrained"],
        help="embedding attack objective (default: unconstrained)",
    )
    parser.add_argument(
        "--preset",
        choices=["paper", "quick"],
        default="paper",
        help="the embedding attack's steps (the thesis's 500 or a quick 60); the substitution attack's "
        "candidates explained per round (every one, or 12 drawn at random)",
    )
    parser.add_argument(
        "--param",
        action="append",
        metavar="KEY.NAME=VALUE",
        help="attack.NAME=VALUE for the attack, METHOD.NAME=VALUE for an explainer; repeatable",
    )
    parser.add_argument("--seed", type=seed_int, help="seed of stochastic explainers (substitution attack)")
    parser.add_argument("--mlm", default="minilm-mlm", help="masked LM for the substitution attack")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(run=run)
