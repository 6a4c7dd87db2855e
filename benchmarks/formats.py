"""Reading speed of trainers' dump formats against rl-board's own format, per MB, on the same samples.

    python benchmarks/formats.py                # every format, ~20k samples each
    python benchmarks/formats.py --samples 5000 --repeat 5

For each format it writes a dump (tests/helpers/trainer_dumps.py, made up by
code), then writes the very same samples in rl-board's own format (one JSON
line each, same prompt / response / reward / extra columns), and times a cold
load of each through the store (empty cache, in this process, median of
``--repeat`` runs, the two alternating). It prints seconds (median, and the
range over the runs), MB/s and the ratio of seconds per MB (format / rl-board;
per sample for compressed Parquet): the target is at most 1.5.

Parquet is also held to its own target: read at >= 3x the JSONL rate per MB,
where a MB is a MB of the same samples as JSONL (Parquet's own bytes are
compressed, so its rate per file MB says nothing): that is the JSONL load's
time over the Parquet load's. Measured on TRL's dump and on an rl-board
Parquet dataset (`rl-board export`) of a token-level demo run.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rl_board.rollouts.read import pool  # noqa: E402
from rl_board.rollouts.store import RolloutStore  # noqa: E402
from rl_board.sources.catalogue import catalogue  # noqa: E402
from tests.helpers import trainer_dumps as T  # noqa: E402

PARQUET_DATASET = "rl_board_parquet"  # `rl-board export` of a token-level demo run
FORMATS = (
    "verl",
    "verl_v1",
    "trl",
    "roll",
    "nemo_rl",
    "prime_rl",
    "areal",
    "skyrl_eval",
    "openrlhf",
    PARQUET_DATASET,
)
DERIVED = {
    "n_tokens",
    "n_logprobs",
    "length_mismatch",
    "response_chars",
    "ref_response_chars",
    "log_ratio_mean",
    "log_ratio_sum",
    "kl_mean",
    "kl_sum",
    "reward_gap",
    "valid_reward_gap",
    "nonfinite_tokens",
    "sample",
    "file",
    "line",
}


def run_of(root: Path, dump: T.Dump) -> Path:
    first = dump.files[0].resolve()
    folders = [f for f in catalogue(root).rollout_folders() if first.is_relative_to(f.path)]
    return max(folders, key=lambda f: len(f.path.parts)).path


def cold_load(run: Path) -> float:
    """A first open in a fresh server: empty cache, no worker pool running (a load that pays for the pool
    starts it itself), so neither side of a comparison inherits the other's warm workers."""
    cache = Path(tempfile.mkdtemp(prefix="rlb-bench-cache-"))
    pool.shutdown()
    try:
        t0 = time.perf_counter()
        RolloutStore.open(run, cache_dir=cache)
        return time.perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def same_samples_as_rl_board(run: Path, out: Path) -> None:
    """The run's samples, every log column kept, as rl-board JSON lines: one file per file of the dump."""
    store = RolloutStore.open(run, cache_dir=out.parent / "convert-cache")
    frame = store.samples(columns=[c for c in store.fields if c not in DERIVED])
    out.mkdir(parents=True)
    for k, (_, part) in enumerate(frame.groupby("file", sort=False)):
        rows = part.drop(columns=[c for c in ("sample", "file", "line") if c in part.columns])
        with (out / f"rollout_data_{k:04d}.jsonl").open("w") as f:
            for row in rows.to_dict("records"):
                f.write(json.dumps({key: _plain(v) for key, v in row.items()}) + "\n")


def _plain(value: object) -> object:
    """A value as the trainer logged it: a float32 token value at its own shortest digits (``-0.2312``), not
    widened to float64's (``-0.23119999468326569``), which would pad the twin with digits no log has."""
    if getattr(value, "dtype", None) == np.float32:
        return [float(x) for x in np.asarray(value).astype(str)]
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def size_of(run: Path) -> int:
    """Bytes of the files the run is read from (prime-rl's effective/ copies and the like are skipped)."""
    return sum(f.bytes for f in RolloutStore.open(run, cache_dir=run.parent / "size-cache").report.files)


def measure(name: str, work: Path, samples: int, repeat: int) -> dict:
    if name == PARQUET_DATASET:
        return measure_dataset(work, samples, repeat)
    prompts, group = 64, 8
    steps = max(1, samples // (prompts * group))
    dump = T.ALL_WRITERS[name](work / name / "dump", steps=steps, prompts=prompts, group=group)
    run = run_of(work / name / "dump", dump)
    twin = work / name / "rl-board"
    same_samples_as_rl_board(run, twin)
    return compare(name, run, twin, dump.samples, dump.files[0].suffix == ".parquet", repeat)


def measure_dataset(work: Path, samples: int, repeat: int) -> dict:
    """A token-level demo run (~600 tokens a sample) against the same run exported as an rl-board dataset."""
    from rl_board.rollouts.dataset import write_dataset
    from rl_board.rollouts.demo import DemoSpec, write_run

    twin = work / PARQUET_DATASET / "jsonl"
    steps = max(1, samples // 2048)  # 20,000 -> 9 steps of 256 samples, ~100 MB of JSONL
    write_run(twin, DemoSpec(steps=steps, samples=256, ranks=4, tokens=600, seed=3))
    store = RolloutStore.open(twin, cache_dir=work / PARQUET_DATASET / "export-cache")
    run = work / PARQUET_DATASET / "parquet"
    write_dataset(store.arrow_samples(), str(run))
    return compare(PARQUET_DATASET, run, twin, store.num_samples, True, repeat)


def compare(name: str, run: Path, twin: Path, samples: int, parquet: bool, repeat: int) -> dict:
    times: dict[str, list[float]] = {"format": [], "rl-board": []}
    for _ in range(repeat):
        times["format"].append(cold_load(run))
        times["rl-board"].append(cold_load(twin))
    fmt_s, own_s = statistics.median(times["format"]), statistics.median(times["rl-board"])
    fmt_mb, own_mb = size_of(run) / 1e6, size_of(twin) / 1e6
    # A Parquet file is compressed: its bytes say little, so it is compared per sample instead.
    ratio = fmt_s / own_s if parquet else (fmt_s / fmt_mb) / (own_s / own_mb)
    return {
        "format": name,
        "samples": samples,
        "MB": fmt_mb,
        "s": fmt_s,
        "own MB": own_mb,
        "own s": own_s,
        "ratio": ratio,
        "per": "sample" if parquet else "MB",
        "parquet": parquet,
        "range": (min(times["format"]), max(times["format"])),
        "own range": (min(times["rl-board"]), max(times["rl-board"])),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000, help="samples per format (about)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", action="append", choices=FORMATS, help="one format (repeatable)")
    ns = parser.parse_args()
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}; median of {ns.repeat} cold loads"
    )
    print(
        "| format | samples | MB | s (range) | MB/s | rl-board MB | rl-board s (range) | rl-board MB/s "
        "| time vs rl-board |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="rlb-bench-formats-"))
    parquet = []
    try:
        for name in ns.only or FORMATS:
            r = measure(name, work, ns.samples, ns.repeat)
            lo, hi = r["range"]
            own_lo, own_hi = r["own range"]
            print(
                f"| {r['format']} | {r['samples']} | {r['MB']:.1f} | {r['s']:.3f} ({lo:.3f}–{hi:.3f}) "
                f"| {r['MB'] / r['s']:.0f} | {r['own MB']:.1f} "
                f"| {r['own s']:.3f} ({own_lo:.3f}–{own_hi:.3f}) "
                f"| {r['own MB'] / r['own s']:.0f} | {r['ratio']:.2f}x per {r['per']} |",
                flush=True,
            )
            if r["parquet"]:
                parquet.append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in parquet:
        rate = r["own s"] / r["s"]  # JSONL MB of the same samples per second, Parquet over JSONL
        print(
            f"\n{r['format']}: Parquet read at {rate:.1f}x the JSONL rate per MB of the same samples "
            f"({r['own MB'] / r['s']:.0f} vs {r['own MB'] / r['own s']:.0f} MB/s; target >= 3x: "
            f"{'met' if rate >= 3 else 'missed'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
