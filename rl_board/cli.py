"""The ``rl-board`` command: serve, summary, demo (and scalars, check).

User mistakes (a missing path, a bad flag) end with a one-line message and exit
code 2; only bugs produce tracebacks.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from rl_board.data import cache, demo
from rl_board.data.store import RolloutStore
from rl_board.errors import RLBoardError

APP = Path(__file__).parent / "ui" / "app.py"
PROJECT = Path(__file__).resolve().parent.parent
ALL_INTERFACES = {"0.0.0.0", "::", ""}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rl-board", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_serve(sub)
    _add_summary(sub)
    _add_demo(sub)
    _add_metrics_commands(sub)
    return parser


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the dashboard on one or more log roots")
    p.add_argument("roots", nargs="*", default=["rollout_samples"], metavar="ROOT",
                   help="folders that may be browsed (default: rollout_samples)")
    p.add_argument("--allow-root", action="append", default=[], metavar="DIR",
                   help="another folder that may be browsed (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8901)
    p.add_argument("--cache-dir", default=None, help="cache folder (default $RL_BOARD_CACHE_DIR or ~/.cache/rl-board)")
    p.set_defaults(func=serve_command)


def _add_summary(sub: Any) -> None:
    p = sub.add_parser("summary", help="load a run (through the cache) and summarise it")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--cache-dir", default=None)
    p.set_defaults(func=summary_command)


def _add_demo(sub: Any) -> None:
    p = sub.add_parser("demo", help="write synthetic runs (a PPO run and an eval run)")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--samples", type=int, default=24, help="samples per step")
    p.add_argument("--ranks", type=int, default=2, help="files (data-parallel ranks)")
    p.add_argument("--tokens", type=int, default=48, help="mean response length in tokens")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", choices=["train", "eval"], default=None, help="write just one of the two runs")
    p.set_defaults(func=demo_command)


def _add_metrics_commands(sub: Any) -> None:
    try:
        from rl_board import cli_metrics
    except ImportError:  # the metrics readers are optional until they land
        return
    cli_metrics.add_scalars_parser(sub)
    cli_metrics.add_check_parser(sub)


def serve_command(ns: argparse.Namespace) -> int:
    roots = [Path(r).expanduser() for r in [*ns.roots, *ns.allow_root]]
    missing = [str(r) for r in roots if not r.is_dir()]
    if missing:
        raise RLBoardError(f"not a folder: {', '.join(missing)}")
    if ns.host in ALL_INTERFACES:
        print(f"warning: binding {ns.host or 'all interfaces'} exposes the dashboard to your network; "
              "put it behind a reverse proxy with authentication (see README).", file=sys.stderr)
    env = {**os.environ, "RL_BOARD_ROOTS": os.pathsep.join(str(r.resolve()) for r in roots)}
    if ns.cache_dir:
        env["RL_BOARD_CACHE_DIR"] = str(Path(ns.cache_dir).expanduser().resolve())
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP),
           "--server.address", ns.host, "--server.port", str(ns.port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", "--client.toolbarMode", "minimal",
           "--client.showErrorDetails", "none"]
    if (PROJECT / ".streamlit" / "config.toml").is_file():
        os.chdir(PROJECT)  # Streamlit reads the theme from ./.streamlit/config.toml
    print(f"rl-board: serving {', '.join(str(r) for r in roots)} at http://{ns.host}:{ns.port}", flush=True)
    # Become the server (exec): a signal to this process reaches Streamlit itself.
    os.execve(sys.executable, cmd, env)
    return 0  # not reached


def summary_command(ns: argparse.Namespace) -> int:
    store = RolloutStore.open(ns.run_dir, cache_dir=ns.cache_dir)
    data = summary_dict(store)
    if ns.json:
        print(json.dumps(data, allow_nan=False, default=str))
    else:
        print(_summary_text(data))
    return 0


def summary_dict(store: RolloutStore) -> dict:
    """The documented ``summary --json`` object (NaN becomes null)."""
    report = store.report
    stats = store.step_summary()
    for column in ("reward_mean", "reward_std"):
        if column not in stats.columns:
            stats[column] = float("nan")  # no sample has a reward: the keys stay, as null
    keep = ["step", "samples", "reward_mean", "reward_std"] + [
        c for c in ("kl_mean", "ref_reward_mean", "length_mean") if c in stats.columns
    ]
    return {
        "run": str(store.run_dir),
        "files": [{"name": f.name, "lines": f.lines, "bytes": f.bytes, "samples": f.samples,
                   "bad": f.bad, "error": f.error or None} for f in report.files],
        "samples": store.num_samples,
        "steps": store.steps,
        "samples_per_step": {str(k): v for k, v in store.samples_per_step().items()},
        "fields": store.fields,
        "bad_lines": [{"file": b.file, "line": b.line, "reason": b.reason} for b in report.bad_lines],
        "bad_line_count": report.bad_line_count,
        "length_mismatches": report.length_mismatches,
        "step_stats": [{k: _clean(v) for k, v in row.items()} for row in stats[keep].to_dict("records")],
        "load_seconds": round(report.seconds, 4),
        "from_cache": report.from_cache,
    }


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def _summary_text(data: dict) -> str:
    lines = [
        f"run      {data['run']}",
        f"files    {len(data['files'])}  samples {data['samples']}  steps {len(data['steps'])}"
        f"  bad lines {data['bad_line_count']}",
        f"loaded   {data['load_seconds']:.3f}s ({'cache' if data['from_cache'] else 'parsed logs'})",
        "",
        f"{'step':>8} {'samples':>8} {'reward':>10} {'± std':>8} {'kl':>10}",
    ]
    for row in data["step_stats"]:
        kl = row.get("kl_mean")
        lines.append(f"{row['step']:>8} {row['samples']:>8} {_num(row['reward_mean']):>10} "
                     f"{_num(row['reward_std']):>8} {_num(kl):>10}")
    lines += [f"bad: {b['file']}:{b['line']}: {b['reason']}" for b in data["bad_lines"][:20]]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def demo_command(ns: argparse.Namespace) -> int:
    out = Path(ns.out_dir)
    if ns.only in (None, "train"):
        spec = demo.DemoSpec(steps=ns.steps, samples=ns.samples, ranks=ns.ranks, tokens=ns.tokens, seed=ns.seed)
        for p in demo.write_run(out / "ppo_math", spec):
            print(p)
    if ns.only in (None, "eval"):
        for p in demo.write_eval_run(out / "eval_math", seed=ns.seed + 1):
            print(p)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if getattr(ns, "cache_dir", None):
        os.environ["RL_BOARD_CACHE_DIR"] = ns.cache_dir
    try:
        return int(ns.func(ns) or 0)
    except RLBoardError as exc:
        print(f"rl-board: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


__all__ = ["main", "build_parser", "summary_dict", "cache"]
