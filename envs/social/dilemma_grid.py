"""Cleanup and Harvest: sequential social dilemmas on a 2D grid, as pure-function environments.

Both games share one engine (`ssd_engine`): `A` agents (default 5) move on a walled map with
egocentric moves and rotations, see an egocentric window rotated to their orientation, and can
fire a tagging ("zap") beam that removes a hit agent from the map for `params.tag_timeout` steps.
Eating an apple gives `params.apple_reward`.

- **Harvest** (the commons game; Perolat et al. 2017, Hughes et al. 2018): apples regrow with
  a probability that depends on the number of apples nearby, so over-harvesting a patch kills
  it.
- **Cleanup** (Hughes et al. 2018): apples grow only while the river is clean enough; waste
  accumulates in the river and agents must spend time cleaning it with a cleaning beam.

Importing this module registers `social/harvest-v0`, `social/harvest_small-v0`,
`social/cleanup-v0` and `social/cleanup_small-v0`::

    env, params = marljax.make("social/harvest-v0")                     # SSD map, 5 agents
    env, params = marljax.make("social/cleanup_small-v0", view_radius=2, tag_timeout=10)

Layouts: `"large"` (the SSD maps), `"small"` and `"tiny"` (10 x 10, the size of JaxMARL's
`storm_2p` grid), e.g. `marljax.make("social/harvest_small-v0", layout="tiny", num_agents=2,
view_radius=2)`, or any ASCII map.

Random numbers: the per-cell draws (apple regrowth, waste, spawn order) use the engine's keyed
hash `ssd_engine.cell_uniform` (much cheaper on CPU than `jax.random.uniform` per cell); a fixed
key still gives a fixed trajectory, but not the same one as versions before this change.

Static (shape-determining) options are the constructor arguments `layout`, `num_agents`,
`view_radius` and `max_beam_length` (the bound of `params.beam_length`); everything else, the
map arrays included, is a traced field of the params, so a batch of maps of the same shape or a
sweep over regrowth rates is one `vmap`. Bad maps and too
many agents fail in the constructor (at `make` time); `env.validate_params(params)` checks
overridden params on the host (impossible probabilities, thresholds, beam lengths).

Actions (`Discrete(8)` in Harvest, `Discrete(9)` in Cleanup): 0 forward, 1 backward,
2 strafe left, 3 strafe right, 4 turn left, 5 turn right, 6 stay, 7 zap, 8 clean (Cleanup).
Out-of-range actions are clipped into range. While an agent is tagged out only `stay` is legal
(its action is ignored either way) and its observation is all zeros.

Order of events in one step (as in the SSD reference's `MapEnv.step`): moves and turns (with
conflict resolution), apples eaten at the new cells, beams fired from the new cells (hits,
cleaning), tagged-out agents count down and reappear on a free spawn cell, then resources grow
(apples; waste in Cleanup).

Constants and semantics follow the SSD reference implementation (E. Vinitsky et al.,
`sequential_social_dilemma_games`: `harvest.py`, `cleanup.py`, `agent.py`, `map_env.py`), read
for semantics only; the removal on a hit (`tag_timeout`, 25 steps by default) follows Leibo et
al. 2017 / Perolat et al. 2017, which the SSD reference replaces by the -50 penalty alone (set
`tag_timeout=0` for SSD behaviour, or `hit_penalty=0` for removal only).

References: J. Z. Leibo et al., "Multi-agent Reinforcement Learning in Sequential Social
Dilemmas", AAMAS 2017; J. Perolat et al., "A multi-agent reinforcement learning model of
common-pool resource appropriation", NeurIPS 2017; E. Hughes et al., "Inequity aversion improves
cooperation in intertemporal social dilemmas", NeurIPS 2018.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.registry import register
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.social import ssd_engine as engine
from marljax.envs.social.ssd_maps import CLEANUP_LAYOUTS, HARVEST_LAYOUTS

# Observation channels.
WALL, APPLE, WASTE, WATER, OTHERS, SELF, BEAM = range(7)
NUM_CHANNELS = 7
CHANNEL_NAMES = ("wall", "apple", "waste", "water", "other_agents", "self", "beam")


# --------------------------------------------------------------------------------------------
# Params and state.
# --------------------------------------------------------------------------------------------


@struct.dataclass
class DilemmaGridParams(EnvParams):
    """Traced parameters shared by Harvest and Cleanup (build them with `env.default_params()`).

    Attributes:
      max_steps: episode length; the episode is *truncated* after this many steps (the games
        never terminate). 1000 as in the SSD reference.
      walls: `[H, W]` bool wall cells.
      spawn: `[H, W]` bool spawn cells (`P`); agents start and reappear on free ones. A map
        swapped in through params must keep at least `A` spawn cells (checked at make time for
        the constructor's map only).
      apple_cells: `[H, W]` bool cells where apples can grow.
      initial_apples: `[H, W]` bool apples at reset.
      apple_reward: reward for eating an apple (SSD: 1).
      zap_cost: reward paid by an agent for firing the tagging beam (SSD: 1, i.e. reward -1).
      hit_penalty: reward lost by an agent hit by a tagging beam (SSD: 50), once per step.
      beam_length: cells covered by each of a beam's three lanes (SSD: 5); at most the env's
        static `max_beam_length` (the size of the beam computation), longer values act as it.
      tag_timeout: steps a hit agent stays off the map (25, Perolat et al. 2017); 0 disables
        removal.
    """

    max_steps: int = 1000
    walls: Array = None
    spawn: Array = None
    apple_cells: Array = None
    initial_apples: Array = None
    apple_reward: float = 1.0
    zap_cost: float = 1.0
    hit_penalty: float = 50.0
    beam_length: int = 5
    tag_timeout: int = 25


@struct.dataclass
class HarvestParams(DilemmaGridParams):
    """Traced parameters of Harvest (fields of `DilemmaGridParams` plus regrowth).

    Attributes:
      regrowth_probs: `[4]` float32, probability per step that an empty apple cell regrows
        when 0, 1, 2 or >= 3 apples lie in its neighbourhood. Default `[0, 0.005, 0.02, 0.05]`,
        the SSD reference's `SPAWN_PROB`. (Melting Pot's commons_harvest uses
        `[0, 0.0025, 0.005, 0.025]` over a radius-2 neighbourhood.)
      regrowth_radius_sq: cells `(dr, dc)` with `dr**2 + dc**2 <= regrowth_radius_sq` (within
        a 5 x 5 stencil) form the neighbourhood; 2 (the 3 x 3 square) as in the SSD reference
        (`APPLE_RADIUS = 2` compared with the squared distance).
    """

    regrowth_probs: Array = None
    regrowth_radius_sq: float = 2.0


@struct.dataclass
class CleanupParams(DilemmaGridParams):
    """Traced parameters of Cleanup (fields of `DilemmaGridParams` plus river dynamics).

    Defaults are the SSD reference's `cleanup.py` constants.

    Attributes:
      river: `[H, W]` bool cells where waste can accumulate (`H` and `R`).
      stream: `[H, W]` bool water cells where waste never appears (`S`).
      initial_waste: `[H, W]` bool waste at reset (`H`).
      clean_cost: reward paid for firing the cleaning beam (SSD: 0).
      apple_respawn_prob: per-step apple growth probability of an empty apple cell while the
        river is clean (`appleRespawnProbability = 0.05`).
      waste_spawn_prob: per-cell probability behind the one waste cell that may appear per
        step (`wasteSpawnProbability = 0.5`).
      depletion_threshold: waste density (waste cells / river cells) at and above which no
        apples grow and no waste appears (`thresholdDepletion = 0.4`).
      restoration_threshold: waste density at and below which apples grow at the full rate;
        in between the rate falls linearly (`thresholdRestoration = 0.0`).
    """

    river: Array = None
    stream: Array = None
    initial_waste: Array = None
    clean_cost: float = 0.0
    apple_respawn_prob: float = 0.05
    waste_spawn_prob: float = 0.5
    depletion_threshold: float = 0.4
    restoration_threshold: float = 0.0


@struct.dataclass
class DilemmaGridState:
    """State of a Harvest or Cleanup episode."""

    pos: Array  # [A, 2] int32 (row, col); stale while the agent is tagged out
    orient: Array  # [A] int32 0..3 = north, east, south, west
    timeout: Array  # [A] int32 steps left off the map; 0 = on the map
    apples: Array  # [H, W] bool
    waste: Array  # [H, W] bool (always empty in Harvest)
    t: Array  # [] int32 steps taken in this episode
    beams: Array  # [H, W] bool cells covered by a beam (zap or clean) fired in the last step


# --------------------------------------------------------------------------------------------
# Resource dynamics (pure functions, importable on their own).
# --------------------------------------------------------------------------------------------


def harvest_regrowth_probability(apples: Array, params: HarvestParams) -> Array:
    """Per-cell apple regrowth probability of Harvest.

    `p = regrowth_probs[min(n, 3)]` where `n` counts apples at offsets `(dr, dc)` with
    `dr**2 + dc**2 <= regrowth_radius_sq` (`|dr|, |dc| <= 2`). Only empty apple cells without
    an agent regrow; that mask is applied by the env. (Perolat et al. 2017; SSD `harvest.py`.)

    Args:
      apples: `[H, W]` bool apples.
      params: Harvest params.

    Returns:
      `[H, W]` float32 probabilities.
    """
    d = np.arange(-2, 3)
    dist_sq = (d[:, None] ** 2 + d[None, :] ** 2).astype(np.float32)  # [5, 5] static stencil
    inside = jnp.asarray(dist_sq) <= params.regrowth_radius_sq  # [5, 5] traced
    height, width = apples.shape
    padded = jnp.pad(apples, 2)
    # Sum of the 25 shifted copies (a 5 x 5 box filter weighted by `inside`); unrolled at trace
    # time over the static stencil, which is much faster under vmap on CPU than a convolution.
    count = sum(
        (padded[i : i + height, j : j + width] & inside[i, j]).astype(jnp.uint8)
        for i in range(5)
        for j in range(5)
    )
    probs = jnp.asarray(params.regrowth_probs, jnp.float32)
    return jnp.where(
        count == 0,
        probs[0],
        jnp.where(count == 1, probs[1], jnp.where(count == 2, probs[2], probs[3])),
    )


def cleanup_spawn_probabilities(waste: Array, params: CleanupParams) -> tuple[Array, Array]:
    """Apple and waste spawn probabilities of Cleanup for the current pollution.

    With waste density `d = |waste & river| / |river|` (0 without river cells): at or above
    `depletion_threshold` nothing spawns; below it waste spawns with `waste_spawn_prob` and
    apples with `apple_respawn_prob * clip((depletion - d) / (depletion - restoration), 0, 1)`,
    i.e. the full rate at or below `restoration_threshold`, falling linearly to zero at the
    depletion threshold (SSD `cleanup.py`, `compute_probabilities`; Hughes et al. 2018).

    Args:
      waste: `[H, W]` bool waste.
      params: Cleanup params.

    Returns:
      `(apple_prob, waste_prob)`, `[]` float32 each.
    """
    area = jnp.sum(params.river)
    density = jnp.sum(waste & params.river) / jnp.maximum(area, 1)
    span = jnp.maximum(params.depletion_threshold - params.restoration_threshold, 1e-8)
    frac = jnp.clip((params.depletion_threshold - density) / span, 0.0, 1.0)
    depleted = density >= params.depletion_threshold
    apple_prob = jnp.where(depleted, 0.0, params.apple_respawn_prob * frac)
    waste_prob = jnp.where(depleted, 0.0, params.waste_spawn_prob)
    return apple_prob.astype(jnp.float32), waste_prob.astype(jnp.float32)


# --------------------------------------------------------------------------------------------
# The environments.
# --------------------------------------------------------------------------------------------


class DilemmaGrid(Environment[DilemmaGridState, DilemmaGridParams]):
    """Base class of Harvest and Cleanup: the shared step on top of `ssd_engine`.

    Observation of agent `i` (`[V, V, 7]` uint8, `V = 2 * view_radius + 1`): its egocentric
    window centred on itself and rotated so that it faces up (row 0 is farthest ahead), with
    channels wall (also off the map), apple, waste, water (clean river or stream), other agents
    on the map, self (the centre), beam (cells covered by a tagging or cleaning beam fired in
    the last step, as the SSD reference draws beams on the map for one frame). All zeros while
    tagged out.

    Global state (`[H, W, 5 + A]` uint8): the wall, apple, waste, water and beam planes of the
    whole map, then one plane per agent marking its cell (empty while tagged out).

    `extras["tagged_out"]` (`[A]` bool) marks the agents off the map after every reset and step.
    Subclasses add the resource dynamics (`_regrow`) and extra actions (`_extra_actions`).

    Args:
      layout: a name of `layouts` or an ASCII map (list of strings); sets the grid shape.
      num_agents: number of agents `A`.
      view_radius: cells seen in each direction (static: it sets the observation shape).
      max_beam_length: static bound on `params.beam_length` (beams are computed over this many
        cells per lane; default 5, the SSD beam length).
    """

    layouts: dict[str, Sequence[str]] = {}
    map_chars: str = "@P "
    num_actions: int = 8
    game: str = "dilemma_grid"

    def __init__(
        self,
        layout: str | Sequence[str] = "large",
        num_agents: int = 5,
        view_radius: int = 7,
        max_beam_length: int = 5,
    ):
        if isinstance(layout, str):
            if layout not in self.layouts:
                raise ValueError(
                    f"{self.game}: unknown layout {layout!r}; known layouts are "
                    f"{sorted(self.layouts)}, or pass an ASCII map (a list of strings)"
                )
            name, rows = f"{self.game} layout {layout!r}", self.layouts[layout]
        else:
            name, rows = f"{self.game} ASCII map", layout
        for arg, value, low in (
            ("num_agents", num_agents, 1),
            ("view_radius", view_radius, 1),
            ("max_beam_length", max_beam_length, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{self.game}: {arg} must be an integer >= {low}, got {value!r}")
        self._masks = engine.parse_ascii_map(list(rows), self.map_chars, name)
        num_spawn = int(self._masks["P"].sum())
        if num_agents > num_spawn:
            raise ValueError(
                f"{name}: {num_agents} agents but only {num_spawn} spawn points 'P'; use at most "
                f"{num_spawn} agents or add spawn points"
            )
        self.num_agents = int(num_agents)
        self.view_radius = int(view_radius)
        self.grid_shape = self._masks["P"].shape
        self.max_beam_length = int(max_beam_length)
        self._layout = layout if isinstance(layout, str) else "custom"

    def __repr__(self) -> str:
        return (
            f"{self.name}(layout={self._layout!r}, grid={self.grid_shape}, "
            f"num_agents={self.num_agents}, view_radius={self.view_radius})"
        )

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Rewards and tagging rules that may vary (see `Environment.param_ranges`)."""
        return {
            "apple_reward": (0.0, 2.0),
            "zap_cost": (0.0, 2.0),
            "hit_penalty": (0.0, 50.0),
            "beam_length": (0, self.max_beam_length),
            "tag_timeout": (0, 30),
        }

    def validate_params(self, params: DilemmaGridParams) -> None:
        """Check concrete params on the host (not traceable); raise `ValueError` if impossible.

        Checks the map arrays' shapes, at least `A` spawn cells, `0 <= beam_length <=
        max_beam_length`, `tag_timeout >= 0`, `max_steps >= 1` and that every probability lies
        in `[0, 1]` (Cleanup: also `restoration_threshold < depletion_threshold`). Params
        batched over leading axes (a vmapped family) are checked element by element.

        Args:
          params: this env's params (e.g. from `marljax.make`).

        Raises:
          ValueError: naming the offending field.
        """
        problems = []
        for name in ("walls", "spawn", "apple_cells", "initial_apples"):
            shape = np.shape(getattr(params, name))[-2:]
            if tuple(shape) != tuple(self.grid_shape):
                problems.append(f"{name} has grid shape {shape}, expected {self.grid_shape}")
        spawn = np.asarray(params.spawn).reshape(-1, *self.grid_shape).sum(axis=(1, 2))
        if (spawn < self.num_agents).any():
            problems.append(f"spawn has {int(spawn.min())} cells for {self.num_agents} agents")
        beam = np.asarray(params.beam_length)
        if (beam < 0).any() or (beam > self.max_beam_length).any():
            problems.append(
                f"beam_length must lie in [0, max_beam_length={self.max_beam_length}] (a static "
                f"constructor argument), got {beam.tolist()}"
            )
        if (np.asarray(params.tag_timeout) < 0).any():
            problems.append("tag_timeout must be >= 0")
        if (np.asarray(params.max_steps) < 1).any():
            problems.append("max_steps must be >= 1")
        for name, value in self._probabilities(params).items():
            v = np.asarray(value)
            if (v < 0).any() or (v > 1).any():
                problems.append(f"{name} must lie in [0, 1], got {v.tolist()}")
        problems += self._extra_problems(params)
        if problems:
            raise ValueError(f"{self.game}: impossible params: " + "; ".join(problems))

    def _probabilities(self, params) -> dict:
        return {}

    def _extra_problems(self, params) -> list[str]:
        return []

    # -------------------------------------------------------------- hooks of the games

    def _base_params(self) -> dict:
        m = self._masks
        return {
            "walls": jnp.asarray(m["@"]),
            "spawn": jnp.asarray(m["P"]),
        }

    def _initial_waste(self, params: DilemmaGridParams) -> Array:
        return jnp.zeros(self.grid_shape, bool)

    def _water(self, params: DilemmaGridParams) -> Array:
        return jnp.zeros(self.grid_shape, bool)

    def _extra_actions(self, state, actions, pos, orient, active, occupant, params):
        """Game-specific beams: returns `(waste, reward, covered cells)`; none by default."""
        none = jnp.zeros(self.grid_shape, bool)
        return state.waste, jnp.zeros((self.num_agents,), jnp.float32), none

    def _regrow(self, key, apples, waste, occupied, params):
        raise NotImplementedError

    # -------------------------------------------------------------- contract

    def reset(self, key: PRNGKey, params: DilemmaGridParams) -> tuple[DilemmaGridState, TimeStep]:
        key_pos, key_orient = jax.random.split(key)
        everyone = jnp.ones((self.num_agents,), bool)
        pos, _ = engine.place_agents(
            key_pos, everyone, params.spawn, jnp.zeros(self.grid_shape, bool)
        )
        state = DilemmaGridState(
            pos=pos,
            orient=jax.random.randint(key_orient, (self.num_agents,), 0, 4, jnp.int32),
            timeout=jnp.zeros((self.num_agents,), jnp.int32),
            apples=jnp.asarray(params.initial_apples, bool),
            waste=self._initial_waste(params),
            t=jnp.int32(0),
            beams=jnp.zeros(self.grid_shape, bool),
        )
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        return state, self._timestep(state, reward, jnp.array(False), params)

    def step(
        self, key: PRNGKey, state: DilemmaGridState, actions: Array, params: DilemmaGridParams
    ) -> tuple[DilemmaGridState, TimeStep]:
        key_move, key_place, key_orient, key_grow = jax.random.split(key, 4)
        shape = self.grid_shape
        actions = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, self.num_actions - 1)
        active = state.timeout == 0

        # 1. Moves and turns.
        pos = engine.move_agents(key_move, state.pos, state.orient, active, actions, params.walls)
        orient = engine.rotate(state.orient, actions, active)

        # 2. Apples under the agents are eaten.
        eat = active & state.apples[pos[:, 0], pos[:, 1]]
        rows = jnp.where(active, pos[:, 0], shape[0])
        apples = state.apples.at[rows, pos[:, 1]].set(False, mode="drop")
        reward = params.apple_reward * eat.astype(jnp.float32)

        # 3. Beams, fired from the new cells.
        occupant = engine.occupancy(pos, active, shape)
        zapping = active & (actions == engine.ZAP)
        hit, zapped = engine.beam(
            pos, orient, zapping, params.beam_length, params.walls, occupant,
            jnp.zeros(shape, bool), self.max_beam_length,
        )  # fmt: skip
        reward = reward - params.zap_cost * zapping - params.hit_penalty * hit
        waste, extra_reward, cleaned = self._extra_actions(
            state, actions, pos, orient, active, occupant, params
        )
        reward = reward + extra_reward

        # 4. Tagged-out agents count down; those done reappear on free spawn cells.
        was_out = ~active
        timeout = jnp.where(was_out, state.timeout - 1, 0)
        back = was_out & (timeout <= 0)
        removed = hit & (params.tag_timeout > 0)
        staying = active & ~removed
        taken = engine.occupancy(pos, staying, shape) >= 0
        new_pos, placed = engine.place_agents(key_place, back, params.spawn, taken)
        pos = jnp.where(placed[:, None], new_pos, pos)
        new_orient = jax.random.randint(key_orient, (self.num_agents,), 0, 4, jnp.int32)
        orient = jnp.where(placed, new_orient, orient)
        timeout = jnp.where(back & ~placed, 1, timeout)  # no free spawn cell: retry next step
        timeout = jnp.where(removed, params.tag_timeout, timeout).astype(jnp.int32)

        # 5. Resources grow.
        on_map = timeout == 0
        occupied = engine.occupancy(pos, on_map, shape) >= 0
        apples, waste = self._regrow(key_grow, apples, waste, occupied, params)

        t = state.t + 1
        state = DilemmaGridState(
            pos=pos,
            orient=orient,
            timeout=timeout,
            apples=apples,
            waste=waste,
            t=t,
            beams=zapped | cleaned,
        )
        return state, self._timestep(
            state, reward.astype(jnp.float32), t >= params.max_steps, params
        )

    def _timestep(
        self, state: DilemmaGridState, reward: Array, truncated: Array, params
    ) -> TimeStep:
        A, (H, W) = self.num_agents, self.grid_shape
        active = state.timeout == 0
        water = self._water(params) & ~state.waste
        r_idx = jnp.arange(H, dtype=jnp.int32)[:, None, None]
        c_idx = jnp.arange(W, dtype=jnp.int32)[None, :, None]
        agent_planes = ((r_idx == state.pos[:, 0]) & (c_idx == state.pos[:, 1]) & active).astype(
            jnp.uint8
        )  # [H, W, A]
        planes = jnp.stack(
            [params.walls, state.apples, state.waste, water, state.beams], axis=-1
        ).astype(jnp.uint8)  # [H, W, 5]: wall, apple, waste, water, beam
        # The observation channels packed one bit each into a uint8 grid (bit c = channel c;
        # the self channel is empty on the map), windowed, then unpacked: one V x V slice per
        # agent instead of V x V x 7 scattered reads.
        occupied = engine.occupancy(state.pos, active, (H, W)) >= 0
        empty = jnp.zeros((H, W), bool)
        codes = engine.pack_planes(
            [params.walls, state.apples, state.waste, water, occupied, empty, state.beams]
        )
        views = engine.egocentric_windows(
            codes, state.pos, state.orient, self.view_radius, outside=1 << WALL
        )  # [A, V, V]
        # The agents bit at the centre is the agent itself: move it to the self bit.
        r = self.view_radius
        centre = (views[:, r, r] & jnp.uint8(~(1 << OTHERS) & 0xFF)) | jnp.uint8(1 << SELF)
        views = views.at[:, r, r].set(centre)
        views = jnp.where(active[:, None, None], views, jnp.uint8(0))
        obs = engine.unpack_bits(views, NUM_CHANNELS)
        mask = jnp.where(
            active[:, None],
            jnp.ones((A, self.num_actions), bool),
            jnp.arange(self.num_actions) == engine.STAY,
        )
        return TimeStep(
            obs=obs,
            reward=reward,
            terminated=jnp.array(False),
            truncated=jnp.asarray(truncated, bool),
            action_mask=mask,
            global_state=jnp.concatenate([planes, agent_planes], axis=-1),
            extras={"tagged_out": ~active},
        )

    def observation_space(self, params: DilemmaGridParams) -> spaces.Box:
        v = 2 * self.view_radius + 1
        return spaces.Box(0, 1, (v, v, NUM_CHANNELS), jnp.uint8, layout="hwc")

    def action_space(self, params: DilemmaGridParams) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def global_state_space(self, params: DilemmaGridParams) -> spaces.Box:
        H, W = self.grid_shape
        return spaces.Box(0, 1, (H, W, 5 + self.num_agents), jnp.uint8)


class Harvest(DilemmaGrid):
    """Harvest, the commons game (Perolat et al. 2017; Hughes et al. 2018).

    Apples start on every apple cell (`A`) and regrow with a probability that depends on the
    number of apples nearby (`harvest_regrowth_probability`), zero when none are left: eating a
    patch bare destroys it for the rest of the episode. `Discrete(8)` actions (no cleaning).
    See `DilemmaGrid` for observations, the global state and the tagging beam.

    Args:
      layout: `"large"` (the SSD reference's 16 x 38 map), `"small"` (7 x 12), `"tiny"` (10 x 10,
        8 x 8 inside the walls, the size of JaxMARL's `storm_2p` grid) or an ASCII map with
        characters `@ P A` and space.
      num_agents: number of agents `A` (at most the number of spawn points).
      view_radius: cells seen in each direction (SSD: 7, a 15 x 15 window).
      max_beam_length: static bound on `params.beam_length` (default 5).
    """

    layouts = HARVEST_LAYOUTS
    map_chars = "@P A"
    num_actions = 8
    game = "Harvest"

    def default_params(self) -> HarvestParams:
        return HarvestParams(
            **self._base_params(),
            apple_cells=jnp.asarray(self._masks["A"]),
            initial_apples=jnp.asarray(self._masks["A"]),
            regrowth_probs=jnp.array([0.0, 0.005, 0.02, 0.05], jnp.float32),
        )

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Shared ranges plus any regrowth probabilities and radius (see `DilemmaGrid`)."""
        return {
            **super().param_ranges(),
            "regrowth_probs": (0.0, 1.0),
            "regrowth_radius_sq": (0.0, 8.0),
        }

    def _probabilities(self, params: HarvestParams) -> dict:
        return {"regrowth_probs": params.regrowth_probs}

    def _regrow(self, key, apples, waste, occupied, params: HarvestParams):
        prob = harvest_regrowth_probability(apples, params)
        u = engine.cell_uniform(key, self.grid_shape)
        grow = params.apple_cells & ~apples & ~occupied & (u < prob)
        return apples | grow, waste


class Cleanup(DilemmaGrid):
    """Cleanup (Hughes et al. 2018): apples grow only while the river is clean.

    Waste (`H`) pollutes the river cells (`H`, `R`); each step at most one new waste cell
    appears (each clean river cell is tried with `waste_spawn_prob`, in random order, as in the
    SSD reference), and apples grow on empty apple cells (`B`) with a probability that falls
    linearly to zero as the waste density rises from the restoration to the depletion threshold
    (`cleanup_spawn_probabilities`). The cleaning beam (action 8, `clean`) has the shape of the
    tagging beam and turns the first waste cell of each lane back into clean river. Apple cells
    start empty and waste starts on the `H` cells. See `DilemmaGrid` for observations, the
    global state and the tagging beam.

    Args:
      layout: `"large"` (the SSD reference's 25 x 18 map), `"small"` (7 x 10), `"tiny"`
        (10 x 10) or an ASCII map with characters `@ P B H R S` and space.
      num_agents: number of agents `A` (at most the number of spawn points).
      view_radius: cells seen in each direction (SSD: 7, a 15 x 15 window).
      max_beam_length: static bound on `params.beam_length` (default 5).
    """

    layouts = CLEANUP_LAYOUTS
    map_chars = "@P BHRS"
    num_actions = 9
    game = "Cleanup"

    def default_params(self) -> CleanupParams:
        m = self._masks
        return CleanupParams(
            **self._base_params(),
            apple_cells=jnp.asarray(m["B"]),
            initial_apples=jnp.zeros(self.grid_shape, bool),
            river=jnp.asarray(m["H"] | m["R"]),
            stream=jnp.asarray(m["S"]),
            initial_waste=jnp.asarray(m["H"]),
        )

    def param_ranges(self) -> dict[str, tuple[float, float]]:
        """Shared ranges plus the cost and probabilities (thresholds depend on each other)."""
        return {
            **super().param_ranges(),
            "clean_cost": (0.0, 2.0),
            "apple_respawn_prob": (0.0, 1.0),
            "waste_spawn_prob": (0.0, 1.0),
        }

    def _probabilities(self, params: CleanupParams) -> dict:
        return {
            "apple_respawn_prob": params.apple_respawn_prob,
            "waste_spawn_prob": params.waste_spawn_prob,
        }

    def _extra_problems(self, params: CleanupParams) -> list[str]:
        low = np.asarray(params.restoration_threshold)
        high = np.asarray(params.depletion_threshold)
        if (low >= high).any():
            return ["restoration_threshold must be below depletion_threshold"]
        return []

    def _initial_waste(self, params: CleanupParams) -> Array:
        return jnp.asarray(params.initial_waste, bool)

    def _water(self, params: CleanupParams) -> Array:
        return params.river | params.stream

    def _extra_actions(self, state, actions, pos, orient, active, occupant, params: CleanupParams):
        cleaning = active & (actions == engine.CLEAN)
        _, covered = engine.beam(
            pos, orient, cleaning, params.beam_length, params.walls, occupant, state.waste,
            self.max_beam_length,
        )  # fmt: skip
        reward = -params.clean_cost * cleaning.astype(jnp.float32)
        return state.waste & ~covered, reward, covered

    def _regrow(self, key, apples, waste, occupied, params: CleanupParams):
        key_apple, key_pick, key_waste = jax.random.split(key, 3)
        apple_prob, waste_prob = cleanup_spawn_probabilities(waste, params)
        u = engine.cell_uniform(key_apple, self.grid_shape)
        apples = apples | (params.apple_cells & ~apples & ~occupied & (u < apple_prob))
        # At most one waste cell per step: trying the n clean river cells in random order with
        # probability p each adds one with probability 1 - (1 - p)^n, uniformly among them.
        clean = (params.river & ~waste).reshape(-1)
        n = jnp.sum(clean)
        pick = engine.first_argmax(
            jnp.where(clean, engine.cell_uniform(key_pick, clean.shape), -1.0)
        )
        p_any = 1.0 - (1.0 - waste_prob) ** n
        add = (n > 0) & (jax.random.uniform(key_waste) < p_any)
        waste = (
            waste.reshape(-1).at[pick].set(waste.reshape(-1)[pick] | add).reshape(self.grid_shape)
        )
        return apples, waste


# --------------------------------------------------------------------------------------------
# Registration.
# --------------------------------------------------------------------------------------------


def _register_all() -> None:
    register(
        "social/harvest-v0",
        Harvest,
        kwargs={"layout": "large", "num_agents": 5, "view_radius": 7},
        description="Harvest (commons) sequential social dilemma, SSD 16x38 map, 5 agents",
    )
    register(
        "social/harvest_small-v0",
        Harvest,
        kwargs={"layout": "small", "num_agents": 3, "view_radius": 3},
        params={"max_steps": 200},
        description="Harvest (commons) on a 7x12 map, 3 agents, 7x7 view, 200 steps",
    )
    register(
        "social/cleanup-v0",
        Cleanup,
        kwargs={"layout": "large", "num_agents": 5, "view_radius": 7},
        description="Cleanup sequential social dilemma, SSD 25x18 map, 5 agents",
    )
    register(
        "social/cleanup_small-v0",
        Cleanup,
        kwargs={"layout": "small", "num_agents": 3, "view_radius": 3},
        params={"max_steps": 200},
        description="Cleanup on a 7x10 map, 3 agents, 7x7 view, 200 steps",
    )


_register_all()

__all__ = [
    "CHANNEL_NAMES",
    "Cleanup",
    "CleanupParams",
    "DilemmaGrid",
    "DilemmaGridParams",
    "DilemmaGridState",
    "Harvest",
    "HarvestParams",
    "cleanup_spawn_probabilities",
    "harvest_regrowth_probability",
]
