"""Load benchmark: rl-board's store against the reference board's own loader, a naive loader and orjson's bare
parse, each figure by its target.

    python benchmarks/load.py                 # 60MB, 3 runs of each timed phase
    python benchmarks/load.py --big           # 60MB and 1GB (the 1GB run takes minutes)
    python benchmarks/load.py --size 100MB    # one size (repeatable)
    python benchmarks/load.py --tokens 256    # shorter answers: more samples per MB
    python benchmarks/load.py --quick         # only the cold loads, orjson and the commands
    python benchmarks/load.py --repeat 5      # more runs per figure
    python benchmarks/load.py --size 10GB     # on request (needs ~15 GB of disk)

For each size it writes a run with `rl-board demo` (several rank files, full
float reprs), then measures, each phase in a fresh process so peak RSS is
that phase's own:
  1. cold load through the store (empty cache): s, MB/s, peak RSS of this
     process and of each worker it started (or of its forked helpers), and
     the CPU of them all against orjson's (less noisy than time on a shared
     machine); and the same cold load and orjson's parse again beside a CPU
     hog (a busy loop in another process, as on a machine doing something
     else)
  2. cold load with the worker pool already warm (a server's second open)
  3. warm reopen of the unchanged run
  4. `rl-board summary RUN`, `runs ROOT`, `query RUN SQL` on the cached run
     and `scalars` on the bundled samples (cached), each whole process timed
  5. the reference board's own loader (RLLoggingBoard's load_log_file redone
     without Streamlit: see phase_reference; ujson when installed, as there),
     3 times up to 256 MB, once up to 1.5 GB, skipped past that (it holds ~6x
     the logs in memory); the naive loader (json.loads per line, numpy per
     sample, per-step lists: lighter than the reference), skipped past 4 GB;
     and orjson's bare parse as a floor
  6. query latencies, a full rerun of the step browser, a refresh after
     appending ~1 MB
Timed phases run ``--repeat`` times (interleaved, so a busy moment hits all
alike; each waits up to --wait-idle seconds for idle CPUs), the logs read once
before so that every phase finds them in the page cache: the tables give the
median and the range. Ratios are medians of
per-round ratios. Nothing is asserted. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
MB = 1024 * 1024


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(MB|GB)", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"size like 100MB or 1GB, not {text!r}")
    return int(float(m.group(1)) * (MB if m.group(2).upper() == "MB" else 1024 * MB))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- phases, each run in its own process ------------------------------------


def _pool_pids() -> list[int] | None:
    """The pids of this process's pool's workers (kept running: not waited for); None for an rl-board from
    before the warm pool."""
    try:
        from rl_board.rollouts.read import pool
    except ImportError:
        return None
    running = pool.running()
    return list(running.pids) if running is not None else []


def _worker_peaks() -> list[float]:
    """Peak RSS (MB) of each worker of this process's pool, or of its forked helpers (exited and waited
    for: the largest)."""
    pids = _pool_pids()
    if not pids:  # no pool running: the largest of the exited children (before the pool: two workers)
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        return [children] * (2 if pids is None else 1) if children else []
    peaks = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        peaks.append(int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024)
    return peaks


def cpu_seconds() -> float:
    """CPU time (user + system, s) of this process, its children waited for (a load's forked helpers) and
    its pool's workers (kept running): what a load costs a machine whose other cores are busy."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    for pid in _pool_pids() or []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return total


def _imports_before_the_clock() -> None:
    """What a parse imports (pandas, pyarrow.compute, the parsers), imported before the clock starts: the
    load is timed, not the imports, as orjson's parse is timed without importing orjson. (Until pandas and
    pyarrow.compute were imported on first use, importing the store module brought them in.)"""
    from rl_board.rollouts.read.ingest import import_parsers

    import_parsers()


def phase_cold(run: str, cache_dir: str) -> dict:
    from rl_board.rollouts.store import RolloutStore

    _imports_before_the_clock()
    cpu = cpu_seconds()
    t = time.perf_counter()
    store = RolloutStore.open(run, cache_dir=cache_dir)
    seconds = time.perf_counter() - t
    cpu = cpu_seconds() - cpu
    workers = _worker_peaks()
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "samples": store.num_samples,
        "rss_mb": peak_rss_mb(),
        "worker_rss_mb": workers,
    }


def phase_pooled(run: str, cache_dir: str) -> dict:
    """A cold load (empty cache) by a process whose worker pool is already running, as in a server."""
    import os as _os

    from rl_board.rollouts.read import pool
    from rl_board.rollouts.store import RolloutStore

    with pool.borrowed(min(_os.cpu_count() or 1, 4), start=True) as workers:
        assert workers is not None and workers.wait_ready()
    _imports_before_the_clock()
    t = time.perf_counter()
    store = RolloutStore.open(run, cache_dir=cache_dir)
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "samples": store.num_samples,
        "rss_mb": peak_rss_mb(),
        "worker_rss_mb": _worker_peaks(),
    }


def phase_warm(run: str, cache_dir: str) -> dict:
    from rl_board.rollouts.store import RolloutStore

    t = time.perf_counter()
    store = RolloutStore.open(run, cache_dir=cache_dir)
    seconds = time.perf_counter() - t
    assert store.report.from_cache
    return {"seconds": seconds, "rss_mb": peak_rss_mb()}


def phase_naive(run: str, cache_dir: str) -> dict:
    """The reference board's way: json.loads per line, numpy per sample, lists per step."""
    import numpy as np

    t = time.perf_counter()
    steps: dict[int, list[dict]] = {}
    for path in sorted(Path(run).glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                sample = {k: v for k, v in rec.items() if not isinstance(v, list)}
                if "logprobs" in rec and "ref_logprobs" in rec:
                    lp = np.array(rec["logprobs"], dtype=np.float64)
                    ref = np.array(rec["ref_logprobs"], dtype=np.float64)
                    n = min(len(lp), len(ref))
                    ratio = lp[:n] - ref[:n]
                    sample["log_ratio"] = ratio
                    sample["kl"] = np.exp(ratio) - 1 - ratio
                    sample["values"] = np.array(rec.get("values", []), dtype=np.float64)
                    sample["token_rewards"] = np.array(rec.get("token_rewards", []), dtype=np.float64)
                    sample["tokens"] = rec.get("response_tokens", [])
                steps.setdefault(int(rec["step"]), []).append(sample)
    return {"seconds": time.perf_counter() - t, "rss_mb": peak_rss_mb(), "steps": len(steps)}


# The lists RLLoggingBoard keeps for each step, in its order: a record's field of the same name is appended
# to its list; kl, log_ratio, probs and their means and sums are computed from the log-probs.
REFERENCE_STEP_LISTS = (
    "prompt",
    "response",
    "ref_response",
    "reward",
    "ref_reward",
    "response_tokens",
    "logprobs",
    "ref_logprobs",
    "probs",
    "ref_probs",
    "values",
    "token_rewards",
    "kl",
    "avg_kl",
    "sum_kl",
    "log_ratio",
    "avg_log_ratio",
    "sum_log_ratio",
    "valid_reward",
    "ref_valid_reward",
    "response_tokens_len",
    "ground_truth",
)
REFERENCE_CAP = 128  # its sidebar's "Max Samples Each Step" default
# It keeps 8 Python float lists per token, ~6x the logs in RSS (430 MB for 69 MB): run 3 times up to 256 MB,
# once up to 1.5 GB (the 1 GB run: ~8 GB, ~20 s), and past that not at all.
REFERENCE_MAX_BYTES = 1536 * MB


def reference_json():
    """The JSON module the reference board parses with: ujson (pinned in its requirements) when importable."""
    try:
        import ujson
    except ImportError:
        return json, "json (stdlib; ujson not installed, so slower than the real board)"
    return ujson, f"ujson {getattr(ujson, '__version__', '?')}"


def phase_reference(run: str, cache_dir: str, cap: int = REFERENCE_CAP) -> dict:
    """The reference board's own loader, redone here step for step (our code, not a copy of its).

    Follows ``load_log_file(logdir, max_samples_each_step)`` of ``rl_logging_board.py`` in
    HarderThenHarder/RLLoggingBoard (commit cf56d5d): every ``*.jsonl`` name from ``os.listdir``, opened
    as text (utf8, errors ignored), per line: ``ujson.loads`` (stdlib ``json`` without ujson), ``int(step)``,
    a dict of the 22 per-step lists on a new step, each of the record's fields that has such a list appended
    as parsed (Python lists of floats kept), the token count, and when both log-prob lists are there:
    ``np.array`` of each, log_ratio = logp - ref_logp, kl = exp(log_ratio) - 1 - log_ratio, ``nanmean`` and
    ``nansum`` of both, and ``.tolist()`` of log_ratio, kl, exp(logp) and exp(ref_logp) kept; a bad line is
    counted and its traceback formatted (printed to stderr here, to the console there). After all files:
    sorted steps, min/max/gap, per step the mean reward, mean response and reference response length in
    characters, mean ref_reward, and the step-by-reward pandas DataFrame indexed by step.

    The down-sampling cap: there, a step already at the cap only updates the progress bar and then
    appends the sample all the same (no ``continue``), so the cap changes no work; it is kept as that
    check. Left out: the Streamlit calls (session_state writes are plain dict writes here, the per-line
    ``st.progress`` updates, ``st.toast``, ``st.warning``/``st.stop`` on an empty folder).
    """
    import traceback

    import numpy as np
    import pandas as pd

    loads, parser = reference_json()
    loads = loads.loads
    t = time.perf_counter()
    data: dict[int, dict[str, list]] = {}
    ok = bad = capped = 0
    for name in os.listdir(run):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(run, name), encoding="utf8", errors="ignore") as f:
            for line in f:
                try:
                    rec = loads(line)
                    step = rec["step"] = int(rec["step"])
                    lists = data.get(step)
                    if lists is None:
                        lists = data[step] = {key: [] for key in REFERENCE_STEP_LISTS}
                    elif len(lists["prompt"]) >= cap:
                        capped += 1  # there: a progress bar update, and the sample is still kept
                    for key, values in lists.items():
                        if key in rec:
                            values.append(rec[key])
                    if "response_tokens" in rec:
                        lists["response_tokens_len"].append(len(rec["response_tokens"]))
                    if "logprobs" in rec and "ref_logprobs" in rec:
                        logp, ref_logp = np.array(rec["logprobs"]), np.array(rec["ref_logprobs"])
                        log_ratio = logp - ref_logp
                        kl = np.exp(log_ratio) - 1 - log_ratio
                        lists["log_ratio"].append(log_ratio.tolist())
                        lists["avg_log_ratio"].append(np.nanmean(log_ratio))
                        lists["sum_log_ratio"].append(np.nansum(log_ratio))
                        lists["kl"].append(kl.tolist())
                        lists["avg_kl"].append(np.nanmean(kl))
                        lists["sum_kl"].append(np.nansum(kl))
                        lists["probs"].append(np.exp(logp).tolist())
                        lists["ref_probs"].append(np.exp(ref_logp).tolist())
                    ok += 1
                except Exception:  # the reference has a bare except
                    print(traceback.format_exc(), file=sys.stderr)
                    bad += 1
    steps = sorted(data)
    summary = {
        "max_step": steps[-1],
        "min_step": steps[0],
        "step_gap": steps[1] - steps[0] if len(steps) > 1 else 1,
    }
    by_step: dict[str, list] = {"step": [], "reward": [], "ref_reward": []}
    for step, lists in data.items():
        lists["avg_reward"] = sum(lists["reward"]) / len(lists["reward"])
        lengths = [len(text) for text in lists["response"]]
        lists["avg_length"] = int(sum(lengths) / len(lengths))
        ref_lengths = [len(text) for text in lists["ref_response"]]
        lists["avg_ref_length"] = int(sum(ref_lengths) / len(ref_lengths)) if ref_lengths else 0
        refs = lists["ref_reward"]
        lists["avg_ref_reward"] = sum(refs) / len(refs) if refs else 0
        by_step["step"].append(step)
        by_step["reward"].append(lists["avg_reward"])
        by_step["ref_reward"].append(lists["avg_ref_reward"])
    summary["reward_df"] = pd.DataFrame.from_dict(by_step).set_index("step")
    return {
        "seconds": time.perf_counter() - t,
        "rss_mb": peak_rss_mb(),
        "steps": len(steps),
        "samples": ok,
        "error_lines": bad,
        "over_cap": capped,
        "parser": parser,
    }


def phase_orjson(run: str, cache_dir: str) -> dict:
    """orjson parsing every line and throwing the result away: a floor for any Python loader."""
    import orjson

    cpu = cpu_seconds()
    t = time.perf_counter()
    failed = 0
    for path in sorted(Path(run).glob("*.jsonl")):
        with open(path, "rb") as f:
            for line in f:
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    failed += 1
    return {
        "seconds": time.perf_counter() - t,
        "cpu_seconds": cpu_seconds() - cpu,
        "rss_mb": peak_rss_mb(),
        "failed_lines": failed,
    }


def phase_queries(run: str, cache_dir: str) -> dict:
    from rl_board.rollouts.filters import SampleFilter
    from rl_board.rollouts.store import RolloutStore

    store = RolloutStore.open(run, cache_dir=cache_dir)
    step = store.steps[len(store.steps) // 2]
    out = {}
    out["step_sorted_by_kl_ms"] = best_ms(
        lambda: store.samples(step=step, sort_by="kl_mean", descending=True)
    )
    regex = SampleFilter.build(text=r"great question.*wonderful", regex=True, text_fields=("response",))
    out["regex_all_responses_ms"] = best_ms(lambda: store.count(filters=regex))
    out["one_sample_tokens_ms"] = best_ms(lambda: store.sample(step=step, index=0))
    out["step_summary_ms"] = best_ms(lambda: store.step_summary())
    out["rss_mb"] = peak_rss_mb()
    return out


def phase_refresh(run: str, cache_dir: str) -> dict:
    from rl_board.rollouts.store import RolloutStore

    store = RolloutStore.open(run, cache_dir=cache_dir)
    first = sorted(Path(run).glob("*.jsonl"))[0]
    lines = first.read_bytes()[: 4 * MB].splitlines(keepends=True)
    chunk = b"".join(lines[:-1])
    extra = b""
    while len(extra) < MB:
        extra += chunk
    extra = extra[: extra.rfind(b"\n", 0, MB) + 1]
    original_size = first.stat().st_size
    with open(first, "ab") as f:
        f.write(extra)
    t = time.perf_counter()
    changed = store.refresh()
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "appended_mb": len(extra) / MB,
        "changed": changed,
        "rss_mb": peak_rss_mb(),
        "original_size": original_size,
    }


def phase_page(run: str, cache_dir: str) -> dict:
    """Server-side time of a full rerun of the step browser (AppTest runs the real script)."""
    os.environ["RL_BOARD_ROOTS"] = str(Path(run).parent)
    os.environ["RL_BOARD_CACHE_DIR"] = cache_dir
    from streamlit.testing.v1 import AppTest

    from rl_board.rollouts.store import RolloutStore

    steps = RolloutStore.open(run, cache_dir=cache_dir).steps
    at = AppTest.from_file(str(HERE.parents[1] / "rl_board" / "ui" / "app.py"), default_timeout=300)
    at.query_params["run"] = Path(run).name
    at.query_params["step"] = str(steps[len(steps) // 2])
    at.query_params["sort"] = "kl_mean"
    at.run()
    at.switch_page("views/steps.py")
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    assert not at.exception, [e.value for e in at.exception]
    return {"first_ms": first * 1000, "rerun_ms": best_ms(at.run), "rss_mb": peak_rss_mb()}


def best_ms(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


PHASES = {
    "cold": phase_cold,
    "pooled": phase_pooled,
    "warm": phase_warm,
    "naive": phase_naive,
    "reference": phase_reference,
    "orjson": phase_orjson,
    "queries": phase_queries,
    "page": phase_page,
    "refresh": phase_refresh,
}


WAIT_IDLE = 60.0  # seconds to wait for idle CPUs before each timed phase (--wait-idle)


def idle_share(seconds: float = 1.0) -> float:
    """Share of CPU time spent idle over ``seconds`` (Linux /proc/stat; 1.0 elsewhere)."""

    def sample() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return values[3] + values[4], sum(values)

    try:
        idle0, total0 = sample()
        time.sleep(seconds)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return 1.0
    return (idle1 - idle0) / max(total1 - total0, 1)


def wait_idle(limit: float) -> None:
    """Wait (up to ``limit`` s) until the CPUs are >= 85 % idle: other work on a small machine skews a
    parallel load far more than orjson's single-core parse."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and idle_share() < 0.85:
        pass


def run_phase(name: str, run: Path, cache_dir: Path) -> dict:
    if name in ("cold", "pooled", "orjson", "naive", "reference", "warm"):
        wait_idle(WAIT_IDLE)
    command = [sys.executable, str(HERE), "--phase", name, "--run", str(run), "--cache", str(cache_dir)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as phase:
        private = 0.0
        while True:  # sampled from here: a thread inside would keep a load from forking its helpers
            private = max(private, private_mb(phase.pid))
            try:
                stdout, stderr = phase.communicate(timeout=0.01)
                break
            except subprocess.TimeoutExpired:
                continue
    if phase.returncode:
        raise subprocess.CalledProcessError(phase.returncode, command, stdout, stderr)
    return {**json.loads(stdout.strip().splitlines()[-1]), "private_mb": private}


def private_mb(pid: int) -> float:
    """A process's anonymous memory (``RssAnon``, MB; 0 once it is gone).

    RSS also counts the pages of files a process maps: the cache's segments are memory-mapped, so after a
    load RSS holds the page cache of much of the cache, which the kernel drops when memory is short.
    Anonymous memory is what the process holds itself."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"RssAnon:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else 0.0


HOG = "while True: pass"  # one core kept busy by another process


def run_hogged(name: str, run: Path, cache_dir: Path) -> dict:
    """A phase while a busy loop runs in another process (waits for idle CPUs first, then starts it)."""
    wait_idle(WAIT_IDLE)
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        time.sleep(0.2)  # the hog is running before the phase starts
        out = subprocess.run(
            [sys.executable, str(HERE), "--phase", name, "--run", str(run), "--cache", str(cache_dir)],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        hog.kill()
        hog.wait()
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- driver ------------------------------------------------------------------


TOKENS = 600  # tokens per answer of the demo runs (``--tokens``)


def make_run(size: int, work: Path, tokens: int = TOKENS) -> Path:
    """A demo run of about ``size`` bytes: 256 samples per step, ``tokens`` tokens each, 4 ranks.

    Past 2 GB, a 1 GB run is written once and its rank files are copied as
    further ranks (more samples per step), which takes minutes, not an hour.
    """
    out = work / (f"run_{size // MB}MB" + ("" if tokens == TOKENS else f"_{tokens}tokens"))
    run = out / "ppo_math"
    if run.exists() and sum(p.stat().st_size for p in run.glob("*.jsonl")) >= size * 0.9:
        return run
    shutil.rmtree(out, ignore_errors=True)
    if size > 2048 * MB:
        base = make_run(1024 * MB, work, tokens)
        run.mkdir(parents=True)
        files = sorted(base.glob("*.jsonl"))
        copies = max(1, round(size / sum(p.stat().st_size for p in files)))
        for c in range(copies):
            for r, path in enumerate(files):
                shutil.copyfile(path, run / f"rollout_data_rank_{c * len(files) + r}.jsonl")
        return run
    bytes_per_sample = 9_000 + 60 * tokens  # measured: 45 KB at 600 tokens, 24 KB at 256, full float reprs
    samples = 256
    steps = max(2, round(size / (bytes_per_sample * samples)))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rl_board",
            "demo",
            str(out),
            "--only",
            "train",
            "--steps",
            str(steps),
            "--samples",
            str(samples),
            "--ranks",
            "4",
            "--tokens",
            str(tokens),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return run


BUNDLED = HERE.parents[1] / "rollout_samples"  # a metrics log for `scalars` (grpo_math/metrics.jsonl)
CLI_TARGET = 0.3  # s, each command on cached inputs, the whole process (issue 34)


# What `query` does before it reads a byte, as a process of its own: numpy set up as a command's process
# sets it up (``config.numpy_env``), then numpy, pyarrow and DuckDB imported and a DuckDB database made.
# Timed as the commands are, it is the floor under `query`'s target.
LIBRARY_FLOOR = (
    "import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); "
    "os.environ.setdefault('NUMPY_MADVISE_HUGEPAGE', '0'); "
    "import numpy, pyarrow, duckdb; duckdb.connect(':memory:'); os._exit(0)"
)
FLOOR = "floor"  # its name among the commands' times


def cli_commands(run: Path, cache_dir: Path) -> dict[str, list[str]]:
    """The commands timed on cached inputs (the run, its root, one SQL query, the bundled metrics) and the
    floor under `query` (``FLOOR``), each a whole command line."""
    script = Path(sys.executable).with_name("rl-board")
    rl_board = [str(script)] if script.exists() else [sys.executable, "-m", "rl_board"]
    cached = ["--json", "--cache-dir", str(cache_dir)]
    return {
        "summary": [*rl_board, "summary", str(run), *cached],
        "runs": [*rl_board, "runs", str(run.parent), *cached],
        "query": [*rl_board, "query", str(run), "SELECT count(*) FROM samples", *cached],
        "scalars": [*rl_board, "scalars", str(BUNDLED), *cached],
        FLOOR: [sys.executable, "-c", LIBRARY_FLOOR],
    }


def cli_seconds(command: list[str]) -> float:
    """One command line, the whole process, start to exit."""
    # as on a user's machine, where Python keeps the compiled .pyc files (a sandbox may say not to)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    wait_idle(WAIT_IDLE)
    t = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def cli_figures(run: Path, cache_dir: Path, repeat: int) -> dict[str, list[float]]:
    """Each command's times and the libraries' floor (interleaved); the first call of each fills the caches
    and is not counted."""
    commands = cli_commands(run, cache_dir)
    for command in commands.values():
        cli_seconds(command)  # caches filled, .pyc files compiled
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            times[name].append(cli_seconds(command))
    return times


def fresh_cache(cache_dir: Path) -> Path:
    shutil.rmtree(cache_dir, ignore_errors=True)
    return cache_dir


def bench(size: int, work: Path, repeat: int, tokens: int = TOKENS, quick: bool = False) -> dict:
    run = make_run(size, work, tokens)
    data_mb = sum(p.stat().st_size for p in run.glob("*.jsonl")) / MB
    cache_dir = work / f"cache_{run.parent.name}"
    r: dict = {
        "data_mb": data_mb,
        "cold": [],
        "pooled": [],
        "orjson": [],
        "hog_cold": [],
        "hog_orjson": [],
        "naive": [],
        "reference": [],
        "warm": [],
        "cli": {},
        "quick": quick,
    }
    for path in run.glob("*.jsonl"):  # every phase reads from the page cache, the first cold load too
        with open(path, "rb") as f:
            while f.read(64 * MB):
                pass
    # The naive loader holds ~1.6 GB per GB of logs: past 4 GB it would eat the machine; past 256 MB once.
    naive_rounds = 0 if size > 4096 * MB or quick else (repeat if size <= 256 * MB else 1)
    reference_rounds = 0 if size > REFERENCE_MAX_BYTES or quick else (repeat if size <= 256 * MB else 1)
    for k in range(repeat):
        r["cold"].append(run_phase("cold", run, fresh_cache(cache_dir)))
        r["orjson"].append(run_phase("orjson", run, cache_dir))
        r["hog_cold"].append(run_hogged("cold", run, fresh_cache(cache_dir)))
        r["hog_orjson"].append(run_hogged("orjson", run, cache_dir))
        if not quick:
            r["pooled"].append(run_phase("pooled", run, fresh_cache(cache_dir)))
        if k < naive_rounds:
            r["naive"].append(run_phase("naive", run, cache_dir))
        if k < reference_rounds:
            r["reference"].append(run_phase("reference", run, cache_dir))
    if not any(cache_dir.glob("*")):
        run_phase("cold", run, cache_dir)
    for _ in range(repeat):
        r["warm"].append(run_phase("warm", run, cache_dir))
    r["cli"] = cli_figures(run, cache_dir, max(repeat, 5))
    r["cache_mb"] = sum(p.stat().st_size for p in cache_dir.rglob("*") if p.is_file()) / MB
    if quick:
        return r
    r["queries"] = run_phase("queries", run, cache_dir)
    r["page"] = run_phase("page", run, cache_dir)
    r["refresh"] = run_phase("refresh", run, cache_dir)
    first = sorted(run.glob("*.jsonl"))[0]  # undo the refresh phase's append
    with open(first, "r+b") as f:
        f.truncate(r["refresh"]["original_size"])
    return r


# -- report ------------------------------------------------------------------

# Targets of the "Speed, round two" issue, issue 23 (small_vs_reference) and issue 34 (the cold loads against
# orjson's parse at every size, each command on cached inputs): (figure, limit, "<=" | ">=").
TARGETS = {
    "small_cold_s": (0.45, "<="),
    "small_vs_naive": (5.0, ">="),
    "small_vs_orjson": (1.5, "<="),
    "cli_s": (CLI_TARGET, "<="),
    "small_vs_reference": (5.0, ">="),
    "big_cold_s": (6.0, "<="),
    "big_vs_orjson": (1.0, "<="),
    "big_hog_vs_orjson": (1.2, "<="),
    "big_rss_mb": (1536, "<="),
    "warm_s": (0.1, "<"),
}


BIG_COLD_MAX_MB = 2048  # ``big_cold_s`` is the 1 GB run's time; a 10 GB run is held to its ratios only

# Beside one busy process on two cores, a load of two processes shares ~4/3 of a core's worth where it had
# two, while orjson keeps its core: the load's time grows ~1.5x and orjson's does not, so <= 1.2x beside the
# hog needs <= 0.8x quiet. Its CPU against orjson's says how far that is, with less noise than time.
HOG_CPU_NOTE = "beside the hog ~1.5x the quiet time: <= 1.2x there needs <= 0.8x quiet"


def spread(values: list[float], digits: int = 2) -> str:
    """'median (min–max, n=3)'."""
    if not values:
        return "not run"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f} (n=1)"
    return f"{med:.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f}, n={len(values)})"


def verdict(key: str, value: float) -> str:
    limit, op = TARGETS[key]
    met = value <= limit if op == "<=" else value >= limit if op == ">=" else value < limit
    return f"{op} {limit:g}: {'met' if met else 'missed'}"


def reference_note(r: dict) -> str:
    """The reference loader's time and what it parsed with, or why it was not run."""
    if not r["reference"]:
        return f"not run: past {REFERENCE_MAX_BYTES // MB} MB it would hold ~6x the logs in memory"
    return f"{spread([n['seconds'] for n in r['reference']])}, {r['reference'][0]['parser']}"


def seconds(phases: list[dict]) -> list[float]:
    return [p["seconds"] for p in phases]


def ratios(a: list[dict], b: list[dict]) -> list[float]:
    """Per-round ratios of two phases' seconds."""
    return [x["seconds"] / y["seconds"] for x, y in zip(a, b, strict=False)]


def report(results: dict[str, dict]) -> str:
    rows = []
    for label, r in results.items():
        mb = r["data_mb"]
        small, big = mb < 200, mb > 900
        cold = [c["seconds"] for c in r["cold"]]
        pooled = [c["seconds"] for c in r["pooled"]]
        floor = [o["seconds"] for o in r["orjson"]]
        naive = [n["seconds"] for n in r["naive"]]
        warm = [w["seconds"] for w in r["warm"]]
        vs_orjson = ratios(r["cold"], r["orjson"])
        hog_vs_orjson = ratios(r["hog_cold"], r["hog_orjson"])
        cpu = [c.get("cpu_seconds", math.nan) for c in r["cold"]]
        cpu_vs_orjson = [
            c / max(o.get("cpu_seconds", math.nan), 1e-9) for c, o in zip(cpu, r["orjson"], strict=False)
        ]
        vs_naive = [n / c for n, c in zip(naive, cold, strict=False)]
        reference = [n["seconds"] for n in r["reference"]]
        vs_reference = [n / c for n, c in zip(reference, cold, strict=False)]
        pooled_vs_orjson = [c / o for c, o in zip(pooled, floor, strict=False)]
        total_rss = [c["rss_mb"] + sum(c["worker_rss_mb"]) for c in r["cold"]]
        workers = max(len(c["worker_rss_mb"]) for c in r["cold"])

        def target(
            key: str, values: list[float], small: bool = small, big: bool = big, mb: float = mb
        ) -> str:
            applies = (
                (small and key in ("small_cold_s", "small_vs_naive", "small_vs_reference", "small_vs_orjson"))
                or key in ("cli_s", "warm_s")
                or (big and key in ("big_vs_orjson", "big_hog_vs_orjson", "big_rss_mb"))
                or (big and key == "big_cold_s" and mb < BIG_COLD_MAX_MB)  # seconds for the 1 GB run only
            )
            return verdict(key, statistics.median(values)) if applies and values else ""

        cold_key = "small_cold_s" if small else "big_cold_s"
        orjson_key = "small_vs_orjson" if small else "big_vs_orjson"
        rows += [
            f"## {label}: {mb:.0f} MB of JSONL, {r['cold'][0]['samples']} samples, "
            f"cache {r['cache_mb']:.0f} MB",
            "| figure | median (range, runs) | target |",
            "|---|---|---|",
            f"| cold load, fresh process (s) | {spread(cold)} | {target(cold_key, cold)} |",
            f"| cold load, MB/s | {mb / statistics.median(cold):.0f} | |",
            f"| cold load vs orjson's bare parse (x its time) | {spread(vs_orjson)} "
            f"| {target(orjson_key, vs_orjson)} |",
            f"| orjson bare parse (s) | {spread(floor)} | |",
            f"| beside a CPU hog: cold load (s) | {spread(seconds(r['hog_cold']))} | |",
            f"| beside a CPU hog: orjson bare parse (s) | {spread(seconds(r['hog_orjson']))} | |",
            f"| beside a CPU hog: cold load vs orjson (x its time) | {spread(hog_vs_orjson)} "
            f"| {target('big_hog_vs_orjson', hog_vs_orjson)} |",
            f"| cold load CPU, every process (s) | {spread(cpu)} | |",
            f"| cold load CPU vs orjson's CPU (x) | {spread(cpu_vs_orjson)} | {HOG_CPU_NOTE} |",
            f"| peak RSS, main + {workers} workers or helpers (MB) | {spread(total_rss, 0)} "
            f"| {target('big_rss_mb', total_rss)} |",
            f"| peak RSS, main alone (MB) | {spread([c['rss_mb'] for c in r['cold']], 0)} | |",
            f"| peak private memory (RssAnon, every 10 ms), main alone (MB) "
            f"| {spread([c['private_mb'] for c in r['cold']], 0)} | |",
            f"| warm reopen (s) | {spread(warm, 3)} | {target('warm_s', warm)} |",
        ]
        for name, times in r["cli"].items():
            if name == FLOOR:
                rows.append(
                    f"| the floor under `query`: numpy, pyarrow and DuckDB imported, a DuckDB database made, "
                    f"whole process (s) | {spread(times)} | |"
                )
                continue
            verdict_ = target("cli_s", times)
            rows.append(f"| `rl-board {name}`, whole process, cached (s) | {spread(times)} | {verdict_} |")
        if r["quick"]:
            rows.append("")
            continue
        q, ref, pg = r["queries"], r["refresh"], r["page"]
        rows += [
            f"| cold load, worker pool already warm (s) | {spread(pooled)} | |",
            f"| warm-pool load vs orjson's bare parse (x its time) | {spread(pooled_vs_orjson)} | |",
            f"| cold load vs the reference board's own loader (x faster) | {spread(vs_reference, 1)} "
            f"| {target('small_vs_reference', vs_reference)} |",
            f"| cold load vs the naive loader (x faster) | {spread(vs_naive, 1)} "
            f"| {target('small_vs_naive', vs_naive)} |",
            f"| reference board's loader (s) | {reference_note(r)} | |",
            f"| reference board's loader, peak RSS (MB) "
            f"| {spread([n['rss_mb'] for n in r['reference']], 0)} | |",
            f"| naive loader (s) | {spread(naive)} | |",
            "",
            "| query | ms |",
            "|---|---|",
            f"| one step sorted by KL | {q['step_sorted_by_kl_ms']:.1f} |",
            f"| regex over all responses | {q['regex_all_responses_ms']:.1f} |",
            f"| one sample's token arrays | {q['one_sample_tokens_ms']:.1f} |",
            f"| per-step summary | {q['step_summary_ms']:.1f} |",
            f"| step browser page, full rerun (server side) | {pg['rerun_ms']:.0f} |",
            f"| refresh after appending {ref['appended_mb']:.1f} MB | {ref['seconds'] * 1000:.0f} |",
            "",
        ]
    return "\n".join(rows)


def main() -> int:
    global WAIT_IDLE
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--size", type=parse_size, action="append", help="60MB, 1GB, 10GB (repeatable)")
    parser.add_argument("--big", action="store_true", help="also the 1GB run (minutes)")
    parser.add_argument("--tokens", type=int, default=TOKENS, help=f"tokens per answer (default {TOKENS})")
    parser.add_argument("--quick", action="store_true", help="only the cold loads, orjson and the commands")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timed phase (default 3)")
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=WAIT_IDLE,
        metavar="S",
        help="before each timed phase, wait up to S seconds for idle CPUs (default 60; 0: never)",
    )
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp dir)")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.phase:
        from rl_board import config

        # every phase's process set up as rl-board's own are (commands, workers); an older rl-board's name
        # for it, or none
        numpy_env = getattr(config, "numpy_env", None) or getattr(config, "one_blas_thread", None)
        if numpy_env is not None:
            numpy_env()
        print(json.dumps(PHASES[ns.phase](ns.run, ns.cache)))
        return 0
    WAIT_IDLE = ns.wait_idle
    sizes = ns.size or [60 * MB] + ([1024 * MB] if ns.big else [])
    work = ns.work or Path(tempfile.mkdtemp(prefix="rl-board-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}, load average {load_average()} at the start\n")
    results = {}
    for size in sizes:
        label = f"{size // (1024 * MB)}GB" if size >= 1024 * MB else f"{size // MB}MB"
        label += "" if ns.tokens == TOKENS else f", {ns.tokens} tokens"
        results[label] = bench(size, work, ns.repeat, ns.tokens, ns.quick)
        print(report({label: results[label]}), flush=True)
        print(f"load average {load_average()} after {label}\n", flush=True)
    return 0


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
