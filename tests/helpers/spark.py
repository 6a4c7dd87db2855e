"""Real PySpark for the `spark` tier: a local session, docs/scale.md's Spark recipes run as written, the CLI.

pyspark is imported inside the functions, never at module level, so a missing `spark` extra fails
the tier's tests with a message (``SparkUnavailable``) instead of breaking collection of the suite.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from rl_board.writer import RolloutWriter

REPO = Path(__file__).resolve().parents[2]
JAVA_MIN = 17  # pyspark 4.x is built for Java 17
README_ROOT = "/data/"  # the recipes (docs/scale.md) use /data/...; a test runs them under its own folder


class SparkUnavailable(RuntimeError):
    """What is missing to start Spark, said so a CI log shows the fix."""


def java_major() -> int:
    """The major version of the ``java`` Spark will start ($JAVA_HOME's, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise SparkUnavailable(
            "the spark tier needs Java 17+ and no `java` was found (JAVA_HOME unset, "
            "none on PATH): tests/run.sh installs Debian's default-jre-headless"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not found:
        raise SparkUnavailable(f"cannot tell the version of {java}: {out.stderr.strip()[:300]}")
    major = int(found[1]) if found[1] != "1" else int(found[2] or 0)  # "1.8.0" is Java 8
    if major < JAVA_MIN:
        raise SparkUnavailable(f"pyspark 4 needs Java {JAVA_MIN}+, {java} is Java {major}")
    return major


# A short-lived JVM on two cores: the quick JIT only and one GC thread (about 3x faster for this tier here).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SESSION_ENV = {
    "SPARK_LOCAL_IP": "127.0.0.1",  # no "hostname resolves to a loopback address" warning
    "PYSPARK_PYTHON": sys.executable,
}  # Python workers (mapInArrow) run this venv


def start_session(scratch: Path) -> Any:
    """A local SparkSession: two cores, 1 GB, no UI, UTC, errors only in the logs, tuned to start quickly.

    Set ``SESSION_ENV`` in the environment first: the JVM and the Python workers read it when they start.
    """
    java_major()
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise SparkUnavailable(
            f"the spark tier needs pyspark ({e}): pip install -e '.[spark]' (tests/run.sh installs it)"
        ) from e
    log4j = scratch / "log4j2.properties"
    log4j.write_text(
        "rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
    )
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("rl-board-tests")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.local.dir", str(scratch / "spark-local"))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.sql.codegen.wholeStage", "false")  # no Java compiled per query: rows are few
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j} {QUICK_JVM}")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "PySpark does not yet fully support pandas >= 3"
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def stop_session(session: Any) -> None:
    """Stop the session and end its JVM. ``SparkSession.stop()`` alone leaves the JVM running (about 400 MB
    here) until Python exits; the JVM ends when its stdin closes (pyspark starts it so, to die with
    Python)."""
    from pyspark import SparkContext

    session.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return
    gateway.shutdown()
    proc.stdin.close()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()  # the JVM this session started, by its own handle
        proc.wait(timeout=60)
    SparkContext._gateway = SparkContext._jvm = None


# -- docs/scale.md's recipes, run as they are written ---------------------------------------------------


def readme_recipe(kind: str) -> str:
    """docs/scale.md's Python block in "Bigger than one machine" that uses ``spark.read.<kind>``."""
    text = (REPO / "docs" / "scale.md").read_text(encoding="utf-8")
    section = text.split("\n## Bigger than one machine\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if f"spark.read.{kind}(" in b]
    if len(blocks) != 1:
        raise AssertionError(
            f"docs/scale.md's 'Bigger than one machine' has {len(blocks)} Python blocks with "
            f"spark.read.{kind}(: expected one"
        )
    return blocks[0]


def run_recipe(kind: str, spark: Any, root: Path) -> dict[str, Any]:
    """Run the docs' ``spark.read.<kind>`` recipe with its ``/data/`` paths under ``root``; its names."""
    code = readme_recipe(kind).replace(README_ROOT, f"{root}/")
    names: dict[str, Any] = {"spark": spark}
    exec(compile(code, f"docs/scale.md (spark.read.{kind} recipe)", "exec"), names)  # the docs are ours
    return names


# -- rl-board as a user runs it ----------------------------------------------------------------------------


def rl_board(*args: str, cache_dir: Path) -> subprocess.CompletedProcess:
    """``python -m rl_board ARGS`` in a subprocess with its own cache folder."""
    env = {**os.environ, "RL_BOARD_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "rl_board", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


# -- a run with what real runs add ---------------------------------------------------------------------


def write_rich_run(folder: Path) -> None:
    """Two RolloutWriter rank files, steps 0-2 of 6 samples: nested extra keys (a dict, a list of lists), a
    key that is always null, chat messages and finish reasons, one NaN reward (step 1) and one NaN
    log-prob (step 2)."""
    for rank in (0, 1):
        with RolloutWriter(folder, rank=rank) as writer:
            for step in range(3):
                for k in range(3):
                    i = 3 * rank + k
                    question, answer = f"What is {i} + {step}?", f"It is {i + step}."
                    writer.write(
                        step,
                        question,
                        answer,
                        math.nan if (step, i) == (1, 4) else 0.25 * i + step,
                        response_tokens=["It", " is", f" {i + step}", "."],
                        logprobs=[-0.5, -0.25, math.nan if (step, i) == (2, 1) else -0.125, -0.0625],
                        ref_logprobs=[-0.625, -0.25, -0.25, -0.125],
                        messages=[
                            {"role": "user", "content": question},
                            {"role": "assistant", "content": answer},
                        ],
                        finish_reason="stop",
                        note=None,
                        meta={"a": i, "tags": ["x"] * i},
                        pairs=[[i, step], [1]],
                    )


# -- the answers, by hand from the logged lines ------------------------------------------------------------


def by_hand(folder: Path) -> dict[int, dict[str, float]]:
    """Per step, from the rank files' lines with ``json.loads`` only (no rl-board code): ``samples``, and the
    means of ``reward`` (NaN rewards left out, as unscored), of ``length`` (tokens in ``response_tokens``)
    and of ``kl`` (k3 = exp(-r) - 1 + r per token, r = logprob - ref logprob, averaged per sample)."""
    rows: dict[int, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            rows.setdefault(record["step"], []).append(record)
    out = {}
    for step, records in sorted(rows.items()):
        rewards = [r["reward"] for r in records if not math.isnan(r["reward"])]
        kls = [
            math.fsum(
                math.expm1(-(a - b)) + (a - b) for a, b in zip(r["logprobs"], r["ref_logprobs"], strict=True)
            )
            / len(r["logprobs"])
            for r in records
        ]
        out[step] = {
            "samples": len(records),
            "reward": math.fsum(rewards) / len(rewards),
            "length": math.fsum(len(r["response_tokens"]) for r in records) / len(records),
            "kl": math.fsum(kls) / len(kls),
        }
    return out
