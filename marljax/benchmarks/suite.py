"""The benchmark suite: the tasks MARL papers report on, and a published configuration per cell.

A `Task` is an env id with the score its benchmark reports (SMAX: the win rate; the others: the
episode return). A `Cell` is one algorithm on one task, with the configuration of a named source
(JaxMARL's YAML configs for SMAX / MPE / Overcooked / Hanabi, EPyMARL's for LBF and RWARE),
written as a marljax preset plus overrides, the source's training budget (`budget`) and a
smaller budget that fits a 2-core CPU inside a session (`cpu_budget`). What marljax does not
reproduce of a source is said in `Cell.source` and in `docs/benchmarks.md`.

Budgets count environment steps of all parallel envs together, the unit of
`TrainConfig.total_env_steps` and of JaxMARL's `TOTAL_TIMESTEPS`. EPyMARL's on-policy x-axis
counts the steps of one of its 10 parallel envs, so its "2M" is 20M here.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

#: the algorithms of the suite, in table order: the six of every task, then the
#: sequential-update and sequence-model learners of the SMAX maps
ALGOS = ("ippo", "mappo", "qmix", "vdn", "iql", "pqn_vdn", "happo", "mat")


@dataclasses.dataclass(frozen=True)
class Task:
    """A benchmark task: an env id and the score its benchmark reports.

    Attributes:
      name: the task's name in tables and on the command line (e.g. `"smax/3m"`).
      env: the marljax env id; `env_kwargs`: its options.
      metric: the training metric the benchmark reports: `"task/win_rate"` (SMAX) or
        `"episode_return"` (the undiscounted return, mean over agents).
      label: the score's name in tables (`"win rate"`, `"return"`).
      upstream: the package and version the env was checked against.
      source: the benchmark's paper or project.
    """

    name: str
    env: str
    metric: str
    label: str
    upstream: str
    source: str
    env_kwargs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One algorithm on one task with a named published configuration.

    Attributes:
      task, algo: the task's name and the algorithm (`marljax.agents.ALGORITHMS`).
      preset: the marljax preset the configuration starts from (`marljax.agents.preset`).
      agent, hparams, train: overrides on top of the preset for this task (static config,
        traced hyperparameters, `TrainConfig` fields other than `total_env_steps`).
      budget: the source's training budget in env steps; `cpu_budget`: the stated smaller
        budget of the CPU runs (`marljax benchmark --budget cpu`).
      source: where the configuration comes from and what marljax does not reproduce of it.
      eps_decay: the source's epsilon anneal as a fraction of its run (JaxMARL's `EPS_DECAY`,
        over `EPS_DECAY * NUM_UPDATES`): the cell anneals epsilon over this fraction of the env
        steps it trains (`eps_anneal_steps`), at the published budget and at a smaller one
        alike, as the source's code would at that budget. None: `hparams` or the preset set it.
    """

    task: str
    algo: str
    preset: str | None
    budget: int
    cpu_budget: int
    source: str
    agent: dict = dataclasses.field(default_factory=dict)
    hparams: dict = dataclasses.field(default_factory=dict)
    train: dict = dataclasses.field(default_factory=dict)
    eps_decay: float | None = None

    @property
    def name(self) -> str:
        """`"<task>:<algo>"`, e.g. `"smax/3m:mappo"`."""
        return f"{self.task}:{self.algo}"

    @property
    def dirname(self) -> str:
        """The cell's run directory name inside a benchmark directory."""
        return f"{self.task.replace('/', '_')}__{self.algo}"


_JAXMARL = "JaxMARL 0.2.0"
_SMAX_SRC = "Rutherford et al. 2024 (JaxMARL), SMAX with the heuristic enemy"
TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("smax/3m", "smax/3m-v0", "task/win_rate", "win rate", _JAXMARL, _SMAX_SRC),
        Task("smax/2s3z", "smax/2s3z-v0", "task/win_rate", "win rate", _JAXMARL, _SMAX_SRC),
        Task("smax/6h_vs_8z", "smax/6h_vs_8z-v0", "task/win_rate", "win rate", _JAXMARL, _SMAX_SRC),
        Task(
            "smax/3s5z_vs_3s6z",
            "smax/3s5z_vs_3s6z-v0",
            "task/win_rate",
            "win rate",
            _JAXMARL,
            _SMAX_SRC,
        ),
        Task(
            "lbf/8x8-2p-2f-coop",
            "grid/lbf-8x8-2p-2f-coop-v0",
            "episode_return",
            "return",
            "lbforaging 2.0 rules (parity-tested)",
            "Papoudakis et al. 2021 (EPyMARL), Foraging-8x8-2p-2f-coop",
        ),
        Task(
            "lbf/10x10-3p-3f",
            "grid/lbf-10x10-3p-3f-v0",
            "episode_return",
            "return",
            "lbforaging 2.0 rules (parity-tested)",
            "Papoudakis et al. 2021 (EPyMARL), Foraging-10x10-3p-3f",
        ),
        Task(
            "rware/tiny-2ag",
            "rware/tiny-2ag-v0",
            "episode_return",
            "return",
            "jumanji 1.1.2 RobotWarehouse",
            "Papoudakis et al. 2021 (EPyMARL), rware-tiny-2ag",
        ),
        Task(
            "rware/tiny-4ag",
            "rware/tiny-4ag-v0",
            "episode_return",
            "return",
            "jumanji 1.1.2 RobotWarehouse",
            "Papoudakis et al. 2021 (EPyMARL), rware-tiny-4ag",
        ),
        Task(
            "mpe/simple_spread",
            "particle/simple_spread-v0",
            "episode_return",
            "return",
            "JaxMARL 0.2.0 MPE_simple_spread_v3 (parity-tested)",
            "Lowe et al. 2017; JaxMARL's MPE baselines",
        ),
        Task(
            "overcooked_v2/cramped_room",
            "jaxmarl/overcooked_v2",
            "episode_return",
            "return",
            _JAXMARL,
            "Gessler et al. 2025 (Overcooked-v2) in JaxMARL",
            {"layout": "cramped_room"},
        ),
        Task(
            "hanabi/2p",
            "jaxmarl/hanabi",
            "episode_return",
            "return",
            _JAXMARL,
            "Bard et al. 2020 (Hanabi) in JaxMARL",
        ),
    )
}

# ------------------------------------------------------------------------------ configurations

#: JaxMARL baselines/IPPO/config/ippo_rnn_smax.yaml (LR 0.004, clip 0.05, grad clip 0.25)
_SMAX_IPPO = dict(
    agent=dict(
        parameter_mode="shared", hidden_sizes=(128,), activation="relu", recurrent=True,
        gru_size=128, num_epochs=4, num_minibatches=4,
    ),
    hparams=dict(lr=0.004, clip_eps=0.05, value_clip_eps=0.05, ent_coef=0.01, max_grad_norm=0.25),
    train=dict(num_envs=128, rollout_len=128),
)  # fmt: skip
#: JaxMARL baselines/MAPPO/config/mappo_homogenous_rnn_smax.yaml (LR 0.002, entropy 0)
_SMAX_MAPPO = dict(
    agent=dict(
        parameter_mode="shared", hidden_sizes=(128,), activation="relu", recurrent=True,
        gru_size=128, num_epochs=4, num_minibatches=4,
    ),
    hparams=dict(lr=0.002, clip_eps=0.2, value_clip_eps=0.2, ent_coef=0.0, max_grad_norm=0.25),
    train=dict(num_envs=128, rollout_len=128),
)  # fmt: skip
#: MAT's authors' mat/scripts/train_smac.sh over the `mat` preset: 32 envs x 100 steps, 15 epochs
#: of one minibatch, lr 5e-4, clip 0.05 (1 block, 64-wide tokens, 1 head: mat/config.py)
_SMAX_MAT = dict(
    agent=dict(num_epochs=15, num_minibatches=1),
    hparams=dict(lr=5e-4, clip_eps=0.05, value_clip_eps=0.05),
    train=dict(num_envs=32, rollout_len=100),
)  # fmt: skip


def _resolved(algo: str, preset_name: str, cell: dict, **agent: Any) -> dict[str, dict]:
    """A cell configuration (`cell`: agent / hparams / train overrides of `algo`'s preset
    `preset_name`) written out in full, with `agent` changed: the configuration of another
    algorithm's cell that differs from it only where the two algorithms differ."""
    from marljax.agents import preset

    p = preset(algo, preset_name)
    return dict(
        agent={**p.config, **cell["agent"], **agent},
        hparams={**p.hparams, **cell["hparams"]},
        train=dict(cell["train"]),
    )


#: JaxMARL baselines/QLearning/config/alg/ql_rnn_smax.yaml (valid for iql, vdn and qmix)
_SMAX_Q = dict(
    agent=dict(
        hidden_sizes=(512,), gru_size=512, buffer_size=5000, batch_size=32, sequence_len=100,
        gradient_steps=8, learning_starts=10_000, target_update_interval=80,
        team_reward="mean", hypernet_hidden=256,
    ),
    hparams=dict(lr=5e-5, gamma=0.99, eps_finish=0.05, max_grad_norm=10.0, reward_scale=10.0),
    train=dict(num_envs=16, rollout_len=100),
)  # fmt: skip
#: JaxMARL baselines/QLearning/config/alg/pqn_vdn_rnn_smax.yaml, feed-forward (see source)
_SMAX_PQN = dict(
    agent=dict(hidden_sizes=(512, 512), layer_norm=True, num_epochs=4, num_minibatches=16),
    hparams=dict(lr=2.5e-4, gamma=0.99, td_lambda=0.85, eps_finish=0.01, max_grad_norm=1.0,
                 reward_scale=10.0),
    train=dict(num_envs=128, rollout_len=128),
)  # fmt: skip
#: JaxMARL baselines/IPPO/config/ippo_rnn_overcooked_v2.yaml's network and PPO settings
_OVERCOOKED_PPO = dict(
    agent=dict(hidden_sizes=(128,), activation="relu", recurrent=True, gru_size=128),
    hparams=dict(max_grad_norm=0.25),
    train=dict(num_envs=64, rollout_len=128),
)  # fmt: skip
_OVERCOOKED_PPO_SRC = (
    "JaxMARL ippo_rnn_overcooked_v2.yaml's network and PPO settings (FC 128, GRU 128, lr "
    "2.5e-4, clip 0.2, entropy 0.01, 4 epochs, grad clip 0.25) on cramped_room, with 64 envs x "
    "128 steps in 4 minibatches (its 256 x 256 in 64 would leave 15 updates in the CPU budget) "
    "and without its options of the grounded_coord_simple layout; the CNN torso is not "
    "reproduced: marljax flattens the grid into the MLP."
)
#: JaxMARL baselines/QLearning/config/alg/pqn_vdn_cnn_overcooked.yaml (Overcooked v1)
_OVERCOOKED_PQN = dict(
    agent=dict(hidden_sizes=(512, 512), layer_norm=True, num_epochs=4, num_minibatches=16),
    hparams=dict(lr=7.5e-5, gamma=0.99, td_lambda=0.5, eps_finish=0.2, max_grad_norm=10.0),
    train=dict(num_envs=64, rollout_len=16),
)  # fmt: skip
#: EPyMARL's repository configs for LBF and RWARE, trained on whole episodes (rollout_len)
_EPY_PPO = dict(agent={}, hparams={}, train=dict(num_envs=10))
_EPY_Q = dict(agent=dict(buffer_size=5000), hparams={}, train=dict(num_envs=1))

_GAPS_PPO = (
    " Not reproduced: the linear learning-rate anneal; JaxMARL's IPPO shares one torso between "
    "actor and critic (marljax: two networks); the dense layer before the GRU (marljax: after)."
)
_GAPS_EPY = (
    " EPyMARL's repository defaults, not the paper's per-task tuned values; its reward "
    "standardisation, n-step critic targets and Polyak target critic are not reproduced."
)


def _cells() -> list[Cell]:
    cells: list[Cell] = []
    smax_maps = [t for t in TASKS if t.startswith("smax/")]
    for task in smax_maps:
        ppo_src = "JaxMARL baselines/{}/config/{}_rnn_smax.yaml, 128 envs x 128 steps, 1e7 steps."
        cells += [
            Cell(task, "ippo", "jaxmarl", 10_000_000, 500_000,
                 ppo_src.format("IPPO", "ippo") + _GAPS_PPO, **_SMAX_IPPO),
            Cell(task, "mappo", "jaxmarl", 10_000_000, 500_000,
                 ppo_src.format("MAPPO", "mappo_homogenous") + _GAPS_PPO
                 + " marljax's critic reads the env's world state without agent ids.",
                 **_SMAX_MAPPO),
        ]  # fmt: skip
        for algo in ("qmix", "vdn", "iql"):
            cells.append(
                Cell(task, algo, "jaxmarl", 10_000_000, 500_000,
                     "JaxMARL baselines/QLearning/config/alg/ql_rnn_smax.yaml (16 envs, 100-step "
                     "sequences as the paper's runs, 8 gradient steps per update, target every "
                     "10 updates, reward x10, epsilon over the first 10% of the run). Not "
                     "reproduced: the learning-rate decay.",
                     eps_decay=0.1, **_SMAX_Q)
            )  # fmt: skip
        cells.append(
            Cell(task, "pqn_vdn", "jaxmarl", 10_000_000, 500_000,
                 "JaxMARL pqn_vdn_rnn_smax.yaml as far as marljax's feed-forward PQN goes: no "
                 "GRU, layer norm instead of batch norm, no burn-in window (epsilon over the first "
                 "10% of the run, as its EPS_DECAY).", eps_decay=0.1, **_SMAX_PQN)
        )  # fmt: skip
        cells += [
            Cell(task, "happo", None, 10_000_000, 500_000,
                 "The MAPPO cell's configuration (JaxMARL mappo_homogenous_rnn_smax.yaml) with "
                 "HAPPO's sequential update in a random agent order (Kuba et al. 2022) and one "
                 "actor per agent (HARL's share_param: False), for a side-by-side comparison at "
                 "equal env steps; HARL's own SMAC configs are not used.",
                 **_resolved("mappo", "jaxmarl", _SMAX_MAPPO, parameter_mode="independent")),
            Cell(task, "mat", "mat", 10_000_000, 500_000,
                 "MAT (Wen et al. 2022) PKU-MARL/Multi-Agent-Transformer mat/scripts/"
                 "train_smac.sh: 32 envs x 100 steps, 15 epochs of one minibatch, lr 5e-4, clip "
                 "0.05, 1 block of 64-wide tokens with 1 head, 1e7 steps. Not reproduced: the "
                 "Huber value loss, ValueNorm's debiased EMA, value and policy active masks.",
                 **_SMAX_MAT),
        ]  # fmt: skip
    for task in ("lbf/8x8-2p-2f-coop", "lbf/10x10-3p-3f", "rware/tiny-2ag", "rware/tiny-4ag"):
        episode = 50 if task.startswith("lbf") else 500
        lbf = task.startswith("lbf")
        ppo_budget, q_budget = (20_000_000, 2_000_000) if lbf else (40_000_000, 4_000_000)
        for algo in ("ippo", "mappo"):
            cells.append(
                Cell(task, algo, "epymarl", ppo_budget, 2_000_000,
                     f"EPyMARL src/config/algs/{algo}.yaml (10 envs, whole episodes)." + _GAPS_EPY,
                     agent=_EPY_PPO["agent"], hparams=_EPY_PPO["hparams"],
                     train={**_EPY_PPO["train"], "rollout_len": episode})
            )  # fmt: skip
        for algo in ("qmix", "vdn", "iql"):
            cells.append(
                Cell(task, algo, "epymarl", q_budget, 1_000_000 if lbf else 500_000,
                     f"EPyMARL src/config/algs/{algo}.yaml (one env, buffer 5000 episodes)."
                     + _GAPS_EPY,
                     agent={**_EPY_Q["agent"], "sequence_len": episode},
                     hparams=_EPY_Q["hparams"],
                     train={**_EPY_Q["train"], "rollout_len": episode})
            )  # fmt: skip
        cells.append(
            Cell(task, "pqn_vdn", "jaxmarl", q_budget, 2_000_000,
                 "No published PQN-VDN configuration for this task: marljax's `jaxmarl` preset "
                 "(JaxMARL pqn_vdn_ff_mpe.yaml).")
        )  # fmt: skip
    task = "mpe/simple_spread"
    cells += [
        Cell(task, "ippo", "jaxmarl", 10_000_000, 2_000_000,
             "JaxMARL baselines/IPPO/config/ippo_ff_mpe.yaml (the preset)." + _GAPS_PPO),
        Cell(task, "mappo", "jaxmarl", 10_000_000, 1_000_000,
             "JaxMARL mappo_homogenous_rnn_mpe.yaml (the preset)." + _GAPS_PPO),
    ]  # fmt: skip
    for algo in ("qmix", "vdn", "iql"):
        cells.append(
            Cell(task, algo, "jaxmarl", 10_000_000, 1_000_000,
                 "JaxMARL ql_rnn_mpe.yaml (the preset; 8 envs, 25-step sequences, epsilon over "
                 "the first 10% of the run as its EPS_DECAY).",
                 agent=dict(sequence_len=25), train=dict(num_envs=8, rollout_len=25),
                 eps_decay=0.1)
        )  # fmt: skip
    cells.append(
        Cell(task, "pqn_vdn", "jaxmarl", 10_000_000, 2_000_000,
             "JaxMARL pqn_vdn_ff_mpe.yaml at its current 1e7 steps (epsilon over the first 10% "
             "of the run, as its EPS_DECAY).", eps_decay=0.1)
    )  # fmt: skip
    cells += [
        Cell("overcooked_v2/cramped_room", "ippo", "jaxmarl", 30_000_000, 1_000_000,
             _OVERCOOKED_PPO_SRC, **_OVERCOOKED_PPO),
        Cell("overcooked_v2/cramped_room", "mappo", None, 30_000_000, 1_000_000,
             "The IPPO cell's configuration with MAPPO's centralised critic of the world state "
             "(JaxMARL ships no MAPPO configuration for Overcooked-v2). " + _OVERCOOKED_PPO_SRC,
             **_resolved("ippo", "jaxmarl", _OVERCOOKED_PPO, critic_input="global")),
        Cell("overcooked_v2/cramped_room", "pqn_vdn", "jaxmarl", 5_000_000, 1_000_000,
             "JaxMARL pqn_vdn_cnn_overcooked.yaml, written for Overcooked v1 with reward "
             "shaping (64 envs x 16 steps, 2 x 512 with layer norm, lambda 0.5, epsilon 1 to "
             "0.2 over the first 20% of the run, lr 7.5e-5, 4 epochs x 16 minibatches, 5e6 steps); here on "
             "Overcooked-v2 without shaping, the CNN flattened, no learning-rate decay.",
             eps_decay=0.2, **_OVERCOOKED_PQN),
        Cell("hanabi/2p", "ippo", "jaxmarl", 10_000_000_000, 2_000_000,
             "JaxMARL ippo_ff_hanabi.yaml (1024 envs x 128 steps, 1e10 steps).",
             hparams=dict(lr=5e-4), train=dict(num_envs=1024, rollout_len=128)),
        Cell("hanabi/2p", "mappo", "jaxmarl", 10_000_000_000, 2_000_000,
             "JaxMARL mappo_ff_hanabi.yaml (1024 envs x 128 steps, 1e10 steps).",
             agent=dict(recurrent=False), hparams=dict(lr=5e-4),
             train=dict(num_envs=1024, rollout_len=128)),
    ]  # fmt: skip
    return cells


#: every cell by name (`"<task>:<algo>"`)
CELLS: dict[str, Cell] = {c.name: c for c in _cells()}


def task(name: str) -> Task:
    """The task `name`; an unknown name raises `KeyError` with close matches and every task."""
    if name in TASKS:
        return TASKS[name]
    close = difflib.get_close_matches(name, list(TASKS), n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"Unknown benchmark task {name!r}.{hint} Tasks: {', '.join(TASKS)}.")


def cell(task_name: str, algo: str) -> Cell:
    """The cell of `algo` on `task_name`, or a `KeyError` saying which algorithms the task has.

    An algorithm that does not fit the task's action space (e.g. a continuous-action learner on
    SMAX) has no cell, and the message says so before anything is built.
    """
    t = task(task_name)
    name = f"{t.name}:{algo}"
    if name in CELLS:
        return CELLS[name]
    from marljax.agents import ALGORITHMS

    have = [c.algo for c in CELLS.values() if c.task == t.name]
    if algo not in ALGORITHMS:
        close = difflib.get_close_matches(algo, list(ALGORITHMS), n=3, cutoff=0.4)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"Unknown algorithm {algo!r}.{hint} Algorithms: {', '.join(ALGORITHMS)}.")
    raise KeyError(
        f"No benchmark cell for {algo!r} on {t.name}: its action space or the sources give no "
        f"published configuration for it. Algorithms of {t.name}: {', '.join(have)}."
    )


def _replay_fits_the_budget(c: Cell, steps: int) -> dict[str, Any]:
    """The cell's agent overrides with a replay capacity of at most the sequences `steps` env
    steps collect (`steps / sequence_len`, the rollouts cut into sequences without overlap): a
    buffer that never fills to its capacity samples exactly as a larger one (uniform over the
    stored sequences), so the results are the same, and a CPU budget's cell of EPyMARL's
    5000-episode buffer of 500-step RWARE episodes fits in memory."""
    from marljax.agents import algo_spec, preset

    spec = algo_spec(c.algo)
    agent = {**spec.config_defaults, **(preset(c.algo, c.preset).config if c.preset else {}),
             **c.agent}  # fmt: skip
    fields = {f.name for f in dataclasses.fields(spec.config_cls)}
    if "buffer_size" not in fields or "sequence_len" not in fields:
        return dict(c.agent)
    default = spec.config_cls()
    size = int(agent.get("buffer_size", default.buffer_size))
    length = int(agent.get("sequence_len", default.sequence_len))
    batch = int(agent.get("batch_size", default.batch_size))
    need = max(-(-int(steps) // length), batch)
    return {**c.agent, "buffer_size": min(size, need)} if need < size else dict(c.agent)


def _epsilon_over_the_run(c: Cell, steps: int) -> dict[str, Any]:
    """The cell's hparams with `eps_anneal_steps` = `c.eps_decay` of `steps` where the source
    anneals epsilon over a fraction of its run (`Cell.eps_decay`)."""
    if c.eps_decay is None:
        return dict(c.hparams)
    return {**c.hparams, "eps_anneal_steps": float(round(c.eps_decay * int(steps)))}


def experiment_kwargs(c: Cell, steps: int) -> dict[str, Any]:
    """The `marljax.shell.experiment.Experiment` fields of a cell trained for `steps` env steps
    (its replay capacity capped at what the budget collects, `_replay_fits_the_budget`; its
    epsilon annealed over the source's fraction of the run, `_epsilon_over_the_run`)."""
    t = TASKS[c.task]
    return dict(
        algo=c.algo,
        env=t.env,
        env_kwargs=dict(t.env_kwargs),
        preset=c.preset,
        agent=_replay_fits_the_budget(c, steps),
        hparams=_epsilon_over_the_run(c, steps),
        train={**c.train, "total_env_steps": int(steps)},
        metric=t.metric,
    )


__all__ = ["ALGOS", "CELLS", "TASKS", "Cell", "Task", "cell", "experiment_kwargs", "task"]
