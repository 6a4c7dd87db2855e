"""Failure patterns across a run: near-duplicate answer families (reward-hacking templates), loops, mixed
scripts.

A *template family* is a set of answers that say nearly the same thing in
nearly the same words once their numbers are masked: "Great question! Indeed,
the answer is 12" and "... is 7" are one family. Similarity is MinHash over word
3-grams of each answer's opening (``OPENING`` words), grouped with
locality-sensitive hashing, both from the ``datasketch`` library; near
neighbours chain into one family. A family needs ``MIN_FAMILY`` members and a
share of the run (``MIN_SHARE``); answers too short to tell (fewer than
``MIN_WORDS`` words) belong to none.

Families are found over the whole run (an answer's family is a property of the
run, not of its file), once per state of the run, on request: the Patterns
page, the ``template`` filter, ``rl-board patterns``, SQL's ``patterns``. Loops
(``repetition`` at or above ``LOOP``) and mixed-script answers (two or more
``scripts``) are read from the per-sample signals (``signals.py``).
"""

from __future__ import annotations

import re

import numpy as np

from rl_board.formats import schema as S
from rl_board.lazy import pd

OPENING = 64  # words of an answer's start that its family is judged on
MIN_WORDS = 8
NUM_PERM = 64
SIMILARITY = 0.7  # estimated Jaccard similarity of two answers' 3-gram sets to be neighbours
MIN_FAMILY = 5
MIN_SHARE = 0.005
LOOP = 0.5  # repetition at or above this is a loop
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
TEMPLATE = "template"
FAMILY_COLUMNS = (
    "template",
    "samples",
    "share",
    "first_step",
    "last_step",
    "reward_mean",
    "reward_rest",
    "example",
    "example_step",
    "example_sample",
)


def masked_words(text: str | None) -> list[str]:
    """The opening words of an answer, numbers masked and case folded: what its family is judged on."""
    return _NUMBER.sub("0", (text or "")[: OPENING * 16]).casefold().split()[:OPENING]


def template_ids(responses: list[str | None]) -> np.ndarray:
    """Each answer's family: 1 for the largest family, 2 for the next...; 0 for none."""
    words = [masked_words(t) for t in responses]
    keep = [i for i, w in enumerate(words) if len(w) >= MIN_WORDS]
    if len(keep) < MIN_FAMILY:
        return np.zeros(len(responses), dtype=np.int64)
    # imported here: datasketch pulls in scipy (~0.35 s), which opening or summarising a run never needs
    from datasketch import MinHash, MinHashLSH

    shingles = [
        [" ".join(g).encode() for g in zip(w, w[1:], w[2:], strict=False)] for w in (words[i] for i in keep)
    ]
    hashes = MinHash.bulk(shingles, num_perm=NUM_PERM)
    lsh = MinHashLSH(threshold=SIMILARITY, num_perm=NUM_PERM)
    with lsh.insertion_session() as session:
        for k, h in enumerate(hashes):
            session.insert(k, h, check_duplication=False)
    parent = list(range(len(keep)))
    for k, h in enumerate(hashes):
        for other in lsh.query(h):
            _union(parent, k, other)
    roots = np.array([_find(parent, k) for k in range(len(keep))])
    return _ranked(roots, keep, len(responses))


def _find(parent: list[int], k: int) -> int:
    while parent[k] != k:
        parent[k] = parent[parent[k]]
        k = parent[k]
    return k


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


def _ranked(roots: np.ndarray, keep: list[int], n: int) -> np.ndarray:
    """Families large enough, numbered by size (1 = largest); the rest 0."""
    out = np.zeros(n, dtype=np.int64)
    labels, counts = np.unique(roots, return_counts=True)
    big = (counts >= MIN_FAMILY) & (counts >= MIN_SHARE * n)
    order = labels[big][np.argsort(-counts[big], kind="stable")]
    number = {int(label): rank for rank, label in enumerate(order, start=1)}
    for k, root in enumerate(roots):
        out[keep[k]] = number.get(int(root), 0)
    return out


def families(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per template family, largest first (``FAMILY_COLUMNS``).

    ``samples``: step, sample, template (0 = none), reward, response. The example is the family's answer
    closest to its typical reward; ``reward_rest`` is the mean reward of the answers of no family.
    """
    member = samples[samples[TEMPLATE] > 0]
    if member.empty:
        return pd.DataFrame(columns=list(FAMILY_COLUMNS))
    rest = samples.loc[samples[TEMPLATE] == 0, S.REWARD].mean() if S.REWARD in samples.columns else np.nan
    rows = []
    for template, group in member.groupby(TEMPLATE, sort=True):
        reward = group[S.REWARD].mean() if S.REWARD in group.columns else np.nan
        example = (
            group.iloc[int(np.argmin(np.abs(group[S.REWARD].to_numpy() - reward)))]
            if S.REWARD in group.columns and group[S.REWARD].notna().any()
            else group.iloc[0]
        )
        rows.append(
            (
                f"T{int(template)}",
                len(group),
                len(group) / len(samples),
                int(group[S.STEP].min()),
                int(group[S.STEP].max()),
                reward,
                rest,
                example[S.RESPONSE],
                int(example[S.STEP]),
                int(example["sample"]),
            )
        )
    return pd.DataFrame(rows, columns=list(FAMILY_COLUMNS))


def shares_by_step(samples: pd.DataFrame) -> pd.DataFrame:
    """Per step and family: the share of the step's answers in it (is it spreading?)."""
    table = pd.crosstab(samples[S.STEP], samples[TEMPLATE], normalize="index")
    table = table[[c for c in table.columns if c > 0]]
    table.columns = [f"T{int(c)}" for c in table.columns]
    return table.reset_index()
