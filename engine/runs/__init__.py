"""Dataset runs that are kept: the run store and the executor (issue 15).

Reading runs (what the app's explorer and the command line use):

- ``RunStore(root=None, read_only=True)`` (``engine.runs.store``): ``list_runs()`` -> the
  catalogue as a pandas DataFrame; ``get(run_id)`` -> ``RunInfo``
  (status, rows done / total, ``fraction``, wall time, passes, ``writer_gone``, ``being_written``);
  ``read_table(run_id)`` -> the finished rows as an Arrow table.
- ``engine.runs.rows``: ``to_frame(table)`` -> one pandas row per example (columns in that
  module's docstring); ``example_of(row, ...)`` and ``attribution_of(row, method, example)`` ->
  an example's ``Example`` and ``Attribution`` records, as the heatmap page needs them.
- ``engine.runs.executor.read_evaluation(store, run_id)`` -> ``(RunInfo, SliceEvaluation)``, for
  ``engine.evaluate``'s ``summarize``, ``mean_curves``, ``rationale_references``, ``example_json``.

Writing runs (``engine.runs.executor``): ``store = RunStore()``, then
``execute(open_run(RunSpec(...), store), store, executor="ray"|"serial")``, after
``check_startable``, which refuses what would fail, before anything is stored;
ROAR jobs (``engine.roar.run``) and reproduction results (``engine.reproduce.stored``, through
``RunStore.save_whole``) are runs of kinds ``roar`` and ``reproduce`` in the same catalogue.
"""
