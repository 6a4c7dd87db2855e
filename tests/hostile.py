"""A corpus of hostile rollout files, each with what a correct loader must make of it.

Every case writes one run folder and says how many samples must survive, which
lines must be reported (by number, with a reason a person understands), how
many lines are blank and how many bytes are a line still being written. Used
by the reliability tests and by the UI tests that show such runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


def ok(step: int | str = 1, **extra: object) -> str:
    record = {"step": step, "prompt": "What is 2+2?", "response": "4", "reward": 1.0}
    record.update(extra)
    return json.dumps(record)


@dataclass
class Case:
    """A hostile input and what must become of it."""

    name: str
    write: Callable[[Path], None]
    samples: int
    bad: dict[int, str] = field(default_factory=dict)  # line -> words the reason must contain
    blank: int = 0
    pending_bytes: int = 0
    file_errors: dict[str, str] = field(default_factory=dict)  # file name -> words of its error
    warnings: int = 0


def _lines(*lines: str, end: str = "\n", tail: str = "") -> Callable[[Path], None]:
    def write(run: Path) -> None:
        (run / "r0.jsonl").write_bytes((end.join(lines) + end + tail).encode("utf-8"))

    return write


def _raw(data: bytes, name: str = "r0.jsonl") -> Callable[[Path], None]:
    def write(run: Path) -> None:
        (run / name).write_bytes(data)

    return write


def _nested(depth: int) -> str:
    return '{"step": 1, "deep": ' + "[" * depth + "]" * depth + "}"


def _nested_objects(depth: int) -> str:
    return '{"step": 1, "deep": ' + '{"a": ' * depth + "1" + "}" * depth + "}"


def _nested_apart(depth: int) -> str:
    """Nesting with an item before each level: no run of brackets to spot."""
    return '{"step": 1, "deep": ' + "[0, " * depth + "0" + "]" * depth + "}"


def _after_good_lines(line: str, good: int = 20) -> Callable[[Path], None]:
    """Short good lines first, so the block takes pyarrow.json's path (the one that crashed)."""
    return _lines(*(ok(i) for i in range(good)), line)


def _sparse_long_line(run: Path) -> None:
    """A 300 MB line (past the 256 MB limit) between good lines; a sparse file, so no disk is used."""
    with open(run / "r0.jsonl", "wb") as f:
        f.write(ok(1).encode() + b"\n" + b'{"step": 2, "response": "')
        f.seek(f.tell() + 300 * 1024 * 1024)
        f.write(b'"}\n' + ok(3).encode() + b"\n")


def _dir_named_jsonl(run: Path) -> None:
    (run / "r0.jsonl").write_text(ok(1) + "\n")
    (run / "folder.jsonl").mkdir()


def _symlink_loop(run: Path) -> None:
    (run / "r0.jsonl").write_text(ok(1) + "\n")
    os.symlink(run / "loop_b.jsonl", run / "loop_a.jsonl")
    os.symlink(run / "loop_a.jsonl", run / "loop_b.jsonl")


def _unreadable(run: Path) -> None:
    (run / "r0.jsonl").write_text(ok(1) + "\n" + ok(2) + "\n")
    secret = run / "r1.jsonl"
    secret.write_text(ok(3) + "\n")
    secret.chmod(0)


def _duplicates(run: Path) -> None:
    (run / "r0.jsonl").write_text(ok(1) + "\n" + ok(2) + "\n")
    (run / "r1.jsonl").write_text(ok(1) + "\n" + ok(2) + "\n")


def _long_response(run: Path) -> None:
    tokens = [f"t{i % 50}" for i in range(100_000)]
    record = json.loads(ok(1))
    record.update(
        response="".join(tokens),
        response_tokens=tokens,
        logprobs=[-0.5] * 100_000,
        ref_logprobs=[-0.6] * 100_000,
    )
    (run / "r0.jsonl").write_text(json.dumps(record) + "\n" + ok(2) + "\n")


def cases() -> list[Case]:
    """Every case of the corpus."""
    return [
        Case("truncated last line", _lines(ok(1), ok(2), tail='{"step": 3, "resp'), 2, pending_bytes=17),
        Case(
            "truncated line in the middle",
            _lines(ok(1), '{"step": 2, "resp', ok(3)),
            2,
            {2: "not valid JSON"},
        ),
        Case(
            "NaN and infinities",
            _lines(
                '{"step": 1, "reward": NaN}',
                '{"step": 2, "reward": Infinity}',
                '{"step": 3, "reward": -Infinity, "logprobs": [NaN, Infinity]}',
            ),
            3,
            warnings=4,
        ),  # no response on each line, and no reward on the first (NaN)
        Case("step as text", _lines(ok("12")), 1),
        Case("step as float", _lines(ok(12.0)), 1),
        Case("step not a number", _lines(ok("abc"), ok(1)), 1, {1: "'step' is not an integer"}),
        Case("step missing", _lines('{"prompt": "p", "reward": 1}', ok(1)), 1, {1: "missing 'step'"}),
        Case("step negative", _lines(ok(-1), ok(0)), 2),
        Case(
            "reward as text",
            _lines(ok(1, reward="high"), ok(2)),
            1,
            {1: "'reward' is a string, not a number"},
        ),
        Case("reward null", _lines(ok(1, reward=None)), 1, warnings=1),
        Case(
            "reward as list", _lines(ok(1, reward=[1.0]), ok(2)), 1, {1: "'reward' is a list, not a number"}
        ),
        Case(
            "strings inside a number list",
            _lines(ok(1, logprobs=[-0.1, "x"]), ok(2)),
            1,
            {1: "'logprobs[1]' is a string, not a number"},
        ),
        Case("nested lists", _lines(ok(1, values=[[0.1], [0.2]]), ok(2)), 1, {1: "'values[0]' is a list"}),
        Case("empty lists", _lines(ok(1, response_tokens=[], logprobs=[], ref_logprobs=[])), 1),
        Case(
            "arrays of different lengths",
            _lines(ok(1, response_tokens=["a", "b", "c"], logprobs=[-1.0], ref_logprobs=[-1.0, -2.0])),
            1,
        ),
        Case("10 MB single line", _lines(ok(1, response="x" * 10_000_000), ok(2)), 2),
        Case("100k tokens in one response", _long_response, 2),
        Case("deeply nested JSON", _lines(_nested(10_000), ok(2)), 1, {1: "nested deeper than 64 levels"}),
        Case(
            "deep nesting after short lines",
            _after_good_lines(_nested(20_000)),
            20,
            {21: "nested deeper than 64 levels"},
        ),
        Case(
            "deep objects after short lines",
            _after_good_lines(_nested_objects(20_000)),
            20,
            {21: "nested deeper than 64 levels"},
        ),
        Case(
            "deep nesting with items between levels",
            _after_good_lines(_nested_apart(5_000)),
            20,
            {21: "nested deeper than 64 levels"},
        ),
        Case(
            "nesting one level too deep",
            _lines(_nested(63), _nested(64), ok(2)),
            2,
            {2: "nested deeper than 64 levels"},
            warnings=2,
        ),  # the deepest readable line has no response or reward
        Case(
            "brackets inside strings", _lines(ok(1, response="[{" * 5_000 + '"\\'), ok(2, prompt="]" * 99)), 2
        ),
        Case(
            "keys named like derived columns",
            _lines(ok(1, kl_mean=9.0, n_tokens="many", reward_gap=None), ok(2, kl_mean=8.0)),
            2,
            warnings=1,
        ),
        Case(
            "keys named like the step browser's columns",
            _lines(ok(1, sample=3, file="a.py", line=7, _line=8), ok(2, line=9)),
            2,
            warnings=1,
        ),
        Case(
            "lone surrogates",
            _raw(
                b'{"step": 1, "response": "bad \\ud83d half", "\\udc00": ["\\ude00"]}\n'
                + ok(2, response="\ud83d\ude00").encode()
                + b"\n"
            ),
            2,
            warnings=2,
        ),
        Case("line longer than the line limit", _sparse_long_line, 2, {2: "longer than the 256 MB limit"}),
        Case(
            "invalid UTF-8 bytes",
            _raw(b'{"step": 1, "response": "caf\xe9 \xff"}\n' + ok(2).encode() + b"\n"),
            2,
            warnings=2,
        ),
        Case("UTF-8 BOM", _raw(b"\xef\xbb\xbf" + ok(1).encode() + b"\n" + ok(2).encode() + b"\n"), 2),
        Case("CRLF line ends", _lines(ok(1), ok(2), end="\r\n"), 2),
        Case("blank lines", _lines(ok(1), "", "   ", ok(2), ""), 2, blank=3),
        Case(
            "binary file named .jsonl",
            _raw(bytes(b for b in range(256) if b != 10) * 4 + b"\n" + ok(1).encode() + b"\n"),
            1,
            {1: "not valid JSON"},
        ),
        Case("empty file", _raw(b""), 0),
        Case("a folder named .jsonl", _dir_named_jsonl, 1, file_errors={"folder.jsonl": "is a folder"}),
        Case(
            "symlink loop",
            _symlink_loop,
            1,
            file_errors={"loop_a.jsonl": "looping symbolic link", "loop_b.jsonl": "looping symbolic link"},
        ),
        Case("file without read permission", _unreadable, 2, file_errors={"r1.jsonl": "Permission denied"}),
        Case("duplicate (step, prompt) across ranks", _duplicates, 4),
        Case(
            "top-level values that are not objects",
            _lines("[1, 2]", "42", '"text"', "null", "true", ok(1)),
            1,
            {
                1: "not a JSON object",
                2: "not a JSON object",
                3: "not a JSON object",
                4: "not a JSON object",
                5: "not a JSON object",
            },
        ),
    ]


def write_case(case: Case, root: Path) -> Path:
    """Write one case into its own run folder under ``root``."""
    run = root / case.name.replace(" ", "_").replace("(", "").replace(")", "").replace(",", "")
    run.mkdir(parents=True)
    case.write(run)
    return run


# -- metric stores: trackers' files as they turn up under a logs root ---------------------------------------

TINY_WANDB = Path(__file__).parent / "data" / "wandb" / "offline-run-20261125_192038-i0l948ip"


@dataclass
class StoreCase:
    """A hostile metric store beside a good TensorBoard run, and what must become of it.

    ``named``: path (relative to the root) -> words its problem or skip reason must hold; ``reads``: runs
    that must still be read with points (the TensorBoard run always is).
    """

    name: str
    write: Callable[[Path], None]
    named: dict[str, str] = field(default_factory=dict)
    reads: tuple[str, ...] = ()


def _wandb_copy(root: Path, cut: int | None = None, flip: int | None = None) -> Path:
    """The real tiny W&B run, copied as from a training machine (its links dangle), optionally cut or
    damaged."""
    run = root / "wandb" / TINY_WANDB.name
    (run / "logs").mkdir(parents=True)
    data = bytearray((TINY_WANDB / "run-i0l948ip.wandb").read_bytes())
    if flip is not None:
        data[flip] ^= 0xFF
    (run / "run-i0l948ip.wandb").write_bytes(bytes(data[:cut]))
    (run / "logs" / "debug-core.log").symlink_to("/home/trainer/.cache/wandb/logs/core-debug.log")
    (root / "wandb" / "latest-run").symlink_to(run.name)
    (root / "wandb" / "debug.log").symlink_to("/home/trainer/project/wandb/latest-run/logs/debug.log")
    return run


def _foreign_sqlite(root: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(root / "browser-history.db")
    conn.executescript("CREATE TABLE visits (url TEXT, at INTEGER); INSERT INTO visits VALUES ('x', 1);")
    conn.commit()
    conn.close()


def _corrupt_sqlite(root: Path) -> None:
    (root / "project.db").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)


def _fifo_db(root: Path) -> None:
    os.mkfifo(root / "project.db")


def _loop(root: Path) -> None:
    (root / "loop-a.log").symlink_to(root / "loop-b.log")
    (root / "loop-b.log").symlink_to(root / "loop-a.log")


def _folder_named_wandb_log(root: Path) -> None:
    (root / "wandb" / "run-20261125_000000-dir00000" / "run-dir00000.wandb").mkdir(parents=True)


def _not_a_wandb_log(root: Path) -> None:
    run = root / "wandb" / "run-20261125_000000-junk0000"
    run.mkdir(parents=True)
    (run / "run-junk0000.wandb").write_bytes(b"PK\x03\x04 a zip file, not a W&B log" * 10)


WANDB_RUN = f"wandb/{TINY_WANDB.name}"


def store_cases() -> list[StoreCase]:
    """Every metric-store case of the corpus."""
    return [
        StoreCase(
            "W&B folder copied off its machine",
            _wandb_copy,
            {"wandb/debug.log": "broken or looping"},
            reads=(WANDB_RUN,),
        ),
        StoreCase(
            "W&B log cut in the middle of a record",
            lambda root: _wandb_copy(root, cut=5000),
            reads=(WANDB_RUN,),
        ),
        StoreCase(
            "W&B log with a damaged chunk",
            lambda root: _wandb_copy(root, flip=3000),
            {WANDB_RUN: "checksum"},
            reads=(WANDB_RUN,),
        ),
        StoreCase(
            "a file named like a W&B log that is not one",
            _not_a_wandb_log,
            {"wandb/run-20261125_000000-junk0000": "not a W&B run log"},
        ),
        StoreCase(
            "a folder named like a W&B log", _folder_named_wandb_log
        ),  # an empty folder: nothing to name
        StoreCase(
            "symlink loop", _loop, {"loop-a.log": "broken or looping", "loop-b.log": "broken or looping"}
        ),
        StoreCase("SQLite file of another program", _foreign_sqlite, {"browser-history.db": "not a log"}),
        StoreCase("corrupt SQLite file", _corrupt_sqlite, {"project.db": "cannot be read"}),
        StoreCase("a pipe named like a database", _fifo_db, {"project.db": "not a log"}),
    ]
