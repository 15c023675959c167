"""Session bundles for the app: the heatmap page's view written to one zip, and a bundle (an
upload, or the file ``python -m cli open BUNDLE --app`` names in ``$ATTRIBUTION_BUNDLE``) read
back as the page's result, without recomputing (``engine.bundles``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from engine.bundles import MAX_BUNDLE_BYTES, Bundle, read_bundle, write_bundle
from services.explain import HeatmapResult, PredictionResult

BUNDLE_ENV = "ATTRIBUTION_BUNDLE"
UPLOAD_MB = MAX_BUNDLE_BYTES // 2**20  # the largest bundle the uploader takes (read_bundle refuses more too)


def bundle_bytes(
    model: str,
    selection: Mapping[str, Any],
    params: Mapping[str, Mapping[str, Any]],
    result: HeatmapResult,
    figures: Callable[[], Mapping[str, bytes]],
) -> bytes:
    """The zip of one heatmap view: ``selection`` holds the sidebar's and page's choices
    (``engine.bundles.SELECTION_KEYS``), ``params`` each method's parameters, ``figures`` makes
    the drawn files (called here, when the download is asked for)."""
    from engine.runs.records import code_version

    prediction = result.prediction
    bundle = Bundle(
        model=model,
        label_names=prediction.label_names,
        selection=dict(selection),
        params={method: dict(values) for method, values in params.items()},
        example=prediction.example,
        probabilities=prediction.probabilities,
        predicted=prediction.predicted,
        target=result.target,
        attributions=dict(result.attributions),
        errors=dict(result.errors),
        dropped_words=prediction.dropped_words,
        code_version=code_version(),
        head=prediction.head,
    )
    return write_bundle(bundle, figures())


def open_bundle(data: bytes, name: str) -> Bundle:
    """A bundle's content, parsed (``ValueError`` with one line when it is not one)."""
    return read_bundle(data, name)


def bundle_result(bundle: Bundle) -> HeatmapResult:
    """The bundle as the heatmap page shows a fresh result."""
    prediction = PredictionResult(
        bundle.example, bundle.probabilities, bundle.predicted, bundle.label_names, bundle.dropped_words, bundle.head
    )
    return HeatmapResult(prediction, bundle.target, dict(bundle.attributions), dict(bundle.errors))


def startup_bundle() -> tuple[str, bytes] | None:
    """(name, bytes) of the bundle the server was started on (``$ATTRIBUTION_BUNDLE``), if any."""
    from engine.imports.records import read_limited

    path = os.environ.get(BUNDLE_ENV)
    if not path:
        return None
    return Path(path).name, read_limited(path, MAX_BUNDLE_BYTES)
