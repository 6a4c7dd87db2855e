"""Synthetic metric logs written by code, shared by tests, docs and demos.

Event files are written with TensorBoard's own `EventFileWriter` and protos
(no torch or TensorFlow needed). `unstable=True` bakes in the troubles the
health rules look for; the healthy default keeps every rule quiet.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.hparams import summary_v2 as hparams_summary
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.summary.writer.record_writer import RecordWriter
from tensorboard.util import tensor_util

ANSI_GREEN, ANSI_RESET = "\x1b[32m", "\x1b[0m"


def trl_series(steps: int, *, unstable: bool = False, seed: int = 0) -> dict[str, list[float]]:
    """TRL-named scalar curves; the unstable variant breaks in the second half."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps, dtype=float)
    half = steps // 2
    reward = np.minimum(t, half) / max(half, 1) + rng.normal(0, 0.01, steps)
    kl = 0.02 + 0.001 * t + (np.where(t > half, 0.05 * (t - half), 0.0) if unstable else 0)
    series = {
        "env/reward_mean": reward,
        "objective/kl": kl,
        "objective/kl_coef": 0.2 * (1.06**t if unstable else np.ones(steps)),
        "objective/entropy": 2.0 * np.exp(-t / 4) if unstable else 2.0 - 0.005 * t,
        "ppo/loss/value": 0.5 + rng.normal(0, 0.02, steps),
        "ppo/policy/clipfrac": np.full(steps, 0.45 if unstable else 0.05),
        "ppo/policy/approxkl": np.full(steps, 0.2 if unstable else 0.005),
    }
    if unstable and steps > half + 6:
        series["ppo/loss/value"][half + 3] = 50.0
        series["ppo/loss/value"][half + 6] = math.nan
    if unstable and steps > 3:
        series["objective/kl"][3] = -0.05
    return {name: [float(v) for v in values] for name, values in series.items()}


def write_tensorboard_run(
    folder: Path,
    *,
    steps: int = 40,
    unstable: bool = False,
    truncate_last: bool = False,
    extra_tags: Sequence[str] = (),
) -> Path:
    """One run folder: old-style and new-style scalars, histograms, text and hparams.

    ``extra_tags`` adds a scalar per step under each of these names (hostile tag names for UI tests).
    """
    writer = EventFileWriter(str(folder))
    writer.add_event(
        event_pb2.Event(wall_time=1.0, summary=hparams_summary.hparams_pb({"lr": 1e-5, "algo": "ppo"}))
    )
    series = trl_series(steps, unstable=unstable)
    for step in range(steps):
        values = [
            summary_pb2.Summary.Value(tag=name, simple_value=curve[step]) for name, curve in series.items()
        ]
        values.append(tensor_scalar("actor/pg_loss", -0.01 * step))
        values.extend(
            summary_pb2.Summary.Value(tag=tag, simple_value=float(k + step))
            for k, tag in enumerate(extra_tags)
        )
        values.append(old_histogram("ppo/policy/ratio", _ratios(step, unstable)))
        values.append(new_histogram("objective/kl_dist", np.linspace(0, 0.1 + step / 100, 50)))
        if step % 10 == 0:
            values.append(text_value("samples/best", f"step {step}: <b>hello</b>"))
        event = event_pb2.Event(step=step, wall_time=1000.0 + step, summary=summary_pb2.Summary(value=values))
        writer.add_event(event)
    writer.close()
    path = next(folder.glob("events.out.tfevents.*"))
    if truncate_last:
        append_partial_record(
            path,
            event_pb2.Event(
                step=steps,
                summary=summary_pb2.Summary(
                    value=[summary_pb2.Summary.Value(tag="env/reward_mean", simple_value=9.0)]
                ),
            ),
        )
    return path


def write_many_tags_run(folder: Path, *, groups: int = 30, per_group: int = 10, steps: int = 50) -> Path:
    """A TensorBoard run with groups x per_group scalar tags (`g07/metric_3`), as ROLL's memory/time
    families."""
    writer = EventFileWriter(str(folder))
    tags = [f"g{g:02d}/metric_{m}" for g in range(groups) for m in range(per_group)]
    for step in range(steps):
        values = [
            summary_pb2.Summary.Value(tag=tag, simple_value=float(k + step)) for k, tag in enumerate(tags)
        ]
        writer.add_event(
            event_pb2.Event(step=step, wall_time=1000.0 + step, summary=summary_pb2.Summary(value=values))
        )
    writer.close()
    return next(folder.glob("events.out.tfevents.*"))


def _ratios(step: int, unstable: bool) -> np.ndarray:
    """Policy-ratio samples: near 1, or drifting with a huge outlier when unstable."""
    base = np.linspace(0.9, 1.1, 64)
    return np.append(base * 1.6, 250.0) if unstable and step > 5 else base


def tensor_scalar(tag: str, value: float) -> summary_pb2.Summary.Value:
    """A new-style scalar: a rank-0 float tensor with scalar-plugin metadata."""
    meta = scalar_metadata.create_summary_metadata(display_name=tag, description="")
    return summary_pb2.Summary.Value(
        tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(np.float32(value))
    )


def old_histogram(tag: str, data: np.ndarray) -> summary_pb2.Summary.Value:
    """An old-style HistogramProto, as torch's SummaryWriter (and so TRL) writes."""
    counts, edges = np.histogram(data, bins=10)
    histo = summary_pb2.HistogramProto(
        min=float(data.min()),
        max=float(data.max()),
        num=float(data.size),
        sum=float(data.sum()),
        sum_squares=float((data**2).sum()),
        bucket_limit=edges[1:].tolist(),
        bucket=counts.tolist(),
    )
    return summary_pb2.Summary.Value(tag=tag, histo=histo)


def new_histogram(tag: str, data: np.ndarray) -> summary_pb2.Summary.Value:
    """A new-style histogram: a [k, 3] tensor of (left, right, count)."""
    counts, edges = np.histogram(data, bins=5)
    buckets = np.stack([edges[:-1], edges[1:], counts], axis=1).astype(np.float64)
    meta = histogram_metadata.create_summary_metadata(display_name=tag, description="")
    return summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(buckets))


def text_value(tag: str, text: str) -> summary_pb2.Summary.Value:
    """A text summary (string tensor with text-plugin metadata)."""
    meta = text_metadata.create_summary_metadata(display_name=tag, description="")
    return summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(text))


def append_partial_record(path: Path, event: event_pb2.Event, keep: float = 0.5) -> None:
    """Append the first part of a valid record: what a crash mid-write leaves behind."""
    sink = io.BytesIO()
    RecordWriter(sink).write(event.SerializeToString())
    record = sink.getvalue()
    with path.open("ab") as handle:
        handle.write(record[: max(1, int(len(record) * keep))])


def write_roll_stdout_log(path: Path, *, steps: int = 20, unstable: bool = False) -> Path:
    """ROLL's stdout tracker: `metrics_tag: {...}` behind a logger prefix, among other lines."""
    series = trl_series(steps, unstable=unstable, seed=1)
    lines = ["[2025-01-01 00:00:00] INFO pipeline started"]
    for step in range(steps):
        metrics = {
            "critic/score/mean": series["env/reward_mean"][step],
            "actor/kl_loss": series["objective/kl"][step],
            "actor/pg_loss@sum": -0.01 * step,
            "critic/loss": series["ppo/loss/value"][step],
            "actor/clipfrac": series["ppo/policy/clipfrac"][step],
            "critic/entropy/mean": series["objective/entropy"][step],
            "system/note": "warmup" if step == 0 else "ok",
        }
        payload = json.dumps({"step": step, "metrics": metrics})
        lines.append(f"[2025-01-01 00:00:{step:02d}] [roll.pipeline:12] [INFO] metrics_tag: {payload}")
    lines.append('[2025-01-01 00:01:00] [INFO] metrics_tag: {"step": 99, "metrics": ')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_verl_console_log(path: Path, *, steps: int = 20, unstable: bool = False) -> Path:
    """verl's console logger lines behind a Ray prefix and ANSI colour codes."""
    series = trl_series(steps, unstable=unstable, seed=2)
    lines = ["(TaskRunner pid=4242) Training from scratch"]
    for step in range(1, steps + 1):
        fields = {
            "actor/pg_loss": -0.01 * step,
            "actor/entropy": series["objective/entropy"][step - 1],
            "actor/kl_loss": series["objective/kl"][step - 1],
            "actor/pg_clipfrac": series["ppo/policy/clipfrac"][step - 1],
            "critic/score/mean": series["env/reward_mean"][step - 1],
            "response_length/mean": 200.0 + step,
            "timing_s/gen": 3.5,
        }
        body = " - ".join(
            f"{k}:np.float64({v})" if k == "timing_s/gen" else f"{k}:{v}" for k, v in fields.items()
        )
        lines.append(f"{ANSI_GREEN}(TaskRunner pid=4242){ANSI_RESET} step:{step} - {body}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_verl_file_log(
    root: Path,
    *,
    project: str = "gsm8k_grpo",
    experiment: str = "qwen_run1",
    steps: int = 12,
    negative_kl_from: int | None = None,
) -> Path:
    """verl's file logger (``trainer.logger=file``): ``{root}/{project}/{experiment}.jsonl``, one
    ``{"step": N, "data": {metric: value}}`` per line, as ``FileLogger.log`` writes it."""
    series = trl_series(steps, seed=4)
    path = root / project / f"{experiment}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for step in range(1, steps + 1):
            kl = series["objective/kl"][step - 1]
            data = {
                "actor/kl_loss": -abs(kl) - 0.01
                if negative_kl_from is not None and step >= negative_kl_from
                else kl,
                "actor/entropy": series["objective/entropy"][step - 1],
                "actor/pg_clipfrac": series["ppo/policy/clipfrac"][step - 1],
                "critic/score/mean": series["env/reward_mean"][step - 1],
                "response_length/mean": 180.0 + step,
                "timing_s/gen": 3.0 + 0.1 * step,
                "training/global_step": step,
                "training/epoch": 0,
            }
            f.write(json.dumps({"step": step, "data": data}) + "\n")
    return path


def write_jsonl_metrics(path: Path, *, steps: int = 10) -> Path:
    """Plain JSON lines: a step, a timestamp and scalar fields (one nested)."""
    rows = [
        {"step": s, "timestamp": 1000.0 + s, "loss": 1.0 / (s + 1), "eval": {"acc": s / 10}}
        for s in range(steps)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_rollout_jsonl(path: Path) -> Path:
    """Rollout samples (prompt/response): a JSONL file that is NOT a metric log."""
    rows = [{"step": s, "prompt": "2+2=", "response": "4", "reward": 1.0} for s in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_di_engine_folder(
    folder: Path, *, iterations: int = 6, aborted: bool = False, empty_collector: bool = False
) -> Path:
    """A DI-engine experiment folder in the real layout (text loggers, config, ckpt/, log/serial)."""
    log = folder / "log"
    for role in ("collector", "evaluator", "learner"):
        (log / role).mkdir(parents=True, exist_ok=True)
    collector = "" if empty_collector else "".join(_collector_block(i) for i in range(iterations))
    (log / "collector" / "collector_logger.txt").write_text(collector, encoding="utf-8")
    evaluator = "".join(_evaluator_round(i * 100) for i in range(0, iterations, 2))
    learner = _NETWORK + "".join(_learner_block(i * 100) for i in range(iterations))
    if aborted:  # the run died while printing a table: its Value row never came
        learner += _stamp(99) + "[learner_hook.py:224][INFO] \n| Name  | cur_lr_avg |\n"
    (log / "evaluator" / "evaluator_logger.txt").write_text(evaluator, encoding="utf-8")
    (log / "learner" / "learner_logger.txt").write_text(learner, encoding="utf-8")
    (folder / "formatted_total_config.py").write_text("raise SystemExit('never run me')\nexp_config = {}\n")
    (folder / "ckpt").mkdir(exist_ok=True)
    for name in ("ckpt_best.pth.tar", "iteration_0.pth.tar", f"iteration_{(iterations - 1) * 100}.pth.tar"):
        (folder / "ckpt" / name).write_bytes(b"x" * 128)
    writer = EventFileWriter(str(log / "serial"))
    for i in range(iterations):
        value = summary_pb2.Summary.Value(tag="learner_iter/total_loss_avg", simple_value=1.0 / (i + 1))
        writer.add_event(
            event_pb2.Event(step=i * 100, wall_time=2000.0 + i, summary=summary_pb2.Summary(value=[value]))
        )
    writer.close()
    return folder


def _stamp(second: int) -> str:
    """A DI-engine log timestamp prefix."""
    return f"[2023-05-17 16:{second // 60:02d}:{second % 60:02d}]"


def _table(fields: dict[str, str]) -> str:
    """One Name/Value table as DI-engine's learner and evaluator print it."""
    names, values = " | ".join(fields), " | ".join(fields.values())
    rule = "+-------+" + "-" * len(names) + "+\n"
    return f"{rule}| Name  | {names} |\n{rule}| Value | {values} |\n{rule}"


def _collector_block(i: int) -> str:
    """A `collect end:` block of key: value lines."""
    fields = {
        "episode_count": 10,
        "envstep_count": 500,
        "reward_mean": -100.0 + 20 * i,
        "total_envstep_count": 500 * (i + 1),
        "total_episode_count": 10 * (i + 1),
    }
    body = "".join(f"{k}: {v}\n" for k, v in fields.items())
    return f"{_stamp(i)}[sample_serial_collector.py:365][INFO] collect end:\n{body}"


def _evaluator_round(train_iter: int) -> str:
    """Per-episode reward lines, then the round's tables."""
    lines = "".join(
        f"{_stamp(train_iter % 60)}[interaction_serial_evaluator.py:253][INFO] "
        f"[EVALUATOR]env {e} finish episode, "
        f"final reward: {100.0 + train_iter + e:.4f}, current episode: {e + 1}\n"
        for e in range(2)
    )
    head = f"{_stamp(train_iter % 60)}[interaction_serial_evaluator.py:279][INFO] \n"
    first = _table({"train_iter": f"{train_iter:.6f}", "ckpt_name": f"iteration_{train_iter}.pth.tar"})
    second = _table({"reward_mean": f"{100.5 + train_iter:.6f}", "reward_std": "0.500000"})
    return lines + head + first + second + "\n\n"


def _learner_block(iteration: int) -> str:
    """A `Training Iteration N Result` block with two tables."""
    head = (
        f"{_stamp(iteration % 60)}[base_learner.py:338][INFO] [RANK0]: "
        f"=== Training Iteration {iteration} Result ===\n"
    )
    hook = f"{_stamp(iteration % 60)}[learner_hook.py:224][INFO] \n"
    first = _table({"cur_lr_avg": "0.000500", "value_loss_avg": f"{1.0 / (iteration + 1):.6f}"})
    second = _table({"entropy_loss_avg": "1.500000", "clipfrac_avg": "0.050000"})
    save = (
        f"{_stamp(1)}[base_learner.py:338][INFO] [RANK0]: "
        f"learner save ckpt in ./exp/ckpt/iteration_{iteration}.pth.tar\n"
    )
    return head + hook + first + second + "\n" + save


_NETWORK = (
    "[2023-05-17 16:00:00][base_learner.py:338][INFO] [RANK0]: DI-engine DRL Policy\n"
    "VAC(\n  (actor_head): Linear(in_features=4, out_features=2, bias=True)\n)\n"
)


def write_demo_tree(root: Path, *, unstable: bool = False) -> Path:
    """One of each: a TensorBoard run, a DI-engine folder, ROLL/verl logs, JSONL metrics and rollouts."""
    write_tensorboard_run(root / "tb" / "trl_run", unstable=unstable)
    write_di_engine_folder(root / "di" / "exp1")
    (root / "logs").mkdir(parents=True, exist_ok=True)
    write_roll_stdout_log(root / "logs" / "roll.log", unstable=unstable)
    write_verl_console_log(root / "logs" / "verl.log", unstable=unstable)
    write_jsonl_metrics(root / "logs" / "metrics.jsonl")
    write_rollout_jsonl(root / "logs" / "rollouts.jsonl")
    return root
