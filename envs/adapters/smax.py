"""SMAX by map name: `marljax.make("smax/3m-v0")`, the allied team against JaxMARL's heuristic enemy.

SMAX (Rutherford et al. 2024) is JaxMARL's JAX re-implementation of the StarCraft Multi-Agent
Challenge (SMAC, Samvelyan et al. 2019). The ids `smax/<map>-v0` are the benchmark's setting as
JaxMARL's own SMAX baselines run it (`HeuristicEnemySMAX` with its defaults):

- the learners are the allied units only (`A = num_allies`, agents `ally_0 ..`); the enemy team
  is JaxMARL's scripted heuristic (it shoots, attacking the closest unit);
- observations are JaxMARL's unit lists, `global_state` is its world state (for centralised
  critics and mixers), `action_mask` is its available actions (dead units may only no-op);
- rewards are JaxMARL's: the enemy team's health lost this step, normalised, plus 1 for a won
  battle; every ally gets the team reward;
- episodes end when a team is dead (terminated) or after 100 steps (truncated; JaxMARL's SMAX
  `max_steps`, the traced `params.max_steps` can shorten it);
- the per-episode metric `"task/win_rate"` is 1 when the episode ends with every enemy dead and
  an ally alive (JaxMARL counts a mutual kill as a draw), so its average over episodes, the
  `task/win_rate` training and `eval/task/win_rate` evaluation metrics, is the win rate that
  SMAX papers report.

Checked against JaxMARL 0.2.0 (the golden trajectory in tests/test_smax.py catches an upstream
change of the dynamics).
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

import jax.numpy as jnp

from marljax.core.registry import EnvSpec
from marljax.envs.adapters.jaxmarl import JAXMARL_VERSION, JaxMARLEnv, from_jaxmarl, smax_scenario

#: SMAX's maps in JaxMARL 0.2.0 (`jaxmarl.environments.smax.smax_env.MAP_NAME_TO_SCENARIO`),
#: listed here so that `marljax envs` and the error messages need not import JaxMARL.
SMAX_MAPS = (
    "2s3z",
    "3s5z",
    "3m",
    "8m",
    "25m",
    "5m_vs_6m",
    "10m_vs_11m",
    "27m_vs_30m",
    "3s5z_vs_3s6z",
    "3s_vs_5z",
    "6h_vs_8z",
    "smacv2_5_units",
    "smacv2_10_units",
    "smacv2_20_units",
)

#: The per-episode metric of a won battle (1) or not (0); averaged, the win rate.
WIN_RATE = "task/win_rate"


#: who plays the enemy team of `make_smax`.
ENEMIES = ("heuristic", "learned")


def make_smax(
    map_name: str = "3m",
    *,
    enemy: str = "heuristic",
    enemy_shoots: bool = True,
    attack_mode: str = "closest",
    won_battle_bonus: float = 1.0,
    see_enemy_actions: bool = True,
    walls_cause_death: bool = True,
    observation_type: str = "unit_list",
    keep_infos: bool = False,
) -> JaxMARLEnv:
    """A SMAX map with JaxMARL's heuristic enemy, as the ids `smax/<map>-v0` build it.

    Args:
      map_name: a SMAX map (`SMAX_MAPS`), e.g. `"3m"`, `"2s3z"`, `"5m_vs_6m"`.
      enemy: `"heuristic"` (JaxMARL's scripted enemy; the agents are the allies) or
        `"learned"`: both teams are agents (JaxMARL's `SMAX`, `A = allies + enemies`, allies
        first; each unit's observation lists its own team first, so one network plays either
        side; each team is rewarded for the health the other loses), and `env.teams` names
        the two teams for a league (`marljax train --league pfsp`). `task/win_rate` stays the
        allies' win rate.
      enemy_shoots: the heuristic enemy attacks (JaxMARL's default True).
      attack_mode: the enemy's target choice, `"closest"` or `"random"`.
      won_battle_bonus: reward for a won battle (JaxMARL 1.0).
      see_enemy_actions: observations include the last actions of visible units.
      walls_cause_death: units that walk off the map die.
      observation_type: JaxMARL's `"unit_list"` (default) or `"conic"`.
      keep_infos: copy JaxMARL's infos into `timestep.extras`.

    Returns:
      The env; `env.default_params()` ends episodes after JaxMARL's 100 steps.
    """
    scenario = smax_scenario(map_name)
    num_allies = int(scenario.num_allies)

    def won(inner: Any) -> dict[str, jnp.ndarray]:
        """A won battle: every enemy dead and an ally alive (allies come first)."""
        state = getattr(inner, "state", inner)  # HeuristicEnemySMAX wraps SMAX's state
        alive = state.unit_alive.astype(bool)
        battle_won = jnp.all(~alive[num_allies:]) & jnp.any(alive[:num_allies])
        return {WIN_RATE: battle_won.astype(jnp.float32)}

    if enemy not in ENEMIES:
        raise ValueError(f"enemy must be one of {list(ENEMIES)}, got {enemy!r}")
    heuristic = {"enemy_shoots": enemy_shoots, "attack_mode": attack_mode}
    if enemy == "learned" and (enemy_shoots is not True or attack_mode != "closest"):
        raise ValueError("enemy_shoots and attack_mode set the heuristic enemy; enemy='learned'")
    env, _ = from_jaxmarl(
        "HeuristicEnemySMAX" if enemy == "heuristic" else "SMAX",
        scenario=scenario,
        **(heuristic if enemy == "heuristic" else {}),
        won_battle_bonus=won_battle_bonus,
        see_enemy_actions=see_enemy_actions,
        walls_cause_death=walls_cause_death,
        observation_type=observation_type,
        keep_infos=keep_infos,
        episode_metrics=won,
    )
    env.map_name = map_name
    if enemy == "learned":
        num_enemies = int(scenario.num_enemies)
        env.teams = (tuple(range(num_allies)), tuple(range(num_allies, num_allies + num_enemies)))
    return env


def smax_spec(name: str) -> EnvSpec:
    """The spec of the id `smax/<map>-v0` (the registry's `smax` family; see the module docstring).

    Raises:
      KeyError: not `<map>-v0`, or an unknown map (lists close matches and every map).
    """
    env_id = f"smax/{name}"
    map_name, _, version = name.rpartition("-")
    if version != "v0" or not map_name:
        map_name = name
        close = difflib.get_close_matches(name, [f"{m}-v0" for m in SMAX_MAPS], n=5, cutoff=0.4)
        hint = f" Did you mean: {', '.join(f'smax/{c}' for c in close)}?" if close else ""
        raise KeyError(f"Unknown environment id {env_id!r}: SMAX ids look like smax/3m-v0.{hint}")
    if map_name not in SMAX_MAPS:
        close = difflib.get_close_matches(map_name, list(SMAX_MAPS), n=5, cutoff=0.4)
        hint = f" Did you mean: {', '.join(f'smax/{c}-v0' for c in close)}?" if close else ""
        raise KeyError(
            f"Unknown environment id {env_id!r}: SMAX has no map {map_name!r}.{hint} "
            f"SMAX's maps: {', '.join(SMAX_MAPS)}."
        )

    def build(**kwargs: Any) -> JaxMARLEnv:
        return make_smax(map_name, **kwargs)

    sig = inspect.signature(make_smax)
    build.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for n, p in sig.parameters.items() if n != "map_name"]
    )
    build.__name__ = f"smax_{map_name}"
    return EnvSpec(
        env_id,
        build,
        description=(
            f"SMAX {map_name}: the allied team against JaxMARL's heuristic enemy, win rate as "
            f"task/win_rate (JaxMARL {JAXMARL_VERSION})"
        ),
    )


def smax_ids() -> list[str]:
    """Every `smax/<map>-v0` id."""
    return [f"smax/{m}-v0" for m in SMAX_MAPS]


__all__ = [
    "ENEMIES",
    "JAXMARL_VERSION",
    "SMAX_MAPS",
    "WIN_RATE",
    "make_smax",
    "smax_ids",
    "smax_spec",
]
