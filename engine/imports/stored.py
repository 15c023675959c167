"""Imported attributions offered beside the built-in methods on the pages' views of a dataset
split (issue 19 item 4: "see them on every page like our own methods").

An import matched to a dataset split by example id (``python -m cli import --dataset --split``,
or the explorer's import box with "match by id") is a run of kind ``import`` whose rows are
dataset examples as the model saw them. ``imported_methods`` lists what such runs hold for one
model and split; ``imported_attributions`` reads one method's stored attributions by example id,
which ``engine.evaluate.evaluate_slice(given=...)`` then scores like a method's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.types import Attribution, Example
from engine.runs.store import RunStore

_EXAMPLE_COLUMNS = ("position", "id", "words", "segment_ids", "label", "target", "rationale", "rationales")


@dataclass(frozen=True)
class ImportedMethod:
    """One imported method of one import run, with its provenance.

    ``name`` is what the pages show and key their results by: ``<method> (imported)``, or
    ``<method> (imported, <run id>)`` when imports of different files share the method key."""

    name: str
    method: str  # the key in its run: <source>.<name>, e.g. csv.mine
    run_id: str
    file: str
    format: str
    imported: str  # when (ISO 8601, UTC)
    examples: int  # rows the run stores

    @property
    def provenance(self) -> str:
        return f"imported from {self.file} ({self.format}, run {self.run_id}, {self.imported})"


def imported_methods(
    store: RunStore, model: str, dataset: str, split: str, fingerprint: str | None = None
) -> list[ImportedMethod]:
    """The finished imports of ``model`` on ``dataset``/``split``, newest first: one entry per
    imported method and file (the same file imported again, with other built-in methods beside
    it, is offered once: its newest run). With ``fingerprint`` (``model_fingerprint`` of the
    model as it is now), imports scored on an earlier version of the model are left out."""
    import explainers

    if not store.catalogue_path.exists():
        return []
    found = []
    seen: set[tuple[str, str]] = set()
    for info in store.infos():
        if info.kind != "import" or info.status != "done" or (info.model, info.dataset, info.split) != (
            model, dataset, split
        ):  # fmt: skip
            continue
        if fingerprint is not None and info.model_fingerprint != fingerprint:
            continue
        provenance = info.selection.get("import", {})
        for method in info.methods:
            key = (method, str(provenance.get("sha256")))
            if method in explainers.REGISTRY or key in seen:
                continue
            seen.add(key)
            found.append((method, info.run_id, provenance, info.rows_done))
    shared = Counter(method for method, *_ in found)
    return [
        ImportedMethod(
            name=f"{method} (imported)" if shared[method] == 1 else f"{method} (imported, {run_id})",
            method=method,
            run_id=run_id,
            file=str(provenance.get("file", "?")),
            format=str(provenance.get("format", "?")),
            imported=str(provenance.get("imported", "")),
            examples=rows,
        )
        for method, run_id, provenance, rows in found
    ]


def imported_attributions(store: RunStore, method: ImportedMethod) -> dict[str, Attribution]:
    """The method's stored attributions by example id (over the words the model saw, for the
    class the import explained)."""
    from engine.runs.rows import attribution_of, example_of

    info = store.get(method.run_id)
    columns = [*_EXAMPLE_COLUMNS, f"score/{method.method}", f"attribution/{method.method}"]
    found: dict[str, Attribution] = {}
    for row in store.read_table(method.run_id, columns).to_pylist():
        example = example_of(row, info.dataset, info.split, info.label_names)
        attribution = attribution_of(row, method.method, example)
        if attribution is not None:
            found[example.id] = attribution
    return found


def given_for(
    chosen: Sequence[ImportedMethod], stored: Sequence[Mapping[str, Attribution]], examples: Iterable[Example]
) -> tuple[list[dict[str, Attribution]], dict[str, tuple[str, ...]]]:
    """``evaluate_slice``'s ``given`` for ``examples`` (per example, each chosen method's
    attribution under its ``name`` where the import has that example; ``stored[i]`` is
    ``imported_attributions`` of ``chosen[i]``) and, per name, the ids of the examples it lacks."""
    given: list[dict[str, Attribution]] = []
    missing: dict[str, list[str]] = {method.name: [] for method in chosen}
    for example in examples:
        per: dict[str, Attribution] = {}
        for method, by_id in zip(chosen, stored, strict=True):
            if example.id in by_id:
                per[method.name] = by_id[example.id]
            else:
                missing[method.name].append(example.id)
        given.append(per)
    return given, {name: tuple(ids) for name, ids in missing.items()}


def example_imports(
    chosen: Sequence[ImportedMethod], stored: Sequence[Mapping[str, Attribution]], example: Example, target: int
) -> tuple[dict[str, Attribution], dict[str, str]]:
    """The chosen methods' attributions of one example (as the model saw it) for the class
    ``target``, by name; and, by name, why a method has none to show (the import lacks the
    example, explains another class, or scores other words)."""
    found: dict[str, Attribution] = {}
    refused: dict[str, str] = {}
    for method, by_id in zip(chosen, stored, strict=True):
        attribution = by_id.get(example.id)
        if attribution is None:
            refused[method.name] = f"the import has no attribution of example {example.id!r}"
        elif attribution.words != example.words:
            refused[method.name] = f"the import scores other words of example {example.id!r} than the model sees"
        elif attribution.target != target:
            refused[method.name] = (
                f"imported for class {attribution.target}, not the class explained here ({target}): pick it as the "
                "sidebar's target to compare"
            )
        else:
            found[method.name] = attribution
    return found, refused
