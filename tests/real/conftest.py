"""The `real` tier: real trainer code run on CPU, and what it wrote read back with rl-board.

Each trainer runs once per session in a subprocess of this venv's python (torch never loads into
the pytest process), seeded, a few steps, into a ``tmp_path_factory`` folder. The three processes
(TRL, verl's classic dump, verl's v1 dump) start together on first use and each fixture waits for
its own. A run that fails (an import error included) fails the tests that need it, with the end of
its log: nothing here skips. The `real` extra (``pip install -e ".[real]"``, done by tests/run.sh)
holds what they need.

Two more start with them and write the experiment trackers' local stores offline (the `trackers`
extra): ``trl_trackers`` (TRL reporting to W&B, Trackio, MLflow and SwanLab) and ``verl_tracking``
(verl's own ``Tracking`` and generations logger to each backend it has with a local store).

Other trainers, checked on PyPI (Python 3.11, this venv's pins), late 2026:

- prime-rl: not on PyPI (``pip download prime-rl``: no versions). Its rollout writer
  (``prime_rl/monitors/file.py``) only ships in the git repository. Its records come from
  ``verifiers`` (``verifiers==0.4.0`` is on PyPI: ``verifiers/v1/episode.py`` ``Episode.to_record``),
  but that builds records, it writes no file; installing it brings the OpenAI / Anthropic / MCP /
  prime-sandboxes clients for nothing we could call as the trainer does.
- NeMo-RL: ``nemo-rl`` on PyPI is a 7 KB placeholder (0.0.0, only ``package_info.py``); the real
  package is installed from git and needs Megatron / CUDA builds.
- ROLL (alibaba/ROLL): not on PyPI. ``roll`` there is an unrelated web framework (pyrates/roll).
- AReaL: ``areal==1.0.4`` is on PyPI, but pins ``torch>=2.9.1,<2.11`` and
  ``transformers>=5.0,<=5.3`` (this tier needs the local CPU torch 2.13.0, and verl
  ``transformers>=5.5.3``), so pip cannot resolve it with the rest. Installed with ``--no-deps``
  plus colorlog, tenacity, flask, lark, uvloop, numba, einops, aiofiles and openai,
  ``areal.infra.workflow_executor`` imports, but its ``_dump_trajectory`` finds its folder through
  ``areal.utils.stats_logger``, which imports swanlab, trackio, wandb and tensorboardX at module
  level: swanlab pins ``protobuf<7`` and pulls nvidia-ml-py, trackio pulls gradio. Not done: the
  writer would run on a torch / transformers / protobuf AReaL does not support, behind a chain of
  tracking clients it never uses.
- SkyRL: ``skyrl-train`` needs Python 3.12 exactly (and flash-attn, ray==2.51.1); ``skyrl`` 0.4.0
  is not served for 3.11 and ``skyrl==0.3.0`` (which has
  ``skyrl/train/utils/trainer_utils.py`` ``dump_per_dataset_eval_results``) fails at import on
  3.11: pydantic rejects ``typing.TypedDict`` in ``skyrl/tinker/types.py`` ("use
  typing_extensions.TypedDict on Python < 3.12"), reached through ``skyrl.backends``. Its
  transformers pin (<=5.8.0) would also move this venv's.
- open-instruct: not on PyPI.
- slime (THUDM): not on PyPI; ``slime`` there is an unrelated statistics package. Its dumps are
  ``torch.save`` pickles anyway.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 600  # seconds per trainer process; a normal run takes well under a minute


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of this folder is in the `real` tier (``-m real`` / ``-m "not real"``)."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.real)


@dataclass
class Launched:
    """A trainer subprocess writing into ``out``, its output going to ``log``."""

    name: str
    out: Path
    log: Path
    proc: subprocess.Popen
    started: float = field(default_factory=time.perf_counter)
    seconds: float | None = None
    code: int | None = None

    def wait(self) -> Path:
        """Wait for the process; fail (never skip) with the end of its log when it did not succeed."""
        if self.seconds is None:
            try:
                code = self.proc.wait(timeout=max(1.0, TIMEOUT - (time.perf_counter() - self.started)))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                code = None
            self.seconds = time.perf_counter() - self.started
            self.code = code
        if self.code != 0:
            tail = self.log.read_text(encoding="utf-8", errors="replace")[-4000:]
            what = "timed out" if self.code is None else f"exited with {self.code}"
            pytest.fail(
                f"{self.name} {what} after {self.seconds:.0f}s; end of {self.log}:\n{tail}", pytrace=False
            )
        return self.out


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
            "PYTHONHASHSEED": "0",
            "HF_HOME": str(home / "hf"),  # datasets writes its cache here, not into the user's home
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "WANDB_MODE": "disabled",
            "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "CUDA_VISIBLE_DEVICES": "",
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
        }
    )
    return env


def _launch(name: str, module: str, out: Path, args: list[str], home: Path) -> Launched:
    out.mkdir(parents=True, exist_ok=True)
    log = out.parent / f"{name}.log"
    with log.open("w", encoding="utf-8") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(out), *args],
            cwd=REPO,
            env=_env(home),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    return Launched(name, out, log, proc)


@pytest.fixture(scope="session")
def trainer_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Launched]]:
    """Start every trainer process at once (two cores: they overlap their imports); stop leftovers at the
    end."""
    root = tmp_path_factory.mktemp("real")
    home = root / "home"
    launched = {
        "trl": _launch("trl", "tests.real.trainers.trl_grpo", root / "trl", [], home),
        "verl": _launch("verl", "tests.real.trainers.verl_dump", root / "verl_classic", ["classic"], home),
        "verl_v1": _launch("verl_v1", "tests.real.trainers.verl_dump", root / "verl_v1", ["v1"], home),
        "trl_trackers": _launch(
            "trl_trackers", "tests.real.trainers.trl_trackers", root / "trl_trackers", [], home
        ),
        "verl_tracking": _launch(
            "verl_tracking", "tests.real.trainers.verl_tracking", root / "verl_tracking", [], home
        ),
        "verl_agent_loop": _launch(
            "verl_agent_loop", "tests.real.trainers.verl_agent_loop", root / "verl_agent_loop", [], home
        ),
        "trl_tools": _launch("trl_tools", "tests.real.trainers.trl_tools", root / "trl_tools", [], home),
    }
    yield launched
    for run in launched.values():
        if run.proc.poll() is None:
            run.proc.terminate()
            try:
                run.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                run.proc.kill()


@pytest.fixture(scope="session")
def trl_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT`` of ``trainers/trl_grpo.py``: one folder per variant of ``specs.TRL_VARIANTS``."""
    return trainer_runs["trl"].wait()


@pytest.fixture(scope="session")
def verl_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT/verl`` of ``trainers/verl_dump.py classic``: ``rollout/``, ``metrics/``, ``batch_uids.json``."""
    return trainer_runs["verl"].wait() / "verl"


@pytest.fixture(scope="session")
def verl_v1_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT/verl_v1`` of ``trainers/verl_dump.py v1``: ``rollout/`` written by the v1 trainer."""
    return trainer_runs["verl_v1"].wait() / "verl_v1"


@pytest.fixture(scope="session")
def trl_trackers_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT`` of ``trainers/trl_trackers.py``: TRL's ``run/`` (checkpoint, completions Parquet) beside the
    stores of W&B (``wandb/``), Trackio (``trackio/``), MLflow (``mlflow.db``) and SwanLab (``swanlog/``)."""
    return trainer_runs["trl_trackers"].wait()


@pytest.fixture(scope="session")
def verl_tracking_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT`` of ``trainers/verl_tracking.py``: ``truth.json`` and one store per backend verl's ``Tracking``
    wrote (``wandb/``, ``swanlog/``, ``trackio/``, ``mlflow.db`` + ``mlruns/``, ``tensorboard/``,
    ``file/``)."""
    return trainer_runs["verl_tracking"].wait()


@pytest.fixture(scope="session")
def verl_agent_loop_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT`` of ``trainers/verl_agent_loop.py``: verl's ``rollout/{step}.jsonl`` from its real agent loop
    with a scripted policy, ``metrics/`` (its file logger) and ``truth.json`` (each conversation as the script
    meant it)."""
    return trainer_runs["verl_agent_loop"].wait()


@pytest.fixture(scope="session")
def trl_tools_root(trainer_runs: dict[str, Launched]) -> Path:
    """``OUT`` of ``trainers/trl_tools.py``: ``truth.json`` and one folder per ``specs.TRL_TOOLS_RUNS`` (TRL's
    ``completions/`` and ``RLBoardCallback``'s ``rl-board/``), from its agent loop with a scripted policy."""
    return trainer_runs["trl_tools"].wait()


@pytest.fixture(scope="session")
def real_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rl-board cache folder for the tier (each run is its own entry in it)."""
    return tmp_path_factory.mktemp("rl-board-cache")
