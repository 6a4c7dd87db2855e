"""benchmarks/load.py's reference phase (the reference board's loader redone) does the work it claims."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "load.py"


@pytest.fixture(scope="module")
def load():
    spec = importlib.util.spec_from_file_location("bench_load", LOAD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample(step: int, n: int) -> dict:
    logp = [-0.5 - 0.1 * i for i in range(n)]
    return {
        "step": str(step),
        "prompt": "p",
        "response": "r" * (10 + step),
        "ref_response": "rr",
        "reward": 1.0 + step,
        "ref_reward": 0.5,
        "response_tokens": [f"t{i}" for i in range(n)],
        "logprobs": logp,
        "ref_logprobs": [v - 0.2 for v in logp],
        "values": [0.0] * n,
    }


def test_reference_phase_counts_steps_samples_bad_lines_and_the_cap(load, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    lines = [json.dumps(sample(step, 3)) for step in (0, 0, 0, 2)] + ["{not json", json.dumps({"no": "step"})]
    (run / "rank_0.jsonl").write_text("\n".join(lines) + "\n")
    (run / "notes.txt").write_text("not a log\n")  # only *.jsonl files are read, as there

    out = load.phase_reference(str(run), str(tmp_path / "cache"), cap=2)

    assert (out["steps"], out["samples"], out["error_lines"]) == (2, 4, 2)
    assert out["over_cap"] == 1  # the third sample of step 0: counted, and kept all the same as there
    assert out["seconds"] >= 0 and out["parser"]


def test_reference_note_says_why_it_was_not_run(load):
    note = load.reference_note({"reference": []})
    assert note.startswith("not run") and str(load.REFERENCE_MAX_BYTES // load.MB) in note
    ran = load.reference_note({"reference": [{"seconds": 1.0, "parser": "ujson 5.10.0"}]})
    assert ran == "1.00 (n=1), ujson 5.10.0"
