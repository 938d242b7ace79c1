"""HASAC vs MASAC vs MAPPO on continuous speaker-listener (heterogeneous roles): IQM over seeds.

Cooperative communication (R. Lowe et al., NeurIPS 2017; `particle/simple_speaker_listener_
continuous-v0`): a static speaker sees the goal landmark's colour and only speaks (3 numbers), a
listener hears it, sees the landmarks and moves; shared reward `-|listener - goal|^2` per step,
25-step episodes. The two agents differ in role, observation and action, the setting in which
HASAC's sequential update (Liu et al. 2024, ICLR; each agent's actor step sees the already
updated policies of the agents before it) should matter; MASAC is the same learner updating
both actors at once (`SACConfig.sequential=False`), MAPPO (Yu et al. 2022) a shared actor with
agent id and a centralised critic. HASAC and MASAC use `--preset harl_mpe`, which equals HARL's
tuned config for this task (`tuned_configs/pettingzoo_mpe/simple_speaker_listener_v3-continuous/
hasac/config.json`: learned temperature, MSE critic loss, no ValueNorm, 20-step returns, lr
5e-4), with independent parameters and the CPU scaling of `hasac_spread.py`; the default
`--utd 0.4` with 8 envs is HARL's 0.05 gradient steps per transition. HARL trains 10M env
steps per run; the default here is 100k (CPU budget).

Scores per run, aggregates (IQM, mean, 95% stratified-bootstrap CIs, P(X > Y)) and the training
code are those of `hasac_spread.py` (its `train` and `compare`), at equal env steps.

`--used-entries-only` (`SACConfig.used_entries_only`) makes HASAC and MASAC count only the action
entries each role reads (the speaker's 3 message entries, the listener's 4 movement entries) in
their log-probabilities and target entropies (-3 and -4 instead of HARL's -5 for both).

    python baselines/hasac_speaker_listener.py [--seeds 4] [--steps 100000] [--utd 0.4]
        [--algos hasac,masac,mappo] [--preset harl_mpe] [--used-entries-only]
"""

from __future__ import annotations

from hasac_spread import compare, parse_args  # run as a script: baselines/ is on sys.path

ENV = "particle/simple_speaker_listener_continuous-v0"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv, __doc__, steps=100_000, utd=0.4, algos="hasac,masac,mappo")
    compare(ENV, args)


if __name__ == "__main__":
    main()
