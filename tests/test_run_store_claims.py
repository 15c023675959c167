"""One writer per run: ``RunStore.claim`` checks that no other live process writes a run and takes
it in one catalogue transaction, so of two resumes of a stopped run only one computes it; the
other is refused in one line, even when it read the run's status before the winner claimed it."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.runs.executor import execute, open_run, resume_spec
from engine.runs.spec import RunSpec
from engine.runs.store import RunStore
from tests.kill import DEAD_PID

ROOT = Path(__file__).resolve().parents[1]
CLAIM = """
import sys
from engine.runs.store import RunStore
try:
    RunStore(sys.argv[1]).claim(sys.argv[2], "serial")
    print("claimed", flush=True)
except ValueError as error:
    print(f"refused: {error}", flush=True)
sys.stdin.read()  # hold the claim (stay alive) until the test closes stdin
"""


def claimer(root: Path, run_id: str) -> subprocess.Popen:
    """Another process that claims ``run_id`` and stays alive until its stdin is closed."""
    return subprocess.Popen([sys.executable, "-c", CLAIM, str(root), run_id], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip


def release(*processes: subprocess.Popen) -> None:
    for process in processes:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=60)


@pytest.fixture
def stopped_run(toy_bert_folder, tmp_path) -> tuple[RunStore, str]:
    store = RunStore(tmp_path)
    spec = RunSpec(model=toy_bert_folder, dataset="examples", split="sst2", limit=2, methods=("random",),
                   metrics=("deletion",), chunk_size=1)  # fmt: skip
    run_id = open_run(spec, store).info.run_id
    store.finish(run_id, "stopped", 0.0)
    return store, run_id


def test_a_resume_that_read_the_status_before_another_claimed_the_run_is_refused(stopped_run) -> None:
    store, run_id = stopped_run
    late = open_run(resume_spec(store, run_id), store, resume=run_id)  # reads "stopped"
    other = claimer(store.root, run_id)
    try:
        assert other.stdout is not None and other.stdout.readline() == "claimed\n"
        with pytest.raises(ValueError, match=f"^run {run_id} is being written by process {other.pid} on "):
            execute(late, store, executor="serial")
        info = store.get(run_id)
        assert (info.status, info.pid, info.rows_done) == ("running", other.pid, 0)  # untouched
    finally:
        release(other)
    # its writer gone, the run resumes
    resumed = execute(open_run(resume_spec(store, run_id), store, resume=run_id), store, executor="serial")
    assert (resumed.info.status, resumed.info.rows_done) == ("done", 2)


def test_of_two_processes_claiming_one_run_one_gets_it(stopped_run) -> None:
    store, run_id = stopped_run
    both = [claimer(store.root, run_id) for _ in range(2)]
    try:
        said = [process.stdout.readline() for process in both if process.stdout is not None]
        winner = both[said.index("claimed\n")]
        assert sorted(said)[1].startswith(f"refused: run {run_id} is being written by process {winner.pid}")
        assert (store.get(run_id).status, store.get(run_id).pid) == ("running", winner.pid)
    finally:
        release(*both)


def test_claim_takes_a_dead_writers_run_and_leaves_a_done_run_alone(stopped_run) -> None:
    store, run_id = stopped_run
    release(gone := claimer(store.root, run_id))
    assert store.get(run_id).writer_gone
    from cli.show import run_json

    dead = run_json(store.get(run_id))  # what `runs --json` and `show --json` print
    assert (dead["status"], dead["writer_gone"]) == ("killed", True)  # it said "running", the text "killed"
    folder = store.root / "runs" / run_id
    (folder / "models").mkdir(parents=True, exist_ok=True)
    left = [
        folder / f".unit-00001.parquet.{DEAD_PID}.0a1b2c3d.tmp",
        folder / "models" / f".unit-00002.{DEAD_PID}.0a1b2c3d.tmp",
    ]
    left[0].write_bytes(b"PAR1 half a file")
    left[1].mkdir()  # a half-saved ROAR model folder
    kept = sorted(p.name for p in folder.rglob("*") if not p.name.endswith(".tmp"))
    claimed = store.claim(run_id, "serial")
    assert (claimed.status, claimed.pid, claimed.executor, claimed.error) == ("running", os.getpid(), "serial", None)
    assert not any(path.exists() for path in left)  # what the killed writer left half-written is gone
    assert sorted(p.name for p in folder.rglob("*")) == kept  # and nothing else
    store.finish(run_id, "done", 1.0)
    assert store.claim(run_id, "ray") == store.get(run_id)  # done: untouched
    with pytest.raises(ValueError, match="no run 'run-unknown'"):
        store.claim("run-unknown", "serial")
    assert gone.returncode == 0


def test_a_writer_whose_pid_now_belongs_to_another_process_is_gone(stopped_run) -> None:
    """A run's writer is its host, pid and the process's start time: after a kill and a reboot
    (or many processes) the pid may be another process's, which must not hold the run for ever."""
    store, run_id = stopped_run
    mine = store.claim(run_id, "serial")
    assert mine.pid_started is not None and not mine.writer_gone
    with store._connect() as con:  # the pid is alive, but it started later than the writer did
        con.execute("UPDATE runs SET pid_started = pid_started - 3600 WHERE run_id = ?", [run_id])
    assert store.get(run_id).writer_gone
    with store._connect() as con:  # a catalogue made before the column: the pid alone decides
        con.execute("UPDATE runs SET pid_started = NULL WHERE run_id = ?", [run_id])
    assert not store.get(run_id).writer_gone


def test_a_catalogue_made_before_the_writers_start_time_and_heartbeat_is_read_and_gains_them(stopped_run) -> None:
    store, run_id = stopped_run
    with store._connect() as con:
        con.execute("ALTER TABLE runs DROP COLUMN pid_started")
        con.execute("ALTER TABLE runs DROP COLUMN heartbeat")
    old = RunStore(store.root, read_only=True).get(run_id)  # read as it is
    assert (old.pid_started, old.heartbeat) == (None, None)
    reopened = RunStore(store.root)  # a writer adds the columns
    claimed = reopened.claim(run_id, "serial")
    assert claimed.pid_started is not None and claimed.heartbeat is not None
    reopened.finish(run_id, "stopped", 1.0)


def test_the_writer_stamps_a_heartbeat_that_another_host_reads(stopped_run, monkeypatch) -> None:
    """Another host cannot look up the writer's pid: it reads the heartbeat, which the writer
    stamps while it holds the run and stops stamping once it finishes."""
    import time

    from engine.runs import writers

    monkeypatch.setattr(writers, "HEARTBEAT_S", 0.05)
    store, run_id = stopped_run
    first = store.claim(run_id, "serial").heartbeat
    assert first is not None
    time.sleep(0.5)
    beating = store.get(run_id).heartbeat
    assert beating is not None and beating > first
    store.finish(run_id, "stopped", 1.0)
    time.sleep(0.2)
    stopped = store.get(run_id).heartbeat
    time.sleep(0.3)
    assert store.get(run_id).heartbeat == stopped  # no thread stamps a run this process let go
    store.claim(run_id, "serial")
    with store._connect() as con:  # the same run, as a process on another machine wrote it
        con.execute("UPDATE runs SET host = 'elsewhere', heartbeat = ? WHERE run_id = ?",
                    [writers.utc_now() - dt.timedelta(seconds=30), run_id])  # fmt: skip
    assert not store.get(run_id).writer_gone
    with pytest.raises(ValueError, match=f"^run {run_id} is being written by process .* on elsewhere$"):
        store.claim(run_id, "serial")
    with store._connect() as con:  # its heartbeat stopped long ago: the machine or process died
        con.execute("UPDATE runs SET heartbeat = ? WHERE run_id = ?",
                    [writers.utc_now() - dt.timedelta(seconds=writers.STALE_S + 60), run_id])  # fmt: skip
    assert store.get(run_id).writer_gone
    assert store.claim(run_id, "serial").host != "elsewhere"  # taken over from here
    store.finish(run_id, "stopped", 1.0)


def _query_that_sends_ctrl_c(con) -> tuple[int, ...] | None:
    """Count a range through a Python function that sends this process Ctrl-C (SIGINT) from
    inside the running query, once, so the signal always lands while DuckDB is executing."""
    import signal

    from duckdb.sqltypes import BIGINT, BOOLEAN

    def sends_ctrl_c_once(i: int) -> bool:
        if i == 1_000:
            os.kill(os.getpid(), signal.SIGINT)
        return i % 7 == 3

    con.create_function("sends_ctrl_c_once", sends_ctrl_c_once, [BIGINT], BOOLEAN)
    return con.execute("SELECT count(*) FROM range(200000) t(i) WHERE sends_ctrl_c_once(i)").fetchone()


def test_ctrl_c_during_a_catalogue_query_waits_for_its_end(tmp_path) -> None:
    """DuckDB answers an interrupt inside a query with ``RuntimeError: Query interrupted``, which
    cut a unit's commit short and marked a stopped run failed; the catalogue's connection now holds
    Ctrl-C until its block ends, then raises it."""
    import signal

    import duckdb

    finished = []
    with pytest.raises((RuntimeError, duckdb.Error)), duckdb.connect() as con:  # nothing held
        finished.append(_query_that_sends_ctrl_c(con))
    assert finished == []

    with pytest.raises(KeyboardInterrupt), RunStore(tmp_path)._connect() as con:
        finished.append(_query_that_sends_ctrl_c(con))
    assert finished == [(len(range(3, 200000, 7)),)]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's own handler is back


def test_a_writer_whose_run_was_taken_over_stops_and_leaves_the_new_writers_row(stopped_run) -> None:
    """A process on another host whose clock runs far ahead reads a live writer's heartbeat as
    stale and claims the run. The first writer must then stop at its next commit and not close
    the run over the new writer's row: before, it committed its next unit and set the run done."""
    from engine.runs import writers

    store, run_id = stopped_run
    opened = open_run(resume_spec(store, run_id), store, resume=run_id)

    def taken_over_after_the_first_unit(fraction: float, message: str) -> None:
        now = store.get(run_id)
        if now.rows_done == 1 and now.host != "elsewhere":
            with store._connect() as con:  # what the other host's claim writes
                con.execute("UPDATE runs SET host = 'elsewhere', pid = 4242, heartbeat = ? WHERE run_id = ?",
                            [writers.utc_now(), run_id])  # fmt: skip

    with pytest.raises(ValueError, match=f"^run {run_id} was taken over by process 4242 on elsewhere; "):
        execute(opened, store, executor="serial", progress=taken_over_after_the_first_unit)
    info = store.get(run_id)
    assert (info.status, info.host, info.pid, info.error, info.rows_done) == ("running", "elsewhere", 4242, None, 1)
    assert len(store.units(run_id)) == 1


EXIT_HOLDING = """
import sys, threading, time
import ray  # noqa: F401  (its terminate handler turned a stamp during shutdown into an abort)
from engine.runs import writers
from engine.runs.store import RunStore
writers.HEARTBEAT_S = 0.01
store = RunStore(sys.argv[1])
store.claim(sys.argv[2], "serial")
time.sleep(0.2)
print(sum(thread.name.startswith("heartbeat ") for thread in threading.enumerate()), flush=True)
writers.stop_all_heartbeats()
print(sum(thread.name.startswith("heartbeat ") for thread in threading.enumerate()), flush=True)
writers.start_heartbeat(store, sys.argv[2])  # left beating: the exit hook stops it
"""


def test_a_process_that_exits_holding_a_claim_stops_its_heartbeat_first(stopped_run) -> None:
    """The heartbeat is a daemon thread. A stamp during interpreter shutdown opened DuckDB and,
    with Ray loaded, aborted the process (exit 134). An exit hook stops the threads and waits for
    a stamp under way. The run stays marked running, and its gone writer frees it."""
    store, run_id = stopped_run
    done = subprocess.run([sys.executable, "-c", EXIT_HOLDING, str(store.root), run_id], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "0"]
    left = store.get(run_id)
    assert left.status == "running" and left.writer_gone and not left.being_written
    store.claim(run_id, "serial")
    store.finish(run_id, "stopped", 1.0)
