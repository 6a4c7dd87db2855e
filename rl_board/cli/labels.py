"""`rl-board label RUN ...` puts a tag (and a note) on a sample; `rl-board labels RUN` lists a run's
labels."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rl_board.cli.common import fields_of, json_value, run_arguments, terminal_safe


def add_parser(sub: Any) -> None:
    p = sub.add_parser("label", help="tag one sample (and note why); --remove takes the tag off")
    run_arguments(p)
    p.add_argument("--step", type=int, required=True, help="the sample's step")
    p.add_argument("--sample", type=int, required=True, help="the sample's index within its step")
    p.add_argument(
        "--tag", required=True, help='a tag, e.g. "reward hack" (free text, at most 64 characters)'
    )
    p.add_argument("--note", default=None, help="why (free text, at most 4000 characters)")
    p.add_argument("--remove", action="store_true", help="take the tag off the sample")
    p.set_defaults(func=run_label)
    q = sub.add_parser("labels", help="the labels of a run, each on the sample it is on now")
    run_arguments(q)
    q.set_defaults(func=run_labels)


def _opened(ns: argparse.Namespace) -> tuple[Any, Any]:
    from rl_board import config
    from rl_board.api import LabelStore, RolloutStore

    return RolloutStore.open(ns.run_dir, cache_dir=ns.cache_dir, fields=fields_of(ns)), LabelStore(
        config.settings().labels
    )


def run_label(ns: argparse.Namespace) -> int:
    store, labels = _opened(ns)
    key = store.label_key(step=ns.step, index=ns.sample)
    if ns.remove:
        done = labels.remove(run=key["run"], step=key["step"], file=key["file"], line=key["line"], tag=ns.tag)
        data = {"removed": done, "step": ns.step, "sample": ns.sample, "tag": ns.tag}
    else:
        label = labels.put(**key, tag=ns.tag, note=ns.note)
        data = {
            "step": ns.step,
            "sample": ns.sample,
            **{k: v for k, v in label.to_dict().items() if k != "run"},
        }
    print(json.dumps(data) if ns.json else terminal_safe(_said(data, ns.remove)))
    return 0


def _said(data: dict, removed: bool) -> str:
    where = f"step {data['step']} sample {data['sample']}"
    if removed:
        return (
            f"removed {data['tag']!r} from {where}"
            if data["removed"]
            else f"{where} had no tag {data['tag']!r}"
        )
    return f"tagged {where} {data['tag']!r}" + (f": {data['note']}" if data.get("note") else "")


def run_labels(ns: argparse.Namespace) -> int:
    store, labels = _opened(ns)
    frame = store.labels(labels)
    rows = [{k: json_value(v) for k, v in row.items()} for row in frame.to_dict("records")]
    if ns.json:
        print(json.dumps({"run": store.source, "labels": rows}, allow_nan=False))
    elif not rows:
        print(terminal_safe(f"no labels on {store.source}"))
    else:
        for row in rows:
            where = f"step {row['step']} sample {row['sample'] if row['sample'] is not None else '(gone)'}"
            print(terminal_safe(f"{where}  {row['tag']}" + (f"  {row['note']}" if row["note"] else "")))
    return 0


__all__ = ["add_parser", "run_label", "run_labels"]
