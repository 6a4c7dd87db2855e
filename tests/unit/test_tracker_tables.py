"""Tables a trainer logged to a tracker, opened as a rollout run: shapes from shared/reference/trackers.md,
written here by hand (the trackers tier and the real tier write them with the libraries themselves)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from rl_board.formats import tracker_tables
from rl_board.metrics.kinds import metric_catalogue
from rl_board.rollouts.store import RolloutStore

TRL_COLUMNS = ["step", "prompt", "completion", "accuracy_reward", "advantage"]


def _wandb_table(folder: Path, name: str, columns: list[str], data: list[list]) -> Path:
    path = folder / "files" / "media" / "table" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"columns": columns, "data": data}))
    return path


def _trl_rows(step: int) -> list[list]:
    return [
        [step, f"q{g} at {step}", f"a{g}{k}", float(k), float(k) - 0.5] for g in range(2) for k in range(2)
    ]


def _wandb_run(root: Path) -> Path:
    """A W&B run folder as TRL leaves it: the log, and the completions at steps 2 and 4, the last logged
    twice."""
    run = root / "wandb" / "offline-run-20261125_101010-abc123"
    run.mkdir(parents=True)
    (run / "run-abc123.wandb").write_bytes(b":W&B\xe1\xbe\x00")  # the header alone: a run with no record yet
    _wandb_table(run, "completions_9_1111111111aaaaaaaaaa.table.json", TRL_COLUMNS, _trl_rows(2))
    _wandb_table(run, "completions_20_2222222222bbbbbbbbbb.table.json", TRL_COLUMNS, _trl_rows(4))
    _wandb_table(run, "completions_21_2222222222bbbbbbbbbb.table.json", TRL_COLUMNS, _trl_rows(4))
    (run / "files" / "wandb-summary.json").write_text("{}")
    return run


def test_rows_of_each_trackers_document() -> None:
    wandb = {"columns": ["step", "prompt", "completion"], "data": [[1, "p", "c"], [1, "p", "d"]]}
    assert tracker_tables.rows_of(wandb, "completions_3_ab12ab12ab.table.json") == [
        {"step": 1, "prompt": "p", "completion": "c"},
        {"step": 1, "prompt": "p", "completion": "d"},
    ]
    swanlab = {
        "_swanLab": "table",
        "colDefs": [],
        "rowData": [{"step": 2, "input": "i", "output": "o", "score": 1}],
    }
    assert tracker_tables.rows_of(swanlab, "002-abcd1234.json") == swanlab["rowData"]
    mlflow = [{"input": "i", "output": "o", "score": 0.5}]
    assert tracker_tables.rows_of(mlflow, "val_step12.json") == mlflow
    assert (
        tracker_tables.rows_of(mlflow, "anything.json") is None
    )  # a list of objects is a table only so named
    assert tracker_tables.rows_of({"a": 1}, "x.table.json") is None


def test_verl_wide_generations_become_one_sample_per_group() -> None:
    columns = ["step", "input_1", "output_1", "score_1", "input_2", "output_2", "score_2"]
    rows = [
        dict(zip(columns, [5, "q1", "a1", 1.0, "q2", "a2", 0.0], strict=True)),
        dict(zip(columns, [10, "q1", "b1", 0.0, None, None, None], strict=True)),
    ]
    assert tracker_tables.is_wide(columns) and not tracker_tables.is_wide(TRL_COLUMNS)
    assert tracker_tables.melted(columns, rows) == [
        {"step": 5, "input": "q1", "output": "a1", "score": 1.0},
        {"step": 5, "input": "q2", "output": "a2", "score": 0.0},
        {"step": 10, "input": "q1", "output": "b1", "score": 0.0},
    ]


def test_a_wandb_run_is_a_metric_run_and_its_completions_a_rollout_run(
    tmp_path: Path, cache_dir: Path
) -> None:
    run = _wandb_run(tmp_path)
    found = metric_catalogue(tmp_path, skip=(cache_dir,))
    [rollouts] = found.rollout_folders()
    assert rollouts.path == run and rollouts.format == "trl" and rollouts.files == 2
    assert [s.path for s in found.of_role("metrics")] == [run]
    skipped = {found.name(s.path): s.reason for s in found.skipped}
    again = (
        "wandb/offline-run-20261125_101010-abc123/files/media/table/"
        "completions_21_2222222222bbbbbbbbbb.table.json"
    )
    assert skipped[again] == "the same table as completions_20_2222222222bbbbbbbbbb.table.json (logged again)"
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.steps == [2, 4] and store.num_samples == 8  # the copy is not read twice
    samples = store.samples(step=4)
    assert sorted(samples["response"]) == ["a00", "a01", "a10", "a11"]
    assert sorted(samples["reward"]) == [0.0, 0.0, 1.0, 1.0]


def test_a_cumulative_table_is_read_from_its_newest_file(tmp_path: Path, cache_dir: Path) -> None:
    """verl's val/generations: each file holds every validation step so far, one wide row per step."""
    run = tmp_path / "wandb" / "run-20261125_101010-xyz789"
    run.mkdir(parents=True)
    (run / "run-xyz789.wandb").write_bytes(b":W&B\xe1\xbe\x00")
    columns = ["step", "input_1", "output_1", "score_1", "input_2", "output_2", "score_2"]
    first = [[0, "q1", "a", 1.0, "q2", "b", 0.0]]
    second = [*first, [5, "q1", "c", 0.0, "q2", "d", math.nan]]
    home = run / "files" / "media" / "table" / "val"
    home.mkdir(parents=True)
    (home / "generations_0_3333333333cccccccccc.table.json").write_text(
        json.dumps({"columns": columns, "data": first})
    )
    (home / "generations_5_4444444444dddddddddd.table.json").write_text(
        json.dumps({"columns": columns, "data": second})
    )
    found = metric_catalogue(tmp_path, skip=(cache_dir,))
    [rollouts] = found.rollout_folders()
    assert rollouts.path == run and rollouts.format == "verl" and rollouts.files == 1
    assert any("earlier state of the cumulative table generations" in s.reason for s in found.skipped)
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.steps == [0, 5] and store.num_samples == 4
    assert sorted(store.samples(step=5)["response"]) == ["c", "d"]
    assert math.isnan(store.samples(step=5).set_index("response").loc["d", "reward"])


def test_mlflow_generations_take_their_step_from_the_file_name(tmp_path: Path, cache_dir: Path) -> None:
    run = tmp_path / "mlruns" / "1" / "0123abcd"
    (run / "artifacts").mkdir(parents=True)
    for step in (3, 6):
        rows = [{"input": f"q{k}", "output": f"a{k} at {step}", "score": float(k)} for k in range(3)]
        (run / "artifacts" / f"val_step{step}.json").write_text(json.dumps(rows))
    found = metric_catalogue(tmp_path, skip=(cache_dir,))
    [rollouts] = found.rollout_folders()
    assert rollouts.path == run and rollouts.format == "verl"
    store = RolloutStore.open(run, cache_dir=cache_dir)
    assert store.steps == [3, 6] and store.num_samples == 6


def test_json_documents_that_are_no_tables_are_named_as_before(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"lr": 1}')
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "notes.json").write_text('{"a": [1, 2]}')
    (tmp_path / "artifacts" / "broken.json").symlink_to(tmp_path / "nowhere.json")
    skipped = {s.path.name: s.reason for s in metric_catalogue(tmp_path).skipped}
    assert skipped["config.json"] == "a JSON document, not JSON lines"
    assert skipped["notes.json"] == "a JSON document, not JSON lines"
    assert "broken or looping" in skipped["broken.json"]


def test_a_trackio_trace_session_is_named_for_what_it_is(tmp_path: Path) -> None:
    """Trackio writes each trace (verl's generations) as a session file of JSON lines: not read as rollouts
    from its project database, and said so, not passed off as a log without metric lines."""
    folder = tmp_path / "traces" / "proj" / "run"
    folder.mkdir(parents=True)
    lines = [
        {
            "type": "session",
            "version": 3,
            "harness": "trackio",
            "id": "a:b:val/generations:0",
            "trackio": {"step": 0, "key": "val/generations", "metadata": {"score": 1.0}},
        },
        {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "2+5?"}]}},
    ]
    (folder / "a-b-val-generations-0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    [skipped] = metric_catalogue(tmp_path).skipped
    assert (
        skipped.reason.startswith("a Trackio trace session")
        and "its project database holds the same traces" in skipped.reason
    )
