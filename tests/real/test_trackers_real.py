"""The real trainers logging to the experiment trackers offline, read back with rl-board.

Two runs (``trainers/trl_trackers.py``, ``trainers/verl_tracking.py``) write each tracker's local store
with the tracker's own library, driven by the trainer's own code; ``load_metrics`` reads the folder as a
user would point rl-board at it, and each tracker's ``logged_tables`` reads the tables. What must come
back is worked out from what the trainer itself kept, never from rl-board code:

- TRL: ``checkpoint-4/trainer_state.json``'s ``log_history`` (every metric TRL logged, by trainer step)
  and TRL's own completions Parquet (``completions/completions_{step:05d}.parquet``).
- verl: ``truth.json``, what the runner handed to ``Tracking.log`` and to verl's generations logger.

Values must be equal, not close: every store here keeps a float64 except TensorBoard, whose event file
holds a float32 (``Summary.Value.simple_value``), so its expected value is the logged one rounded to
float32. NaN must stay NaN, except where the store cannot hold it (verl's ``file`` backend: orjson writes
NaN as ``null``). TRL never sends a NaN: its ``log`` turns a metric that is NaN over the whole step into
None, which no store keeps as a point (W&B and Trackio hold a JSON null, MLflow's callback drops it with
a warning, SwanLab refuses it with an error): the step has no point for that tag.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rl_board.metrics import mlflow_store, swanlab_log, trackio_db, wandb_log
from rl_board.metrics.kind import LoggedTable, RunSource
from rl_board.metrics.reader import MetricsBundle, RunInfo, discover, load_metrics
from tests.real import expected as E
from tests.real.trainers import specs
from tests.real.trainers.trl_trackers import (
    RUN_DIR,
    TRL_REWARD_FUNCS,
    TRL_RUN_NAME,
    TRL_SILENT_STEP,
    TRL_TRACKERS,
)
from tests.real.trainers.verl_tracking import (
    TRUTH,
    VERL_BACKENDS,
    VERL_GENERATIONS,
    VERL_NAN,
    VERL_TRACKING_PROJECT,
    VERL_VAL_STEPS,
)

Points = dict[tuple[str, int], list[float]]

VERL_SOURCE = {"file": "jsonl"}
"""rl-board's source name of a verl backend where it is not the backend's name (verl's file logger writes
JSON lines, read by the text-log kind as its ``jsonl`` variant)."""
GENERATIONS_KEY = "val/generations"
TABLE_READERS: dict[str, Callable[[RunSource], list[LoggedTable]]] = {
    "wandb": lambda s: wandb_log.logged_tables(s.path),
    "swanlab": lambda s: swanlab_log.logged_tables(s.path),
    "trackio": lambda s: trackio_db.logged_tables(s.path, s.part),
    "mlflow": lambda s: mlflow_store.logged_tables(s.path, s.part),
}


# --------------------------------------------------------------------------- shared helpers


def one_run(bundle: MetricsBundle, source: str) -> tuple[RunInfo, pd.DataFrame]:
    """The one run of ``source`` that ``load_metrics`` found, and its scalars."""
    frame = bundle.scalars[bundle.scalars["source"] == source]
    runs = sorted(set(frame["run"]))
    found = sorted(set(bundle.scalars["source"]))
    assert len(runs) == 1, (
        f"load_metrics found {len(runs)} {source} runs under {bundle.root} (sources found: {found}; runs: "
        f"{[(r.run, r.kind) for r in bundle.runs]}): is its kind registered in rl_board/metrics/kinds.py?"
    )
    info = bundle.run(runs[0])
    assert info is not None
    assert not info.problems, [(p.file, p.reason) for p in info.problems[:5]]
    return info, frame


def points_of(frame: pd.DataFrame) -> Points:
    out: Points = defaultdict(list)
    for tag, step, value in zip(frame["tag"], frame["step"], frame["value"], strict=True):
        out[(str(tag), int(step))].append(float(value))
    return out


def same_number(want: float, got: float) -> bool:
    """Equal as float64 numbers, NaN equal to NaN."""
    return (math.isnan(want) and math.isnan(got)) or want == got


def same_cell(want: Any, got: Any) -> bool:
    """A table cell as logged: numbers equal exactly (a NaN read back as the float NaN, not as a string or
    null), text and nested values (messages, metadata) equal."""
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, (int, float, np.number)) and not isinstance(want, bool):
        return isinstance(got, (int, float)) and not isinstance(got, bool) and float(want) == float(got)
    return want == got


def row_diff(want: list[Any], got: list[Any]) -> list[tuple[int, Any, Any]]:
    if len(want) != len(got):
        return [(-1, len(want), len(got))]
    return [(i, w, g) for i, (w, g) in enumerate(zip(want, got, strict=True)) if not same_cell(w, g)]


def compare(
    expected: dict[tuple[str, int], float],
    got: Points,
    rounding: Callable[[float], float] = float,
) -> tuple[int, list[str]]:
    """How many expected points were read back equal, and a line for each one that was not. A point the
    store holds twice alike counts once (TRL's end-of-training log repeats ``epoch`` at the last step)."""
    bad = []
    for (tag, step), value in sorted(expected.items()):
        want = rounding(value)
        values = got.get((tag, step), [])
        if not values:
            bad.append(f"{tag} @ {step}: missing (want {want!r})")
        elif not all(same_number(want, v) for v in values):
            bad.append(f"{tag} @ {step}: want {want!r}, read {values!r}")
    return len(expected) - len(bad), bad


def source_of(root: Path, kind: str) -> RunSource:
    """The one run of ``kind`` that rl-board's discovery finds under ``root``."""
    sources = [s for s in discover(root) if s.kind == kind]
    assert len(sources) == 1, (kind, [(s.run, s.kind) for s in discover(root)])
    return sources[0]


def hparam(info: RunInfo, dotted: str) -> Any:
    """A config value by its dotted path, whether the store flattened it with ``.`` or ``/``."""
    for key, value in info.hparams.items():
        if key.replace("/", ".") == dotted:
            return value
    raise AssertionError(f"{info.kind}: no hparam {dotted!r} among {sorted(info.hparams)[:20]}...")


def float32(value: float) -> float:
    return float(np.float32(value))


# --------------------------------------------------------------------------- TRL


def mlflow_name(key: str) -> str:
    """transformers' ``MLflowCallback.on_log`` renames a key with characters MLflow refuses."""
    return re.sub(r"[^0-9A-Za-z_\-\.\ :/]", "_", key)


def trl_name(store: str, key: str) -> str:
    """The tag each tracker callback gives one of TRL's keys: ``train/<key>`` (transformers'
    ``rewrite_logs``), except MLflow's callback, which logs the raw key."""
    return mlflow_name(key) if store == "mlflow" else f"train/{key}"


def trl_history(root: Path) -> list[dict[str, Any]]:
    """``log_history`` of the checkpoint saved at the last step: TRL's per-step logs."""
    state = E.read_json_file(root / RUN_DIR / f"checkpoint-{specs.MAX_STEPS}" / "trainer_state.json")
    return [entry for entry in state["log_history"] if "step" in entry]


def trl_points(root: Path, store: str) -> tuple[dict[tuple[str, int], float], set[tuple[str, int]]]:
    """What the store must hold: (tag, step) -> value for every number TRL logged, and the (tag, step) of
    every None TRL logged (no point there)."""
    values, nones = {}, set()
    for entry in trl_history(root):
        step = int(entry["step"])
        for key, value in entry.items():
            if key == "step":
                continue
            if value is None:
                nones.add((trl_name(store, key), step))
            else:
                values[(trl_name(store, key), step)] = float(value)
    return values, nones


@pytest.fixture(scope="module")
def trl_bundle(trl_trackers_root: Path, real_cache: Path) -> MetricsBundle:
    return load_metrics(trl_trackers_root, cache_dir=real_cache)


def test_trl_run_is_what_the_spec_says(trl_trackers_root: Path) -> None:
    """Fixture check: four steps, every tracker, the silent step really logged None, completions each step."""
    manifest = E.read_json_file(trl_trackers_root / "manifest.json")
    assert manifest["trl"] == "1.16.0" and manifest["trackers"] == list(TRL_TRACKERS)
    assert manifest["reward_func_names"] == list(TRL_REWARD_FUNCS)
    history = trl_history(trl_trackers_root)
    assert [h["step"] for h in history] == list(range(1, specs.MAX_STEPS + 1))
    silent = [h["step"] for h in history if h["rewards/gated_reward/mean"] is None]
    assert silent == [TRL_SILENT_STEP]
    parquet = E.trl_steps(trl_trackers_root / RUN_DIR)
    assert sorted(parquet) == list(range(1, specs.MAX_STEPS + 1))
    assert parquet[TRL_SILENT_STEP]["gated_reward"].isna().all(), "the silent step's rewards should be NaN"
    assert parquet[1]["judge_reward"].isna().any() and parquet[1]["judge_reward"].notna().any()
    # W&B holds the last step's table twice (TRL's log at the end of training logs it again): same hash
    files = sorted(
        trl_trackers_root.glob("wandb/offline-run-*/files/media/table/completions_*.table.json"),
        key=lambda p: int(p.name.split("_")[1]),
    )
    hashes = [p.name.split("_")[2].split(".")[0] for p in files]
    assert len(hashes) == specs.MAX_STEPS + 1 and hashes[-1] == hashes[-2], [p.name for p in files]


def test_trl_folder_is_one_run_per_store(trl_bundle: MetricsBundle) -> None:
    """The whole output folder, as a user points rl-board at it: one run per tracker plus TRL's own
    trainer state, nothing refused or skipped (W&B's symlinks and debug logs, Trackio's lock file...)."""
    assert sorted(r.kind for r in trl_bundle.runs) == sorted([*TRL_TRACKERS, "trainer-state"])
    assert not trl_bundle.problems and not trl_bundle.skipped, (trl_bundle.problems, trl_bundle.skipped)


@pytest.mark.parametrize("store", TRL_TRACKERS)
def test_trl_metrics_read_from_each_store(
    trl_trackers_root: Path, trl_bundle: MetricsBundle, store: str
) -> None:
    """Every metric of TRL's log_history is in the store at the trainer's step, with the same float64; a
    None TRL logged is no point. W&B and Trackio: the step is ``train/global_step`` from the same row
    (not W&B's ``_step`` nor Trackio's own count, which the profiling timers push ahead)."""
    info, frame = one_run(trl_bundle, store)
    got = points_of(frame)
    expected, nones = trl_points(trl_trackers_root, store)
    checked, bad = compare(expected, got)
    assert not bad, f"{store}: {len(bad)} of {len(expected)} points differ:\n" + "\n".join(bad[:20])
    kept = [(key, got[key]) for key in sorted(nones) if key in got]
    assert not kept, f"{store}: a None TRL logged came back as a point: {kept}"
    for tag in {tag for tag, _ in expected}:  # and at no other step
        steps = sorted(step for (t, step) in got if t == tag)
        assert steps == sorted(step for (t, step) in expected if t == tag), (tag, steps)
    assert hparam(info, "run_name") == TRL_RUN_NAME
    assert str(hparam(info, "learning_rate")) in {"0.001", "1e-3"}
    print(f"TRL {store}: {checked} points equal, {len(nones)} None points absent")


def trl_completions(root: Path) -> dict[int, pd.DataFrame]:
    return E.trl_steps(root / RUN_DIR)


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@pytest.mark.parametrize("store", ["wandb", "trackio"])
def test_trl_completions_tables(trl_trackers_root: Path, store: str) -> None:
    """TRL logs its completions table to W&B and Trackio (``log_completions``): each store's tables are
    TRL's Parquet, step by step, once each (the last step's table is logged twice, at the end of training
    again), cell for cell with NaN kept (a reward function's None)."""
    tables = TABLE_READERS[store](source_of(trl_trackers_root, store))
    parquet = trl_completions(trl_trackers_root)
    assert sorted((t.key, t.step) for t in tables) == [("completions", s) for s in sorted(parquet)], [
        (t.key, t.step, t.where) for t in tables
    ]
    cells = 0
    for table in tables:
        frame = parquet[table.step]
        assert table.columns == list(frame.columns), (table.step, table.columns)
        want = [[_python(v) for v in row] for row in frame.itertuples(index=False, name=None)]
        assert len(table.rows) == len(want), table.step
        for i, (w, g) in enumerate(zip(want, table.rows, strict=True)):
            assert not row_diff(w, g), f"{store} step {table.step} row {i}: {row_diff(w, g)} ({table.where})"
            cells += len(w)
    print(f"TRL {store}: {len(tables)} completions tables, {cells} cells equal")


@pytest.mark.parametrize("store", ["wandb", "trackio"])
def test_trl_completions_open_as_the_same_rollout_run(
    trl_trackers_root: Path, real_cache: Path, store: str
) -> None:
    """The W&B run folder, and the TRL run inside Trackio's project database, are each a rollout run (the
    step browser, groups, SQL read it) with the same samples as TRL's own completions Parquet read as a
    run: steps, prompts, responses, rewards (TRL's weighted sum of its reward functions, named by the
    metrics it logged beside them) and groups."""
    from rl_board.metrics.kinds import KINDS
    from rl_board.rollouts.store import RolloutStore
    from rl_board.sources.catalogue import catalogue

    [tracker_run] = [
        f.path for f in catalogue(trl_trackers_root / store, metric_kinds=KINDS).rollout_folders()
    ]
    tracker = RolloutStore.open(tracker_run, cache_dir=real_cache)
    own = RolloutStore.open(trl_trackers_root / RUN_DIR / "completions", cache_dir=real_cache)
    assert tracker.report.format == own.report.format == "trl"
    assert tracker.steps == own.steps and tracker.num_samples == own.num_samples
    columns = ["step", "prompt", "response", "reward", "group"]
    want = own.samples(columns=columns)[columns].sort_values(columns[:3]).reset_index(drop=True)
    got = tracker.samples(columns=columns)[columns].sort_values(columns[:3]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    print(
        f"TRL {store} completions as a rollout run: {tracker.num_samples} samples over "
        f"{len(tracker.steps)} steps"
    )


def test_trl_tables_only_where_trl_logs_them(trl_trackers_root: Path) -> None:
    """TRL sends no table to MLflow or SwanLab: none is read there."""
    for store in ("mlflow", "swanlab"):
        assert TABLE_READERS[store](source_of(trl_trackers_root, store)) == [], store


# --------------------------------------------------------------------------- verl


def verl_truth(root: Path) -> dict[str, Any]:
    return json.loads((root / TRUTH).read_text(encoding="utf-8"))


def mlflow_key(key: str) -> str:
    """verl's ``_MlflowLoggingAdapter._sanitize_key``: ``@`` becomes ``_at_``, runs of ``/`` one, other
    characters MLflow refuses ``_``."""
    sanitized = re.sub(r"/+", "/", key.replace("@", "_at_"))
    return re.sub(r"[^/\w.\- :]", "_", sanitized)


def verl_expected(truth: dict[str, Any], backend: str) -> dict[tuple[str, int], float]:
    """(tag, step) -> value each backend must hold. MLflow: verl's sanitized names. The file logger:
    orjson writes NaN as ``null``, so the NaN is no point there."""
    out = {}
    for tag, step, value in truth["points"]:
        if backend == "file" and math.isnan(value):
            continue
        out[(mlflow_key(tag) if backend == "mlflow" else tag, int(step))] = float(value)
    return out


@pytest.fixture(scope="module")
def verl_bundle(verl_tracking_root: Path, real_cache: Path) -> MetricsBundle:
    return load_metrics(verl_tracking_root, cache_dir=real_cache)


def test_verl_truth_covers_the_cases(verl_tracking_root: Path) -> None:
    """Fixture check: ``@`` in names (renamed by MLflow), a NaN, zeros, ints, validation at two steps."""
    truth = verl_truth(verl_tracking_root)
    assert truth["versions"]["verl"] == "0.9.1" and truth["backends"] == list(VERL_BACKENDS)
    tags = {tag for tag, _, _ in truth["points"]}
    assert any("@" in tag for tag in tags) and {mlflow_key(t) for t in tags if "@" in t} == {
        t.replace("@", "_at_") for t in tags if "@" in t
    }
    assert [[t, s] for t, s, v in truth["points"] if math.isnan(v)] == [list(VERL_NAN)]
    assert any(v == 0.0 for _, _, v in truth["points"])
    assert sorted(map(int, truth["generations"])) == list(VERL_VAL_STEPS)
    assert all(len(rows) == VERL_GENERATIONS for rows in truth["generations"].values())


def test_verl_folder_is_one_run_per_backend(verl_bundle: MetricsBundle) -> None:
    """The whole output folder: one run per backend, nothing refused or skipped."""
    assert sorted(r.kind for r in verl_bundle.runs) == sorted(VERL_SOURCE.get(b, b) for b in VERL_BACKENDS)
    assert not verl_bundle.problems and not verl_bundle.skipped, (verl_bundle.problems, verl_bundle.skipped)


@pytest.mark.parametrize("backend", VERL_BACKENDS)
def test_verl_metrics_read_from_each_backend(
    verl_tracking_root: Path, verl_bundle: MetricsBundle, backend: str
) -> None:
    """Every point verl's ``Tracking.log`` sent is in the backend's store, named as logged (MLflow: as verl
    renamed it), at verl's step, with the same value (TensorBoard: the float32 its event file holds); and
    nothing else is there."""
    truth = verl_truth(verl_tracking_root)
    info, frame = one_run(verl_bundle, VERL_SOURCE.get(backend, backend))
    got = points_of(frame)
    expected = verl_expected(truth, backend)
    rounding = float32 if backend == "tensorboard" else float
    checked, bad = compare(expected, got, rounding)
    assert not bad, f"{backend}: {len(bad)} of {len(expected)} points differ:\n" + "\n".join(bad[:20])
    extra = sorted(set(got) - set(expected))  # the file logger's null (a NaN) included: no point
    assert not extra, f"{backend}: points verl did not log: {extra[:10]}"
    if backend in ("wandb", "swanlab", "trackio", "mlflow"):  # the ones verl hands its config to
        assert hparam(info, "trainer.project_name") == VERL_TRACKING_PROJECT
        assert str(hparam(info, "algorithm.kl_ctrl.kl_coef")) == "0.001"
    print(f"verl {backend}: {checked} points equal")


def verl_tables(truth: dict[str, Any], backend: str) -> dict[int, tuple[list[str], list[list[Any]]]]:
    """step -> (columns, rows) of the generations table each backend's logger wrote (verl's
    ``ValidationGenerationsLogger``)."""
    gens = {int(step): rows for step, rows in truth["generations"].items()}
    out = {}
    for step, samples in sorted(gens.items()):
        if backend == "wandb":  # one wide row per validation so far (the table is cumulative)
            columns = ["step"] + [
                f"{name}_{i + 1}" for i in range(len(samples)) for name in ("input", "output", "score")
            ]
            rows = [[s, *[cell for sample in gens[s] for cell in sample]] for s in sorted(gens) if s <= step]
        elif backend == "swanlab":
            columns, rows = ["step", "input", "output", "score"], [[step, *sample] for sample in samples]
        elif backend == "mlflow":  # val_step<N>.json
            columns, rows = ["input", "output", "score"], [list(sample) for sample in samples]
        elif backend == "trackio":  # one trackio.Trace per sample
            columns = ["step", "key", "trace_index", "messages", "metadata"]
            rows = [
                [
                    step,
                    GENERATIONS_KEY,
                    i,
                    [{"role": "user", "content": inp}, {"role": "assistant", "content": outp}],
                    {"source": "validation_generations", "sample_index": i, "score": score},
                ]
                for i, (inp, outp, score) in enumerate(samples)
            ]
        else:
            raise AssertionError(backend)
        out[step] = (columns, rows)
    return out


@pytest.mark.parametrize("backend", ["wandb", "swanlab", "trackio", "mlflow"])
def test_verl_generations_tables(verl_tracking_root: Path, backend: str) -> None:
    """verl's validation generations, as each backend's logger shaped them, at the validation steps."""
    truth = verl_truth(verl_tracking_root)
    source = source_of(verl_tracking_root, backend)
    tables = TABLE_READERS[backend](source)
    want = verl_tables(truth, backend)
    assert sorted((t.key, t.step) for t in tables) == [(GENERATIONS_KEY, s) for s in sorted(want)], [
        (t.key, t.step, t.where) for t in tables
    ]
    cells = 0
    for table in tables:
        columns, rows = want[table.step]
        assert table.columns == columns, (table.step, table.columns, table.where)
        assert len(table.rows) == len(rows), (table.step, table.rows, table.where)
        for i, (w, g) in enumerate(zip(rows, table.rows, strict=True)):
            assert not row_diff(w, g), (
                f"{backend} step {table.step} row {i}: {row_diff(w, g)} ({table.where})"
            )
            cells += len(w)
    print(f"verl {backend}: {len(tables)} generations tables, {cells} cells equal")


def test_verl_generations_text_in_tensorboard(verl_tracking_root: Path, verl_bundle: MetricsBundle) -> None:
    """TensorBoard gets the generations as one markdown text per validation step (``add_text``), under the
    tag torch's ``SummaryWriter`` stores it as: ``val/generations/text_summary`` (its ``summary.text``
    appends ``/text_summary``)."""
    truth = verl_truth(verl_tracking_root)
    texts = verl_bundle.texts[verl_bundle.texts["source"] == "tensorboard"]
    assert set(texts["tag"]) == {f"{GENERATIONS_KEY}/text_summary"}, sorted(set(texts["tag"]))
    by_step = dict(zip(texts["step"].astype(int), texts["text"], strict=True))
    assert sorted(by_step) == list(VERL_VAL_STEPS)
    for step, samples in truth["generations"].items():  # verl's log_generations_to_tensorboard, its format
        want = f"**Generation Results - Step {step}**\n\n" + "".join(
            f"### Sample {i + 1}\n**Input:** {inp}\n\n**Output:** {outp}\n\n**Score:** {score}\n\n---\n\n"
            for i, (inp, outp, score) in enumerate(samples)
        )
        assert by_step[int(step)] == want, (step, by_step[int(step)])
    print(f"verl tensorboard: {len(by_step)} generations texts equal")


@pytest.mark.parametrize("backend", ["wandb", "swanlab", "trackio", "mlflow"])
def test_verl_generations_open_as_a_rollout_run(
    verl_tracking_root: Path, real_cache: Path, backend: str
) -> None:
    """Each backend's copy of verl's validation generations is a rollout run whose samples are verl's: at
    each validation step, every (input, output, score) once, in the order verl logged them."""
    from rl_board.metrics.kinds import KINDS
    from rl_board.rollouts.store import RolloutStore
    from rl_board.sources.catalogue import catalogue

    where = verl_tracking_root / {"swanlab": "swanlog", "mlflow": "mlruns"}.get(backend, backend)
    folders = catalogue(verl_tracking_root, metric_kinds=KINDS).rollout_folders()
    mine = [f for f in folders if f.path == where or where in f.path.parents]
    assert len(mine) == 1, (backend, [f.relative for f in folders])
    run = RolloutStore.open(mine[0].path, cache_dir=real_cache)
    truth = verl_truth(verl_tracking_root)["generations"]
    want = sorted(
        (int(step), inp, out, float(score)) for step, samples in truth.items() for inp, out, score in samples
    )
    frame = run.samples(columns=["step", "prompt", "response", "reward"])
    got = sorted(
        (int(s), p, r, float(w))
        for s, p, r, w in zip(frame["step"], frame["prompt"], frame["response"], frame["reward"], strict=True)
    )
    assert got == want, (backend, got[:3], want[:3])
    print(f"verl {backend}: {len(got)} generations as a rollout run over {len(run.steps)} steps")
