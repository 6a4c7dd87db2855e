"""What each real trainer run is: shared by the scripts that run the trainers and the tests that check them.

Kept free of torch / transformers imports so the pytest process can read it.
The tests compute what a correct reader must find from the files the trainer
wrote plus these facts (reward function names and weights are not in TRL's
parquet), never from rl-board code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEED = 7
NUM_GENERATIONS = 4
BATCH = 16  # completions per step: 4 groups of NUM_GENERATIONS
MAX_STEPS = 4
SAVE_STEPS = 2
MAX_COMPLETION_LENGTH = 24


def grpo_arguments() -> dict[str, object]:
    """The ``GRPOConfig`` every TRL run shares (CPU, seeded, a few steps, every step logged with its
    completions); each runner adds where it writes, what it saves and where it reports."""
    return {
        "use_cpu": True,
        "bf16": False,
        "seed": SEED,
        "data_seed": SEED,
        "learning_rate": 1e-3,
        "num_generations": NUM_GENERATIONS,
        "per_device_train_batch_size": BATCH,
        "max_completion_length": MAX_COMPLETION_LENGTH,
        "max_steps": MAX_STEPS,
        "logging_steps": 1,
        "log_completions": True,
        "num_completions_to_print": 0,
        "save_strategy": "steps",
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
    }


# The prompts every TRL run draws from. ``kind`` reaches the reward functions as a dataset column:
# "fixed" prompts get constant rewards (zero-variance groups), "silent" ones no reward at all where a
# reward function honours it (the unscorable rows).
PROMPTS: list[tuple[str, str]] = [
    ("Count the apples in the basket.", "open"),
    ("Write a poem about the sea.", "fixed"),
    ("What is two plus three?", "open"),
    ("Name a colour of the sky.", "silent"),
    ("Spell the word banana.", "open"),
    ("Explain why the wind blows.", "fixed"),
    ("List three numbers.", "open"),
    ("Say something kind.", "open"),
]
SYSTEM = "You are a careful tutor."


@dataclass(frozen=True)
class TrlVariant:
    """One GRPOTrainer run: its reward functions (TRL names them after the function) and options."""

    name: str
    reward_funcs: tuple[str, ...]
    reward_weights: tuple[float, ...] | None = None
    conversational: bool = False
    tensorboard: bool = False
    callback: bool = False
    extra_numeric: tuple[str, ...] = ()
    extra_text: tuple[str, ...] = ()
    notes: str = field(default="", compare=False)

    def weights(self) -> dict[str, float]:
        """Reward function name -> weight, as TRL applies them (1.0 each unless ``reward_weights`` is set)."""
        values = self.reward_weights or (1.0,) * len(self.reward_funcs)
        return dict(zip(self.reward_funcs, values, strict=True))


TRL_VARIANTS: dict[str, TrlVariant] = {
    v.name: v
    for v in [
        TrlVariant(
            "plain",
            ("length_reward", "vowel_reward"),
            tensorboard=True,
            notes="string prompts, two reward functions, TensorBoard too",
        ),
        TrlVariant(
            "conversational",
            ("length_reward", "vowel_reward"),
            conversational=True,
            notes="prompts as system + user messages, chat template applied by TRL",
        ),
        TrlVariant(
            "unscorable",
            ("judge_reward", "format_reward"),
            notes="both functions None for 'silent' prompts and some lengths; one None for others",
        ),
        TrlVariant(
            "log_extra",
            ("length_reward", "counted_vowel_reward"),
            extra_numeric=("char_count",),
            extra_text=("first_word",),
            notes="a reward function logs columns through TRL's log_extra",
        ),
        TrlVariant(
            "reward_weights",
            ("length_reward", "vowel_reward"),
            reward_weights=(2.0, 0.5),
            notes="GRPOConfig(reward_weights=[2.0, 0.5])",
        ),
        TrlVariant(
            "callback",
            ("judge_reward", "counted_vowel_reward"),
            reward_weights=(1.0, 0.5),
            callback=True,
            extra_numeric=("char_count",),
            extra_text=("first_word",),
            notes="rl-board's RLBoardCallback attached; weights, None rows and log_extra at once",
        ),
    ]
}

CALLBACK_DIR = "rl-board"  # RLBoardCallback's folder inside the run's output_dir
LOG_HISTORY = "log_history.json"  # trainer.state.log_history, saved by the runner after training

# How the run tells rl-board its TRL reward weights (they are not in the parquet). The lead may change the
# format: keep it in this one place.
RL_BOARD_TOML = "rl-board.toml"


def rl_board_toml(weights: dict[str, float]) -> str:
    """The ``rl-board.toml`` text that makes TRL's reward: ``[fields]`` ``reward = "a + 0.5*b"`` (the reward
    functions and their weights: TRL does not write ``reward_weights`` to its tables)."""
    terms = " + ".join(name if float(w) == 1.0 else f"{float(w)!r}*{name}" for name, w in weights.items())
    return f'[fields]\nreward = "{terms}"\n'


# TRL's agent loop (``trainers/trl_tools.py``): a run with ``tools=`` and one with ``environment_factory=``,
# each in its own folder of OUT, and the truth the runner checked against what TRL recorded.
TRL_TOOLS_RUNS = ("tools", "environment")
TRL_TOOLS_TRUTH = "truth.json"


# verl ---------------------------------------------------------------------------------------------------
VERL_STEPS = (1, 2, 3)
VERL_PROMPTS_PER_STEP = 3
VERL_N = 4  # responses per prompt
VERL_PROJECT, VERL_EXPERIMENT = "rl_board_real", "grpo_cpu"
VERL_AGENT_EXPERIMENT = (
    "agent_loop"  # trainers/verl_agent_loop.py: its metrics file is {project}/{this}.jsonl
)
