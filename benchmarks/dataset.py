"""Parquet dataset benchmark: open one step of a big run read in place, from a local folder and from S3.

    python benchmarks/dataset.py                  # a 10 GB run (the 1 GB run exported, its steps copied 8x)
    python benchmarks/dataset.py --times 2        # a 2.7 GB run, quicker

The run: `benchmarks/load.py`'s "1 GB" demo run (1.36 GB of JSONL, 4 ranks, ~600 tokens per sample)
read once through rl-board, exported with `rl-board export`, and its step files
copied under new step numbers until the dataset holds ``--times`` times the
samples: the layout and bytes per sample of a 10 GB run. Each measurement runs in
a fresh process with no cache:

  1. open: RolloutStore.open(dataset): its index (one file), or without one every
     step file's footer and per-sample number columns
  2. one step: that step's table (prompt and response text included) and one
     sample's tokens, what the step browser and the sample page ask for
  3. the same from a real S3-compatible server (moto, on 127.0.0.1), with and
     without the index, the bytes it sent counted (once) by a proxy in between

Numbers are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))
MB = 1024 * 1024

from benchmarks.load import make_run  # noqa: E402  (the same 1 GB run as the load benchmark)
from tests.helpers import s3  # noqa: E402  (moto server and the byte-counting proxy of the tests)


def build(work: Path, times: int) -> tuple[Path, int, int]:
    """The dataset (built once per --times), the JSONL bytes it stands for, and its samples."""
    out = work / f"dataset_x{times}"
    meta = out.with_suffix(".json")
    if meta.exists():
        info = json.loads(meta.read_text())
        return out, info["jsonl_bytes"], info["samples"]
    run = make_run(1024 * MB, work)
    jsonl = sum(p.stat().st_size for p in run.glob("*.jsonl"))
    base = work / "dataset_x1"
    if not base.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rl_board",
                "export",
                str(run),
                str(base),
                "--cache-dir",
                str(work / "cache"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    shutil.rmtree(out, ignore_errors=True)
    parts = sorted(base.glob("step=*/part-0.parquet"), key=lambda p: int(p.parent.name[5:]))
    steps = len(parts)
    for copy in range(times):
        for k, part in enumerate(parts):
            folder = out / f"step={copy * steps + k}"
            folder.mkdir(parents=True)
            os.link(part, folder / "part-0.parquet") if copy else shutil.copyfile(
                part, folder / "part-0.parquet"
            )
    import pyarrow.parquet as pq

    from rl_board.rollouts import lazy

    lazy.reindex(out)  # the index `rl-board export` would have written for a run this size
    samples = sum(pq.read_metadata(p).num_rows for p in out.glob("step=*/part-0.parquet"))
    meta.write_text(json.dumps({"jsonl_bytes": jsonl * times, "samples": samples}))
    return out, jsonl * times, samples


def phase(target: str, env: dict[str, str], cache: Path) -> dict:
    """Open and show one step in a fresh process (no cache); returns its timings."""
    code = f"""
import json, sys, time
def hwm_mb():  # this process's own peak (ru_maxrss would carry the parent's peak across exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
t0 = time.perf_counter()
from rl_board.rollouts.store import RolloutStore
t1 = time.perf_counter()
store = RolloutStore.open({target!r}, cache_dir={str(cache)!r})
t2 = time.perf_counter()
step = store.steps[len(store.steps) // 2]
frame = store.samples(step=step, sort_by="reward", descending=True, limit=200)
detail = store.sample(step=step, index=0)
t3 = time.perf_counter()
json.dump({{"import": t1 - t0, "open": t2 - t1, "step": t3 - t2, "samples": store.num_samples,
            "steps": len(store.steps), "rows": len(frame), "tokens": len(detail.tokens),
            "rss_mb": hwm_mb()}}, sys.stdout)
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=HERE.parents[1],
        check=True,
    )
    return json.loads(proc.stdout)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} s  ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--times",
        type=int,
        default=8,
        help="copies of the 1 GB run's steps (its JSONL is 1.36 GB: 8 copies = a 10.9 GB run)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "rl-board-bench"))
    parser.add_argument("--no-s3", action="store_true", help="skip the S3 part")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    dataset, jsonl_bytes, samples = build(work, args.times)
    size = sum(p.stat().st_size for p in dataset.glob("step=*/*.parquet"))
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(
        f"run: {samples:,} samples, {jsonl_bytes / 1e9:.1f} GB as JSONL, {size / 1e9:.2f} GB as Parquet "
        f"({len(list(dataset.glob('step=*')))} step files)\n"
    )

    rows = []
    local = [phase(str(dataset), {}, work / f"nocache-{k}") for k in range(args.repeat)]
    rows.append(("local folder", local, None))
    if not args.no_s3:
        with s3.s3_server() as endpoint:
            url = "s3://bench/runs/big"
            t = time.perf_counter()
            s3.upload(endpoint, dataset, url)
            print(f"(uploaded to the S3 server in {time.perf_counter() - t:.0f} s)")
            proxy = s3.CountingProxy(int(endpoint.rsplit(":", 1)[1]))  # bytes counted once, through a relay
            for name, target in (("S3 server (moto, loopback)", url), ("S3, no index (other writer)", None)):
                if target is None:  # the same dataset as another job would write it: no _rl_board/index.arrow
                    s3.delete(endpoint, f"{url}/_rl_board/index.arrow")
                    target = url
                remote = [
                    phase(target, s3.s3_env(endpoint), work / f"nocache-s3-{k}") for k in range(args.repeat)
                ]
                proxy.reset()
                phase(target, s3.s3_env(proxy.url), work / "nocache-s3-counted")
                rows.append((name, remote, [proxy.received]))
    print(
        f"{'where':28} {'open (footers + numbers)':>30} {'one step + one sample':>30} "
        f"{'peak RSS':>10} {'received':>12}"
    )
    for name, results, sent in rows:
        received = f"{statistics.median(sent) / 1e6:9.1f} MB" if sent else "-"
        print(
            f"{name:28} {spread([r['open'] for r in results]):>30} "
            f"{spread([r['step'] for r in results]):>30} "
            f"{statistics.median(r['rss_mb'] for r in results):7.0f} MB {received:>12}"
        )
    first = rows[0][1][0]
    print(
        f"\n{first['samples']:,} samples in {first['steps']} steps; the step shown has {first['rows']} rows,"
        f" its sample {first['tokens']} tokens. Nothing was cached:"
        " each run started from an empty cache folder."
    )


if __name__ == "__main__":
    main()
