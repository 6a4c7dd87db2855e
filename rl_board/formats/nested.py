"""NeMo-RL, prime-rl token exports and ROLL's RLVR dumps: text nested in messages or columns.

These trainers log whole batches (NeMo-RL: id-aligned token arrays with prompt
and padding positions; ROLL: one object of column lists), so the adapters dig
the text out and reduce per-token arrays to per-sample scalars instead of
passing them through as canonical token fields, which would be misaligned with
any response text. NeMo-RL's multi-turn samples become turns (``nemo_turns``);
prime-rl's traces and ROLL's agentic dumps have modules of their own.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from rl_board.formats import arrays, nemo_turns, pick, token_rows
from rl_board.formats.base import Format, Probe, Record, first, number

_SEP = pick.SEP


# --------------------------------------------------------------------------- shared helpers


# (shared with prime-rl's and ROLL's agentic adapters, in ``pick``)
_text, _row, _finite, _int, _str, _set = pick.text, pick.row, pick.finite, pick.whole, pick.scalar, pick.put
_chat_prompt = pick.chat_prompt


def _on(mask: list | None) -> list[int]:
    """Positions where a loss mask is set (1 or True): the response tokens."""
    return [i for i, m in enumerate(mask or []) if not isinstance(m, (list, dict)) and number(m) == 1.0]


def _at(values: list | None, positions: list[int]) -> list[float]:
    """The finite values at these positions (null/NaN entries and out-of-range positions skipped)."""
    values = values or []
    found = (_finite(values[i]) for i in positions if i < len(values))
    return [x for x in found if x is not None]


def _aligned(values: list | None, positions: list[int]) -> list[float] | None:
    """Values at these positions, position for position (missing or null -> NaN); None without values."""
    if values is None:
        return None
    out = [_finite(values[i]) if i < len(values) else None for i in positions]
    return [math.nan if x is None else x for x in out]


def _response_tokens(
    sample: Record, ids: list | None, infer: list | None, train: list | None, positions: list[int]
) -> None:
    """Token ids of the response (loss-masked positions) with the inference engine's and the trainer's
    log-probs.

    The engine's log-probs are the ones the samples were drawn with, so they are the run's ``logprobs``;
    the trainer's stay beside them (``train_logprobs``) for the train-vs-inference comparison.
    """
    if ids is None or not positions:
        return
    span = list(range(positions[0], positions[-1] + 1))  # the response, untrained tokens inside it included
    picked = [_int(ids[i]) if i < len(ids) else None for i in span]
    if any(i is None for i in picked):
        return
    sample["response_token_ids"] = picked
    _set(sample, "logprobs", _aligned(infer, span))
    _set(sample, "train_logprobs", _aligned(train, span))
    trained = set(positions)
    if len(trained) < len(span):  # e.g. tool output inside a multi-turn answer: shown, but not trained on
        sample["token_loss_mask"] = [1.0 if i in trained else 0.0 for i in span]


def _token_signals(sample: Record, positions: list[int], **arrays: list | None) -> None:
    """Per-token arrays the trainer logged over the response (advantage, entropy), aligned with its tokens."""
    if "response_token_ids" not in sample:
        return
    span = list(range(positions[0], positions[-1] + 1)) if positions else []
    for name, values in arrays.items():
        aligned = _aligned(values, span)
        if aligned is not None and any(math.isfinite(v) for v in aligned):
            sample[f"token_{name}"] = aligned


def _mean(values: list[float]) -> float | None:
    return arrays.in_order_sum(values) / len(values) if values else None


def _advantage(values: Any, positions: list[int]) -> float | None:
    """One sample's advantage from a per-token array: at a response position, or the first if no mask."""
    row = _row(values)
    if row is None:
        return _finite(values)
    picked = _at(row, positions) if positions else _at(row, [0])
    return picked[0] if picked else None


def _nemo_validation_aside(path: Path, probe: Probe) -> str:
    """NeMo-RL writes validation samples beside the training ones; a run is the training ones."""
    if path.name.startswith("val_data") and any(
        n.startswith("train_data_step") for n in probe.names(path.parent)
    ):
        return "NeMo-RL validation samples beside the training ones: not mixed into the training run"
    return ""


def _unfinished_step_aside(path: Path, probe: Probe) -> str:
    """A token-export step is complete once its STABLE marker exists."""
    return (
        ""
        if probe.exists(path.parent / "STABLE")
        else "step not finished yet (no STABLE marker); read once it is"
    )


# --------------------------------------------------------------------------- NeMo-RL


def _nemo_identify(record: Record) -> bool:
    return isinstance(record, dict) and "content" in record and "rewards" in record


def _nemo_samples(record: Record) -> list[Record]:
    if not isinstance(record, dict):
        return []
    record = _listed(record)
    mask = _row(record.get("token_loss_mask"))
    rows = _plain_rows(record, mask, _NEMO_ROWS)
    if rows is None:
        sample = _nemo_text(record, nemo_turns.generations(mask))
        _nemo_tokens_per_value(sample, record, mask)
        return [sample]
    masked = mask is not None
    sample = _nemo_text(record, arrays.runs(rows["mask"]) if masked else None)
    positions = arrays.on(rows["mask"]) if masked else _NO_POSITIONS
    advantage = _advantage_of(record.get("advantages"), rows["advantages"], positions)
    if not masked:  # without a mask the arrays mix prompt, response and padding positions
        _nemo_tokens(sample, record, advantage)
        return [sample]
    gen, prev = rows["generation_logprobs"], rows["prev_logprobs"]
    means = arrays.mean(arrays.at(gen, positions)), arrays.mean(arrays.at(prev, positions))
    _nemo_tokens(
        sample, record, advantage, (*means, arrays.largest_gap(gen, prev, positions)), rows, positions
    )
    return [sample]


def _nemo_text(record: Record, generations: int | None) -> Record:
    """A sample's fields before its token rows: its turns (``generations``: the runs of its loss mask, when
    it has one), reward and whether it was trained on."""
    sample: Record = {}
    turns = nemo_turns.of_content(record.get("content"), None, generations)
    _set(sample, "prompt", turns.prompt)
    _set(sample, "response", turns.response)
    _set(sample, "messages", turns.messages)
    _set(sample, "reward", number(record.get("rewards")))
    _nemo_kept(sample, record.get("sample_loss_mask"))
    return sample


def _nemo_tokens(
    sample: Record,
    record: Record,
    advantage: float | None,
    reduced: tuple[float | None, float | None, float | None] | None = None,
    rows: dict[str, Any] | None = None,
    positions: np.ndarray | None = None,
) -> None:
    """The token fields of rows of plain numbers, in their order, from one record's or a block's reductions:
    ``reduced`` (the mean generation and trainer log-probs and their largest gap) and the response's rows
    only when the record has a loss mask."""
    _set(sample, "advantage", advantage)
    _nemo_ids(sample, record)
    if reduced is None or rows is None or positions is None:
        return
    for name, value in zip(
        ("gen_logprob_mean", "train_logprob_mean", "logprob_mismatch_max"), reduced, strict=True
    ):
        _set(sample, name, value)
    _response_tokens_of(
        sample, rows, positions, "token_ids", rows["generation_logprobs"], rows["prev_logprobs"]
    )
    _token_signals_of(sample, positions, advantage=rows["advantages"])


_NEMO_ROWS = ("advantages", "generation_logprobs", "prev_logprobs", "token_ids")


def _nemo_many(records: list[Record]) -> list[list[Record]]:
    """``_nemo_samples`` of a block's records, their token rows read and reduced together
    (``token_rows``): the same samples, field for field and in the same order. A block whose rows hold
    anything but plain numbers is read record by record."""
    dicts: list[dict | None] = [r if isinstance(r, dict) else None for r in records]
    masks = [None if r is None else _packed_or_row(r.get("token_loss_mask")) for r in dicts]
    found = {"mask": token_rows.read(masks)}
    for key in _NEMO_ROWS:
        found[key] = token_rows.read(
            [None if r is None else _packed_or_row(r.get(key)) for r in dicts], bools=key != "token_ids"
        )
    rows = {key: read for key, read in found.items() if read is not None}
    if len(rows) < len(found):
        return [_nemo_samples(r) for r in records]
    where = token_rows.positions(rows["mask"])
    advantage = token_rows.first_at(rows["advantages"], where)
    gen, prev = rows["generation_logprobs"], rows["prev_logprobs"]
    reduced = zip(
        token_rows.means(gen, where),
        token_rows.means(prev, where),
        token_rows.largest_gaps(gen, prev, where),
        strict=True,
    )
    out: list[list[Record]] = []
    for i, (record, means_and_gap) in enumerate(zip(dicts, reduced, strict=True)):
        if record is None:
            out.append([])
            continue
        masked = masks[i] is not None
        sample = _nemo_text(record, int(where.runs[i]) if masked else None)
        logged = bool(rows["advantages"].present[i])  # as a row; else a number, or nothing
        first = advantage[i] if logged else _finite(record.get("advantages"))
        if masked:
            own = {key: read.row(i) for key, read in rows.items()}
            _nemo_tokens(sample, record, first, means_and_gap, own, where.of(i))
        else:
            _nemo_tokens(sample, record, first)
        out.append([sample])
    return out


def _packed_or_row(value: Any) -> np.ndarray | list | None:
    """A row a reader packed already (``simd_rows``), else ``_row``."""
    return value if type(value) is np.ndarray else _row(value)


def _listed(record: Any) -> Any:
    """A record whose packed rows are lists again (of floats, in a batch dimension ``_row`` takes off),
    for ``_nemo_samples``, which reads rows value by value when one holds anything but numbers: the same
    samples as from the lists a JSON reader gives."""
    if not isinstance(record, dict) or not any(type(v) is np.ndarray for v in record.values()):
        return record
    return {k: [v.tolist()] if type(v) is np.ndarray else v for k, v in record.items()}


def _plain_rows(record: Record, mask: list | None, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The record's per-token rows as float arrays (``mask`` under "mask"; a row not logged is None), or None
    when one holds anything but numbers: then the record is read value by value (``arrays``)."""
    rows: dict[str, Any] = {}
    for key, row in (("mask", mask), *((k, _row(record.get(k))) for k in keys)):
        if row is None:
            rows[key] = None
            continue
        rows[key] = arrays.plain(row, bools=key != "token_ids")  # a boolean is no token id
        if rows[key] is None:
            return None
    return rows


_NO_POSITIONS = np.zeros(0, np.intp)


def _advantage_of(value: Any, row: np.ndarray | None, positions: np.ndarray) -> float | None:
    """``_advantage`` on a plain row: at the first response position, or the first if no mask."""
    if row is None:
        return _finite(value)
    picked = arrays.at(row, positions if len(positions) else _FIRST)
    return float(picked[0]) if len(picked) else None


_FIRST = np.zeros(1, np.intp)


def _response_tokens_of(
    sample: Record,
    rows: dict[str, Any],
    positions: np.ndarray,
    ids_key: str,
    infer: np.ndarray | None,
    train: np.ndarray | None,
) -> None:
    """``_response_tokens`` on plain rows: the span from the first to the last trained position."""
    ids = rows[ids_key]
    if ids is None or not len(positions):
        return
    start, stop = int(positions[0]), int(positions[-1]) + 1
    picked = arrays.whole(ids, start, stop)
    if picked is None:
        return
    sample["response_token_ids"] = picked
    _set(sample, "logprobs", arrays.aligned(infer, start, stop))
    _set(sample, "train_logprobs", arrays.aligned(train, start, stop))
    if len(positions) < stop - start:
        sample["token_loss_mask"] = (rows["mask"][start:stop] == 1.0).astype(np.float64)


def _token_signals_of(sample: Record, positions: np.ndarray, **rows: np.ndarray | None) -> None:
    """``_token_signals`` on plain rows."""
    if "response_token_ids" not in sample:
        return
    start, stop = (int(positions[0]), int(positions[-1]) + 1) if len(positions) else (0, 0)
    for name, values in rows.items():
        aligned = arrays.aligned(values, start, stop)
        if aligned is not None and np.isfinite(aligned).any():
            sample[f"token_{name}"] = aligned


def _nemo_ids(sample: Record, record: Record) -> None:
    for key in ("idx", "input_lengths"):
        value = first(record.get(key))
        if isinstance(value, (int, float, str)):
            sample[key] = value


def _nemo_tokens_per_value(sample: Record, record: Record, mask: list | None) -> None:
    """The token fields of a record whose rows hold more than plain numbers, read value by value."""
    positions = _on(mask)
    _set(sample, "advantage", _advantage(record.get("advantages"), positions))
    _nemo_ids(sample, record)
    if mask is not None:  # without a mask the arrays mix prompt, response and padding positions
        gen = _at(_row(record.get("generation_logprobs")), positions)
        prev = _at(_row(record.get("prev_logprobs")), positions)
        _set(sample, "gen_logprob_mean", _mean(gen))
        _set(sample, "train_logprob_mean", _mean(prev))
        _set(sample, "logprob_mismatch_max", _mismatch(record, positions))
        _response_tokens(
            sample,
            _row(record.get("token_ids")),
            _row(record.get("generation_logprobs")),
            _row(record.get("prev_logprobs")),
            positions,
        )
        _token_signals(sample, positions, advantage=_row(record.get("advantages")))


def _nemo_kept(sample: Record, sample_mask: Any) -> None:
    """``sample_loss_mask`` 0 takes a sample out of the loss (a prompt too long to train on, or one its
    environment asked to leave out): shown, marked as not trained on."""
    value = _finite(sample_mask)
    if value is None:
        return
    sample["kept"] = value != 0.0
    if value == 0.0:
        sample["dropped_reason"] = (
            "masked from the loss (sample_loss_mask = 0: too long, or left out by its environment)"
        )


def _mismatch(record: Record, positions: list[int]) -> float | None:
    """max |generation − prev| logprob over response positions: inference/training disagreement."""
    gen, prev = _row(record.get("generation_logprobs")), _row(record.get("prev_logprobs"))
    if gen is None or prev is None:
        return None
    pairs = [(_finite(gen[i]), _finite(prev[i])) for i in positions if i < len(gen) and i < len(prev)]
    gaps = [abs(g - p) for g, p in pairs if g is not None and p is not None]
    return max(gaps) if gaps else None


NEMO_RL = Format(
    name="nemo-rl",
    label="NeMo-RL train/val data dump",
    identify=_nemo_identify,
    nested=_nemo_samples,
    nested_many=_nemo_many,
    row_keys=frozenset({"token_loss_mask", *_NEMO_ROWS}),
    field_map=(
        ("content", "prompt"),
        ("content", "response"),
        ("rewards", "reward"),
        ("advantages", "advantage"),
        ("generation_logprobs", "gen_logprob_mean"),
        ("prev_logprobs", "train_logprob_mean"),
    ),
    notes="Step from the file name (train_data_step{N}.jsonl); token arrays reduced to per-sample means.",
    kept=(
        "idx",
        "input_lengths",
        "advantage",
        "gen_logprob_mean",
        "train_logprob_mean",
        "logprob_mismatch_max",
        "kept",
        "dropped_reason",
    ),
    set_aside=_nemo_validation_aside,
)


# --------------------------------------------------------------------------- prime-rl token exports


def _tokens_identify(record: Record) -> bool:
    return isinstance(record, dict) and "token_ids" in record and "loss_mask" in record


def _tokens_samples(record: Record) -> list[Record]:
    """Per-token training arrays (no text, no reward), summarised per sample."""
    if not isinstance(record, dict):
        return []
    mask = _row(record.get("loss_mask"))
    sample: Record = {}
    _set(sample, "step", _int(record.get("step")))  # written by the trainer itself, matches step_N/
    _set(sample, "rank", _int(record.get("rank")))
    _set(sample, "env", _str(record.get("env_name")))
    rows = _plain_rows(record, mask, _TOKEN_ROWS)
    if rows is not None:
        _tokens_vectorised(sample, record, rows, mask is not None)
        return [sample]
    positions = _on(mask)
    if mask is not None:
        sample["n_response_tokens"] = len(positions)
    _set(sample, "advantage", _advantage(record.get("advantages"), positions))
    for key in ("mismatch_kl", "entropy"):
        values = _row(record.get(key))
        name = key if key == "mismatch_kl" else f"{key}_mean"
        _set(sample, name, _mean(_at(values, positions)) if values is not None else _finite(record.get(key)))
    if mask is not None:
        _response_tokens(
            sample,
            _row(record.get("token_ids")),
            _row(record.get("inference_logprobs")),
            _row(record.get("trainer_logprobs")),
            positions,
        )
        _token_signals(
            sample, positions, advantage=_row(record.get("advantages")), entropy=_row(record.get("entropy"))
        )
    return [sample]


_TOKEN_ROWS = ("advantages", "mismatch_kl", "entropy", "token_ids", "inference_logprobs", "trainer_logprobs")


def _tokens_vectorised(sample: Record, record: Record, rows: dict[str, Any], masked: bool) -> None:
    """The token fields of ``_tokens_samples`` on rows of plain numbers, as array operations (same order)."""
    positions = arrays.on(rows["mask"]) if masked else _NO_POSITIONS
    if masked:
        sample["n_response_tokens"] = len(positions)
    _set(sample, "advantage", _advantage_of(record.get("advantages"), rows["advantages"], positions))
    for key in ("mismatch_kl", "entropy"):
        name = key if key == "mismatch_kl" else f"{key}_mean"
        values = rows[key]
        _set(
            sample,
            name,
            arrays.mean(arrays.at(values, positions)) if values is not None else _finite(record.get(key)),
        )
    if masked:
        _response_tokens_of(
            sample, rows, positions, "token_ids", rows["inference_logprobs"], rows["trainer_logprobs"]
        )
        _token_signals_of(sample, positions, advantage=rows["advantages"], entropy=rows["entropy"])


PRIME_RL_TOKENS = Format(
    name="prime-rl-tokens",
    label="prime-rl token export",
    identify=_tokens_identify,
    nested=_tokens_samples,
    field_map=(("advantages", "advantage"), ("loss_mask", "n_response_tokens"), ("entropy", "entropy_mean")),
    notes="Only step dirs with a STABLE marker are complete; non-finite floats are written as null.",
    kept=("advantage", "mismatch_kl", "n_response_tokens", "entropy_mean", "rank", "env"),
    set_aside=_unfinished_step_aside,
)


# --------------------------------------------------------------------------- ROLL


_ROLL_COLUMNS = (
    "global_step",
    "prompt",
    "messages",
    "scores",
    "ground_truth",
    "id",
    "tag",
    "domain",
    "difficulty",
)


def _roll_identify(record: Record) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("responses"), list)
        and isinstance(record.get("scores"), list)
    )


def _roll_prompt(prompt: Any, messages: Any) -> str | None:
    """The prompt column, else the chat in ``messages`` (a JSON string per row)."""
    text = _text(prompt)
    if text is not None or not isinstance(messages, (str, list)):
        return text
    try:
        chat = json.loads(messages) if isinstance(messages, str) else messages
    except (ValueError, RecursionError):  # a deeply nested messages string: no prompt from it
        return None
    return _chat_prompt(chat) if isinstance(chat, list) else None


def _roll_response(value: Any) -> str | None:
    if isinstance(value, list):  # several turns or pieces for one row
        texts = [t for t in (_text(v) for v in value) if t is not None]
        return _SEP.join(texts) if texts else None
    return _text(value)


def _roll_samples(record: Record) -> list[Record]:
    """One sample per row; a column of another length than ``responses`` is ignored."""
    if not isinstance(record, dict) or not isinstance(record.get("responses"), list):
        return []
    n = len(record["responses"])
    cols = {k: record[k] for k in _ROLL_COLUMNS if isinstance(record.get(k), list) and len(record[k]) == n}
    if "global_step" not in cols and _int(record.get("global_step")) is not None:
        cols["global_step"] = [record["global_step"]] * n  # one step for the whole file
    samples = []
    for i, response in enumerate(record["responses"]):
        row = {k: v[i] for k, v in cols.items()}
        sample: Record = {}
        _set(sample, "step", _int(row.get("global_step")))
        _set(sample, "prompt", _roll_prompt(row.get("prompt"), row.get("messages")))
        _set(sample, "response", _roll_response(response))
        _set(sample, "reward", number(row.get("scores")))
        _set(sample, "ground_truth", _str(row.get("ground_truth")))
        _set(sample, "id", _str(row.get("id")))
        _set(sample, "group", sample.get("id"))
        for key in ("tag", "domain"):
            _set(sample, key, _str(row.get(key)))
        level = _finite(row.get("difficulty"))  # a string in ROLL; as a number it sorts and filters
        _set(sample, "difficulty", _str(row.get("difficulty")) if level is None else level)
        samples.append(sample)
    return samples


ROLL = Format(
    name="roll",
    label="ROLL rollout dump",
    identify=_roll_identify,
    nested=_roll_samples,
    columns=True,
    field_map=(
        ("responses", "response"),
        ("scores", "reward"),
        ("global_step", "step"),
        ("prompt", "prompt"),
        ("ground_truth", "ground_truth"),
        ("id", "group"),
    ),
    notes="One JSON object of column lists per file; steps start at 0.",
    kept=("id", "group", "tag", "domain", "difficulty"),
)
