"""`rl-board export RUN OUT`: write a run as a Parquet dataset (``step=N/part-0.parquet``) any engine
reads."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rl_board.cli.common import fields_of, run_arguments, terminal_safe


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export", help="write a run as a Hive-partitioned Parquet dataset (local folder or URL)"
    )
    run_arguments(p, json_help="print what was written as one JSON object")
    p.add_argument(
        "out", metavar="OUT", help="the dataset folder to write (local, or s3://bucket/prefix ...)"
    )
    p.add_argument(
        "--format",
        choices=("parquet",),
        default="parquet",
        help="parquet: step=N/part-0.parquet, token arrays as list columns, one row group per step",
    )
    p.set_defaults(func=run)


def run(ns: argparse.Namespace) -> int:
    import pyarrow as pa

    from rl_board import config
    from rl_board.api import LabelStore, RolloutStore, write_dataset

    store = RolloutStore.open(ns.run_dir, cache_dir=ns.cache_dir, fields=fields_of(ns))
    table = store.arrow_samples()
    if not isinstance(table, pa.Table):  # a dataset read in place: materialise it to add the tags
        table = table.to_table()
    written = write_dataset(store.with_tags(table, LabelStore(config.settings().labels)), ns.out)
    data = {
        "run": store.source,
        "out": written.out,
        "steps": written.steps,
        "samples": written.samples,
        "bytes": written.bytes,
    }
    if ns.json:
        print(json.dumps(data))
    else:
        print(
            terminal_safe(
                f"wrote {written.samples} samples of {written.steps} steps to {written.out} "
                f"({written.bytes / 1e6:.1f} MB of Parquet)"
            ),
            file=sys.stdout,
        )
    return 0
