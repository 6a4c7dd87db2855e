"""CSV and JSONL export of per-sample tables."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pandas as pd

from rl_board.rollouts.export import export_file_name, to_csv_bytes, to_jsonl_bytes


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": np.array([0, 1], dtype=np.int64),
            "prompt": ['=HYPERLINK("http://x")', "naïve “quotes”, commas\nand newlines"],
            "reward": [0.5, math.nan],
            "kl_mean": [-1.25, math.inf],
            "file": pd.Categorical(["a.jsonl", "b.jsonl"]),
        }
    )


def test_csv_round_trips_and_defuses_formulas():
    rows = list(csv.DictReader(io.StringIO(to_csv_bytes(_frame()).decode("utf-8"))))
    assert rows[0]["prompt"] == '\'=HYPERLINK("http://x")'
    assert rows[1]["prompt"] == "naïve “quotes”, commas\nand newlines"
    assert rows[0]["kl_mean"] == "-1.25"  # numbers are never prefixed
    assert rows[0]["file"] == "a.jsonl"


def test_csv_defuses_every_formula_start():
    frame = pd.DataFrame({"t": ["+1", "-1", "@x", "\tx", "ok", None]})
    out = [r["t"] for r in csv.DictReader(io.StringIO(to_csv_bytes(frame).decode()))]
    assert out[:5] == ["'+1", "'-1", "'@x", "'\tx", "ok"]


def test_jsonl_is_exact_and_nan_is_null():
    lines = to_jsonl_bytes(_frame()).decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0] == {
        "step": 0,
        "prompt": '=HYPERLINK("http://x")',
        "reward": 0.5,
        "kl_mean": -1.25,
        "file": "a.jsonl",
    }
    assert records[1]["reward"] is None and records[1]["kl_mean"] is None
    assert records[1]["prompt"].startswith("naïve")
    assert "naïve" in lines[1]  # non-ASCII kept as is


def test_jsonl_of_empty_frame_is_empty():
    assert to_jsonl_bytes(pd.DataFrame({"a": []})) == b""


def test_jsonl_lists_and_numpy_values():
    frame = pd.DataFrame({"x": [np.array([1.0, np.nan]), [1, 2]], "n": [np.int32(3), None]})
    records = [json.loads(line) for line in to_jsonl_bytes(frame).decode().splitlines()]
    assert records[0]["x"] == [1.0, None] and records[1]["x"] == [1, 2]


def test_export_file_name_is_safe():
    assert export_file_name("ppo_math", 12, "csv") == "ppo_math-step12.csv"
    assert export_file_name("exp/a b", None, ".jsonl") == "exp_a_b-all-steps.jsonl"
    assert export_file_name("../..", 0, "csv") == "run-step0.csv"


def test_csv_defuses_field_names_and_file_names():
    frame = pd.DataFrame(
        {
            '=HYPERLINK("http://evil","X")': ["a"],
            "file": pd.Categorical(["=cmd|' /C calc'!A0.jsonl"]),
            "meta": [{"k": "=1+1"}],
        }
    )
    text = to_csv_bytes(frame).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][0].startswith("'=") and rows[1][1].startswith("'=")
    assert json.loads(rows[1][2]) == {"k": "=1+1"}  # an object cell is JSON text, not a formula


def test_jsonl_writes_lists_and_objects_of_extra_fields():
    frame = pd.DataFrame(
        {
            "meta": [{"k": np.array([1.0, math.nan]), "n": np.int64(3)}],
            "tags": [np.array(["a", "b"], dtype=object)],
        }
    )
    [record] = [json.loads(line) for line in to_jsonl_bytes(frame).decode().splitlines()]
    assert record == {"meta": {"k": [1.0, None], "n": 3}, "tags": ["a", "b"]}
