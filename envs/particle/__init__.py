"""Multi-Agent Particle Environment worlds (spread, tag, speaker-listener). Importing registers them.

The MPE tasks of Lowe et al., "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive
Environments", NeurIPS 2017, with the semantics of JaxMARL 0.2.0's `MPE_simple_spread_v3` and
`MPE_simple_tag_v3` and `MPE_simple_speaker_listener_v4` (PettingZoo's `simple_spread_v3`,
`simple_tag_v3`, `simple_speaker_listener_v4`), vectorised over agents.
Build them with `marljax.make`::

    env, params = marljax.make("particle/simple_spread-v0")              # 3 agents, 3 landmarks
    env, params = marljax.make("particle/simple_spread-v0", num_agents=5, num_landmarks=5)
    env, params = marljax.make("particle/simple_tag_continuous-v0", good_max_speed=1.5)

Ids: `particle/simple_spread-v0`, `particle/simple_tag-v0` and
`particle/simple_speaker_listener-v0` take `Discrete(5)` actions
(`no-op, left, right, down, up`, MPE's order); the `*_continuous-v0` ids are the same tasks with
`Box(0, 1, (5,))` actions. The action type is the static constructor argument `continuous`, so
`make("particle/simple_spread-v0", continuous=True)` is the continuous task too. Other static
options are the counts (`num_agents`, `num_landmarks`; `num_good_agents`, `num_adversaries`,
`num_obstacles`); everything else (dt, damping, contact force and margin, masses, sizes,
accelerations, speed limits, `local_ratio`, `tag_reward`, `max_steps` = 25) is a traced params
field (`SimpleSpreadParams`, `SimpleTagParams`, `SpeakerListenerParams`). Speaker-listener has
two roles (`agent_types`: `SPEAKER`, `LISTENER`) padded to one observation and action shape; its
module docstring says which entries each role ignores.
"""

from __future__ import annotations

from marljax.core.registry import register
from marljax.envs.particle.simple_speaker_listener import (
    LISTENER,
    SPEAKER,
    SimpleSpeakerListener,
    SpeakerListenerParams,
    make_simple_speaker_listener,
)
from marljax.envs.particle.simple_spread import (
    SimpleSpread,
    SimpleSpreadParams,
    make_simple_spread,
)
from marljax.envs.particle.simple_tag import (
    ADVERSARY,
    GOOD,
    SimpleTag,
    SimpleTagParams,
    make_simple_tag,
)
from marljax.envs.particle.world import ParticleParams, ParticleState


def _register_all() -> None:
    for suffix, continuous, kind in (("", False, "discrete"), ("_continuous", True, "continuous")):
        register(
            f"particle/simple_spread{suffix}-v0",
            make_simple_spread,
            kwargs={"continuous": continuous},
            description=f"MPE simple spread, 3 agents, 3 landmarks, {kind} actions "
            "(Lowe et al. 2017; JaxMARL MPE_simple_spread_v3)",
        )
        register(
            f"particle/simple_tag{suffix}-v0",
            make_simple_tag,
            kwargs={"continuous": continuous},
            description=f"MPE simple tag, 3 adversaries, 1 good agent, 2 obstacles, {kind} "
            "actions (Lowe et al. 2017; JaxMARL MPE_simple_tag_v3)",
        )
        register(
            f"particle/simple_speaker_listener{suffix}-v0",
            make_simple_speaker_listener,
            kwargs={"continuous": continuous},
            description=f"MPE simple speaker-listener, a static speaker and a moving listener "
            f"(heterogeneous roles), {kind} actions (Lowe et al. 2017; JaxMARL "
            "MPE_simple_speaker_listener_v4)",
        )


_register_all()

__all__ = [
    "ADVERSARY",
    "GOOD",
    "LISTENER",
    "SPEAKER",
    "ParticleParams",
    "ParticleState",
    "SimpleSpread",
    "SimpleSpeakerListener",
    "SimpleSpreadParams",
    "SimpleTag",
    "SimpleTagParams",
    "SpeakerListenerParams",
    "make_simple_speaker_listener",
    "make_simple_spread",
    "make_simple_tag",
]
