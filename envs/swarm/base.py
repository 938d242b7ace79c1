"""Shared machinery of the mean-field swarm tasks: params, state, neighbours, metrics, global state.

A swarm env has `A` agents on a 2D torus `[0, L)^2` (`L = params.size`). Each step it

1. moves the agents (`_move`, task-specific),
2. finds every agent's neighbours within `params.radius` ONCE (`NeighbourSearch`: brute force
   for small `A`, spatial hash for large `A`, see `neighbours.py`),
3. computes observations, rewards and order parameters from them (`_outputs`),
4. builds the global state as the mean field of the swarm (`MeanField`, see `meanfield.py`).

Per-episode metrics (DESIGN: `extras` keys `group/name` holding one scalar; the runner averages
them over the episodes that end in each update):

- `swarm/<order>`: the mean of an order parameter over the steps of the episode so far (at an
  episode end: over the whole episode), e.g. `swarm/polarisation`;
- `swarm/<order>_final`: its value at the current step (at an end: the final value);
- `swarm/neighbour_overflow`: hash-table cell overflows summed over the episode's steps so far
  (0 means every neighbour query of the episode was exact; always 0 for brute force).

`extras["neighbour_dropped"]` (`[]` int32, not a metric) counts the agents dropped from this
step's neighbour table. With the static constructor argument `check_overflow=True`, a step whose
neighbour query overflows raises instead (a host callback: a debugging aid, slower).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from marljax.core import spaces
from marljax.core.types import Array, Environment, EnvParams, PRNGKey, TimeStep
from marljax.envs.swarm.meanfield import MeanField
from marljax.envs.swarm.neighbours import (
    Neighbours,
    NeighbourSearch,
    periodic,
    raise_on_overflow,
)

TWO_PI = 2.0 * math.pi


@struct.dataclass
class SwarmParams(EnvParams):
    """Traced parameters shared by the swarm tasks.

    Attributes:
      max_steps: time limit; episodes are truncated after this many steps.
      size: side `L` of the torus `[0, L)^2` (`> 0`). The registered defaults scale it with the
        number of agents, `L = sqrt(A / density)`, so that the density stays the same.
      radius: interaction / sensing radius `r` (`0 < r <= L / 2`; with the spatial hash also
        `r <= L / G`, the cell side).
      mf_bandwidth: width of the mean-field kernels in bin widths (`> 0`; kernel global state).
    """

    max_steps: int = 200
    size: Array = struct.field(default_factory=lambda: jnp.float32(4.0))
    radius: Array = struct.field(default_factory=lambda: jnp.float32(1.0))
    mf_bandwidth: Array = struct.field(default_factory=lambda: jnp.float32(1.0))


@struct.dataclass
class SwarmState:
    """Fields every swarm state has (task states add theirs)."""

    pos: Array  # [A, 2] float32 positions in [0, L)^2
    t: Array  # [] int32 steps taken in this episode
    metric_sum: Array  # [M] float32 order parameters summed over the episode's steps
    overflow: Array  # [] float32 neighbour-table cell overflows summed over the episode


def centred_bins(angle: Array, bins: int) -> Array:
    """`[...]` int32 arc index of angles on `K` equal arcs, arc 0 centred on angle 0.

    Arc `k` covers `[2 pi (k - 1/2) / K, 2 pi (k + 1/2) / K)` modulo `2 pi`, so relative angles
    near 0 ("aligned", "straight ahead") fall in arc 0. (The envs bin directions with
    `direction_bins`, which needs no trigonometry per pair; this is its reference.)
    """
    K = int(bins)
    w = angle - TWO_PI * jnp.round(angle * (1.0 / TWO_PI))  # in [-pi, pi]
    k = jnp.floor((w + math.pi / K) * (K / TWO_PI)).astype(jnp.int32)
    return jnp.where(k < 0, k + K, jnp.where(k >= K, k - K, k))


def direction_bins(u: Array, v: Array, bins: int) -> Array:
    """`[...]` int32 centred arc (as `centred_bins`) of the direction of the vectors `(u, v)`.

    The arc of an angle is the one whose centre `2 pi k / K` is nearest, i.e. the `k` that
    maximises `u cos(2 pi k / K) + v sin(2 pi k / K)`: `K` multiply-adds per vector instead of
    an `atan2` (which XLA evaluates about 40 times slower on CPU). The zero vector is in arc 0.

    Args:
      u: `[...]` x components (e.g. `cos` of a relative angle).
      v: `[...]` y components.
      bins: `K` (static).
    """
    K = int(bins)
    best = u
    k = jnp.zeros(jnp.shape(u), jnp.int32)
    for j in range(1, K):
        d = u * math.cos(TWO_PI * j / K) + v * math.sin(TWO_PI * j / K)
        better = d > best
        best = jnp.where(better, d, best)
        k = jnp.where(better, j, k)
    return k


def neighbour_histogram(u: Array, v: Array, mask: Array, bins: int) -> Array:
    """Fraction of each agent's neighbours in each centred arc (zeros when it has none).

    Args:
      u: `[A, M]` x component of a direction per candidate slot (e.g. `cos` of the relative
        heading, or the offset to the neighbour rotated into the agent's frame).
      v: `[A, M]` y component.
      mask: `[A, M]` bool, the slot is a neighbour.
      bins: `K` (static).

    Returns:
      `[A, K]` float32, rows summing to 1 (or 0 for agents without neighbours).
    """
    K = int(bins)
    counts = bin_counts(direction_bins(u, v, K), mask, K).astype(jnp.float32)
    return counts / jnp.maximum(counts.sum(-1, keepdims=True), 1.0)


def bin_counts(k: Array, mask: Array, bins: int) -> Array:
    """`[A, K]` int32 number of masked slots of each row in each bin.

    `counts[a, b] = sum_m mask[a, m] & (k[a, m] == b)`. A count is at most `M`, so it fits in
    `w = bit_length(M)` bits; several bins are packed into one uint32 word per slot
    (`1 << w (k - base)`) and summed in ONE reduction over `M` per word, then unpacked. On CPU
    this is about 30 times faster than reducing a `[A, M, K]` one-hot array (measured at
    `A = 10^4, M = 144, K = 8`), and exact.

    Args:
      k: `[A, M]` int32 bins in `0 .. K-1`.
      mask: `[A, M]` bool, which slots count.
      bins: `K` (static).
    """
    K, M = int(bins), int(k.shape[-1])
    width = max(1, M.bit_length())
    per_word = max(1, 32 // width)
    out = []
    for base in range(0, K, per_word):
        n = min(per_word, K - base)
        sel = mask & (k >= base) & (k < base + n)
        shift = (width * (k - base)).astype(jnp.uint32)
        word = jnp.sum(
            jnp.where(sel, jnp.left_shift(jnp.uint32(1), shift), jnp.uint32(0)),
            axis=-1,
            dtype=jnp.uint32,
        )
        field = jnp.uint32((1 << width) - 1) if width < 32 else jnp.uint32(0xFFFFFFFF)
        for j in range(n):
            out.append(jnp.right_shift(word, jnp.uint32(width * j)) & field)
    return jnp.stack(out, axis=-1).astype(jnp.int32)


def relative_angle(nb: Neighbours, cos: Array, sin: Array) -> tuple[Array, Array]:
    """`(cos, sin)` of `a_j - a_i` for every candidate slot, from per-agent `cos a`, `sin a`.

    Args:
      nb: the neighbours (`[A, M]` slots).
      cos: `[A]` `cos a_i`.
      sin: `[A]` `sin a_i`.

    Returns:
      `(u [A, M], v [A, M])` float32.
    """
    cj, sj = cos[nb.index], sin[nb.index]
    ci, si = cos[:, None], sin[:, None]
    return cj * ci + sj * si, sj * ci - cj * si


def polarisation(angle: Array) -> Array:
    """`[]` order parameter `|mean_i exp(i angle_i)|` in `[0, 1]` (1: all angles equal).

    The polarisation of headings (Vicsek et al. 1995) and the synchronisation of phases
    (Kuramoto 1975) are this quantity.
    """
    return jnp.hypot(jnp.mean(jnp.cos(angle)), jnp.mean(jnp.sin(angle)))


def local_order(angle: Array, nb: Neighbours) -> Array:
    """`[A]` local order parameter `|exp(i a_i) + sum_{j in N_i} exp(i a_j)| / (1 + n_i)`."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    m = nb.mask.astype(jnp.float32)
    sc = c + jnp.sum(m * c[nb.index], axis=-1)
    ss = s + jnp.sum(m * s[nb.index], axis=-1)
    return jnp.hypot(sc, ss) / (1.0 + jnp.sum(m, axis=-1))


class SwarmEnv(Environment):
    """Base of the swarm tasks (see the module docstring).

    Subclasses set `params_type`, `metric_names`, `default_density`, `has_angles` and implement
    `_init`, `_move`, `_outputs`, `_angles` and `action_space`; their constructors check and set
    their own static arguments, then pass the rest to `_setup`.
    """

    #: the task's params dataclass; `default_params` fills in the default torus side.
    params_type: type[SwarmParams] = SwarmParams
    #: names of the order parameters reported as `swarm/<name>` (static).
    metric_names: tuple[str, ...] = ()
    #: agents per unit area of the default torus (`size = sqrt(A / density)`).
    default_density: float = 2.0
    obs_dim: int

    def _setup(
        self,
        num_agents: int,
        continuous: bool,
        obs_dim: int,
        cells_per_side: int | None,
        cell_capacity: int,
        brute_force_threshold: int,
        mean_field: str,
        position_bins: int,
        angle_bins: int,
        check_overflow: bool,
    ) -> None:
        """Set the static fields every swarm task has; build its neighbour search and mean field.

        The one builder of the task constructors, which forward their shared arguments here.

        Args:
          num_agents: `A` (`>= 1`).
          continuous: continuous actions instead of discrete ones.
          obs_dim: size of one agent's observation.
          cells_per_side, cell_capacity, brute_force_threshold, check_overflow: the neighbour
            search (see `NeighbourSearch`; `cells_per_side=None`: `floor(L / r)` of the default
            params).
          mean_field, position_bins, angle_bins: the global state (see `MeanField`).

        Raises:
          ValueError: bad static arguments.
        """
        self.num_agents = int(num_agents)
        self.continuous = bool(continuous)
        self.obs_dim = int(obs_dim)
        if self.num_agents < 1:
            raise ValueError(f"{self.name} needs num_agents >= 1, got {self.num_agents}")
        if int(cell_capacity) < 1:
            raise ValueError(f"{self.name}: cell_capacity must be >= 1, got {cell_capacity}")
        if cells_per_side is None:
            p = self.default_params()
            cells_per_side = max(1, int(math.floor(float(p.size) / float(p.radius) * (1 - 1e-6))))
        if int(cells_per_side) < 1:
            raise ValueError(f"{self.name}: cells_per_side must be >= 1, got {cells_per_side}")
        self.neighbours = NeighbourSearch(
            self.num_agents, int(cells_per_side), int(cell_capacity), int(brute_force_threshold)
        )
        self.mean_field = MeanField(mean_field, position_bins, angle_bins)
        self.check_overflow = bool(check_overflow)

    def default_params(self) -> SwarmParams:
        """The task's `params_type` defaults on the torus of side `default_size()`."""
        return self.params_type(size=jnp.float32(self.default_size()))

    def default_size(self) -> float:
        """Torus side giving `default_density` agents per unit area, at least `2.5` (so that the
        default radius 1 fits in half the torus for tiny swarms too)."""
        return max(math.sqrt(self.num_agents / self.default_density), 2.5)

    # ------------------------------------------------------------------ subclass hooks

    def _init(self, key: PRNGKey, params: SwarmParams) -> SwarmState:
        """Initial state (`t = 0`, zero metric sums)."""
        raise NotImplementedError

    def _move(self, key: PRNGKey, state: SwarmState, actions: Array, params) -> SwarmState:
        """State after the agents act (positions, headings, phases; `t` untouched)."""
        raise NotImplementedError

    def _outputs(
        self, state: SwarmState, nb: Neighbours, params
    ) -> tuple[SwarmState, Array, Array, dict[str, Array]]:
        """`(state, obs [A, obs_dim], reward [A], {order: []})` given this state's neighbours.

        May update state fields that depend on the neighbours (e.g. Kuramoto's coupling field).
        """
        raise NotImplementedError

    def _angles(self, state: SwarmState) -> Array | None:
        """`[A]` angles whose distribution joins the global state (headings, phases) or None."""
        return None

    # ------------------------------------------------------------------ contract

    def reset(self, key: PRNGKey, params: SwarmParams) -> tuple[SwarmState, TimeStep]:
        state = self._init(key, params)
        reward = jnp.zeros((self.num_agents,), jnp.float32)
        return self._finish(state, params, reward_override=reward, count=False)

    def step(
        self, key: PRNGKey, state: SwarmState, actions: Array, params: SwarmParams
    ) -> tuple[SwarmState, TimeStep]:
        state = self._move(key, state, actions, params)
        state = state.replace(t=state.t + 1)
        return self._finish(state, params, reward_override=None, count=True)

    def _finish(self, state, params, reward_override, count: bool):
        nb = self.neighbours(state.pos, params.radius, params.size)
        if self.check_overflow:
            raise_on_overflow(nb)
        state, obs, reward, orders = self._outputs(state, nb, params)
        current = jnp.stack([orders[m] for m in self.metric_names]).astype(jnp.float32)
        overflow = nb.overflow_cells.astype(jnp.float32)
        if count:
            state = state.replace(
                metric_sum=state.metric_sum + current, overflow=state.overflow + overflow
            )
        if reward_override is not None:
            reward = reward_override
        steps = jnp.maximum(state.t, 1).astype(jnp.float32)
        extras = {}
        for i, m in enumerate(self.metric_names):
            extras[f"swarm/{m}"] = state.metric_sum[i] / steps
            extras[f"swarm/{m}_final"] = current[i]
        extras["swarm/neighbour_overflow"] = state.overflow
        extras["neighbour_dropped"] = nb.dropped.astype(jnp.int32)
        ts = TimeStep(
            obs=obs.astype(jnp.float32),
            reward=reward.astype(jnp.float32),
            terminated=jnp.bool_(False),
            truncated=state.t >= params.max_steps,
            action_mask=self._action_mask(),
            global_state=self.global_state(state, params),
            extras=extras,
        )
        return state, ts

    def global_state(self, state: SwarmState, params: SwarmParams) -> Array:
        """`[D]` float32 mean field of the swarm: positions (`b^2`), then angles (`K`) if any.

        A histogram or a kernel embedding (static `mean_field`), entries in `[0, 1]`.
        """
        mf = self.mean_field
        parts = [mf.positions(state.pos, params.size, params.mf_bandwidth)]
        angles = self._angles(state)
        if angles is not None:
            parts.append(mf.angles(angles, params.mf_bandwidth))
        return jnp.clip(jnp.concatenate(parts), 0.0, 1.0).astype(jnp.float32)

    def _scalar_action_space(self, num_choices: int) -> spaces.Space:
        """`Box(-1, 1, (1,))` when continuous, else `Discrete(num_choices)`."""
        if self.continuous:
            return spaces.Box(-1.0, 1.0, (1,), jnp.float32)
        return spaces.Discrete(num_choices)

    def _action_fraction(self, actions: Array, num_choices: int) -> Array:
        """`[A]` float32 in [-1, 1]: a continuous action clipped, or a discrete index spread
        evenly over [-1, 1] (0 -> -1, the middle -> 0, the last -> 1)."""
        if self.continuous:
            return jnp.clip(jnp.asarray(actions, jnp.float32).reshape(self.num_agents), -1.0, 1.0)
        a = jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, num_choices - 1)
        return a.astype(jnp.float32) / (num_choices - 1) * 2.0 - 1.0

    def _action_mask(self) -> Array:
        n = spaces.num_actions(self.action_space(None))
        return jnp.ones((self.num_agents, n), jnp.bool_)

    def _base_state(self, pos: Array) -> dict[str, Any]:
        """Common initial fields: positions, `t = 0`, zero sums."""
        return {
            "pos": pos.astype(jnp.float32),
            "t": jnp.int32(0),
            "metric_sum": jnp.zeros((len(self.metric_names),), jnp.float32),
            "overflow": jnp.float32(0.0),
        }

    def observation_space(self, params: SwarmParams) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, (self.obs_dim,), jnp.float32)

    def global_state_space(self, params: SwarmParams) -> spaces.Box:
        dim = self.mean_field.position_dim
        if self.has_angles:
            dim += self.mean_field.angle_bins
        return spaces.Box(0.0, 1.0, (dim,), jnp.float32)

    #: whether `_angles` returns angles (static; sets the global state size).
    has_angles: bool = False

    # ------------------------------------------------------------------ validation

    #: field -> (lo, hi, lo inclusive); None: unbounded. Checked by `validate_params`.
    _LIMITS: dict[str, tuple[float | None, float | None, bool]] = {
        "size": (0.0, None, False),
        "radius": (0.0, None, False),
        "mf_bandwidth": (0.0, None, False),
    }

    def validate_params(self, params: SwarmParams) -> None:
        """Raise `ValueError` naming the field for impossible settings (host side, concrete).

        `max_steps >= 1`; every float finite (no NaN or inf noise); the task's ranges; the
        radius at most half the torus (`r <= L / 2`, or a neighbour would be counted through
        both sides of the wrap) and, with the spatial hash, at most the cell side `L / G`.
        """
        if np.any(np.asarray(params.max_steps) < 1):
            raise ValueError(f"{self.name}: max_steps must be >= 1, got {params.max_steps}")
        for name, (lo, hi, closed) in self._LIMITS.items():
            v = np.asarray(getattr(params, name), np.float64)
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{self.name}: {name} must be finite, got {v.tolist()}")
            bad = np.zeros(v.shape, bool)
            if lo is not None:
                bad |= (v < lo) if closed else (v <= lo)
            if hi is not None:
                bad |= v > hi
            if np.any(bad):
                rel = ">=" if closed else ">"
                rng = (f"{rel} {lo}" if lo is not None else "") + (
                    f" and <= {hi}" if hi is not None else ""
                )
                raise ValueError(f"{self.name}: {name} must be {rng.strip()}, got {v.tolist()}")
        size = np.asarray(params.size, np.float64)
        radius = np.asarray(params.radius, np.float64)
        if np.any(radius > size / 2):
            raise ValueError(
                f"{self.name}: radius {radius.tolist()} is larger than half the torus "
                f"(size / 2 = {(size / 2).tolist()}); neighbours would be counted through both "
                "sides of the wrap. Use a smaller radius or a larger size."
            )
        if self.neighbours.hashed:
            G = self.neighbours.cells_per_side
            cell = size / G
            if np.any(radius > cell * (1 + 1e-6)):
                raise ValueError(
                    f"{self.name}: radius {radius.tolist()} exceeds the spatial-hash cell side "
                    f"size / cells_per_side = {cell.tolist()} (cells_per_side={G} is static); "
                    f"pass cells_per_side <= {int(np.min(size / radius))} to the constructor "
                    "(e.g. marljax.make(..., cells_per_side=...))."
                )

    def __repr__(self) -> str:
        return (
            f"{self.name}(num_agents={self.num_agents}, {self.neighbours!r}, {self.mean_field!r})"
        )


def uniform_positions(key: PRNGKey, num_agents: int, size: Array) -> Array:
    """`[A, 2]` float32 positions uniform on the torus `[0, L)^2`."""
    return jax.random.uniform(key, (num_agents, 2), jnp.float32) * size


def torus_move(pos: Array, dx: Array, dy: Array, size: Array) -> Array:
    """`[A, 2]` positions after moving by `(dx [A], dy [A])`, wrapped into `[0, L)^2`."""
    new = jnp.stack([pos[:, 0] + dx, pos[:, 1] + dy], axis=-1)
    return periodic(new, size)


def max_radius(env: SwarmEnv, size: float) -> float:
    """Largest radius valid for every torus side `>= size` (half the side; the hash cell side)."""
    hi = size / 2
    if env.neighbours.hashed:
        hi = min(hi, size / env.neighbours.cells_per_side)
    return 0.99 * hi


__all__ = [
    "SwarmEnv",
    "SwarmParams",
    "SwarmState",
    "bin_counts",
    "centred_bins",
    "direction_bins",
    "local_order",
    "max_radius",
    "neighbour_histogram",
    "polarisation",
    "relative_angle",
    "torus_move",
    "uniform_positions",
]
