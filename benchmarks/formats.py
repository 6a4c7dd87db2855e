"""Reading speed of trainers' dump formats against rl-board's own format, per MB, on the same samples.

    python benchmarks/formats.py                # every format, ~20k samples each
    python benchmarks/formats.py --samples 5000 --repeat 5

For each format it writes a dump (tests/helpers/trainer_dumps.py, made up by
code), then writes the very same samples in rl-board's own format (one JSON
line each, same prompt / response / reward / extra columns), and times a cold
load of each through the store (empty cache, in this process, median of
``--repeat`` runs, the two alternating). It prints seconds, MB/s and the ratio
of seconds per MB (format / rl-board; per sample for compressed Parquet): the
target is at most 1.5. Nothing is asserted.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rl_board.rollouts.store import RolloutStore  # noqa: E402
from rl_board.sources.catalogue import catalogue  # noqa: E402
from tests.helpers import trainer_dumps as T  # noqa: E402

FORMATS = ("verl", "verl_v1", "trl", "roll", "nemo_rl", "prime_rl", "areal", "skyrl_eval", "openrlhf")
DERIVED = {"n_tokens", "n_logprobs", "length_mismatch", "response_chars", "ref_response_chars", "log_ratio_mean",
           "log_ratio_sum", "kl_mean", "kl_sum", "reward_gap", "valid_reward_gap", "nonfinite_tokens", "sample",
           "file", "line"}  # fmt: skip


def run_of(root: Path, dump: T.Dump) -> Path:
    first = dump.files[0].resolve()
    folders = [f for f in catalogue(root).rollout_folders() if first.is_relative_to(f.path)]
    return max(folders, key=lambda f: len(f.path.parts)).path


def cold_load(run: Path) -> float:
    cache = Path(tempfile.mkdtemp(prefix="rlb-bench-cache-"))
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
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def size_of(run: Path) -> int:
    """Bytes of the files the run is read from (prime-rl's effective/ copies and the like are skipped)."""
    return sum(f.bytes for f in RolloutStore.open(run, cache_dir=run.parent / "size-cache").report.files)


def measure(name: str, work: Path, samples: int, repeat: int) -> dict:
    prompts, group = 64, 8
    steps = max(1, samples // (prompts * group))
    dump = T.ALL_WRITERS[name](work / name / "dump", steps=steps, prompts=prompts, group=group)
    run = run_of(work / name / "dump", dump)
    twin = work / name / "rl-board"
    same_samples_as_rl_board(run, twin)
    times: dict[str, list[float]] = {"format": [], "rl-board": []}
    for _ in range(repeat):
        times["format"].append(cold_load(run))
        times["rl-board"].append(cold_load(twin))
    fmt_s, own_s = statistics.median(times["format"]), statistics.median(times["rl-board"])
    fmt_mb, own_mb = size_of(run) / 1e6, size_of(twin) / 1e6
    # A Parquet file is compressed: its bytes say little, so it is compared per sample instead.
    ratio = fmt_s / own_s if dump.files[0].suffix == ".parquet" else (fmt_s / fmt_mb) / (own_s / own_mb)
    return {"format": name, "samples": dump.samples, "MB": fmt_mb, "s": fmt_s, "own MB": own_mb, "own s": own_s,
            "ratio": ratio, "per": "sample" if dump.files[0].suffix == ".parquet" else "MB"}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000, help="samples per format (about)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", action="append", choices=FORMATS, help="one format (repeatable)")
    ns = parser.parse_args()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; median of {ns.repeat} cold loads")
    print("| format | samples | MB | s | MB/s | rl-board MB | rl-board s | rl-board MB/s | time vs rl-board |")
    print("|---|---|---|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="rlb-bench-formats-"))
    try:
        for name in ns.only or FORMATS:
            r = measure(name, work, ns.samples, ns.repeat)
            print(f"| {r['format']} | {r['samples']} | {r['MB']:.1f} | {r['s']:.3f} | {r['MB'] / r['s']:.0f} | "
                  f"{r['own MB']:.1f} | {r['own s']:.3f} | {r['own MB'] / r['own s']:.0f} | {r['ratio']:.2f}x per {r['per']} |",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
