"""Is training bitwise repeatable on this device, with and without XLA's deterministic-ops flag?

Each program (IPPO feed-forward, MAPPO with a GRU, QMIX with a GRU and replay, all on
`particle/simple_spread-v0`, small sizes) is trained twice with the same key in one process, and
its final parameters are hashed. This runs once in a fresh process with the default flags and
once with `XLA_FLAGS=--xla_gpu_deterministic_ops=true` (the flag must be set before JAX starts),
and prints, per program and mode: bitwise equal within the process or not, the largest absolute
difference, the parameter hash (equal hashes across processes = repeatable across processes too),
compile time and run time (the cost of the flag).

With `--processes N` each mode runs in N fresh processes one after another, and the summary says
whether the parameter hashes agree across them (repeatable across processes, not only within one).

    python bench/determinism.py [--processes N] [--json PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

FLAG = "--xla_gpu_deterministic_ops=true"


def _programs():
    import marljax
    from marljax.agents.ppo import PPOConfig, make_ppo
    from marljax.agents.qlearning import QConfig, make_q_learner
    from marljax.training.train import TrainConfig, make_train

    env, params = marljax.make("particle/simple_spread-v0")
    ppo_cfg = TrainConfig(num_envs=64, rollout_len=32, total_env_steps=64 * 32 * 20)
    q_cfg = TrainConfig(num_envs=16, rollout_len=8, total_env_steps=16 * 8 * 200)
    ippo = make_ppo(PPOConfig(critic_input="local", parameter_mode="shared"), env, params)
    mappo = make_ppo(PPOConfig(critic_input="global", recurrent=True), env, params)
    qmix = make_q_learner(
        QConfig(mixer="qmix", recurrent=True, batch_size=32, buffer_size=512), env, params
    )
    return {
        "ippo_ff": make_train(ppo_cfg, env, ippo, params),
        "mappo_gru": make_train(ppo_cfg, env, mappo, params),
        "qmix_gru": make_train(q_cfg, env, qmix, params),
    }


def child() -> None:
    """Run in the fresh process: train each program twice, print one JSON line per program."""
    import jax
    import numpy as np

    for name, trainer in _programs().items():
        hp = trainer.agent.default_hparams()
        key = jax.random.PRNGKey(42)
        t = time.perf_counter()
        fn = jax.jit(trainer.train).lower(key, hp).compile()
        compile_s = time.perf_counter() - t
        outs, times = [], []
        for _ in range(2):
            t = time.perf_counter()
            out = jax.block_until_ready(fn(key, hp))
            times.append(time.perf_counter() - t)
            state = out[0] if isinstance(out, tuple) else out
            leaves = [
                np.asarray(x) for x in jax.tree.leaves(trainer.agent.get_params(state.agent_state))
            ]
            outs.append(leaves)
        equal = all(np.array_equal(a, b) for a, b in zip(*outs))
        diff = max(float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(*outs))
        digest = hashlib.sha256(b"".join(x.tobytes() for x in outs[0])).hexdigest()[:16]
        print(
            json.dumps(
                {
                    "program": name,
                    "bitwise_equal": equal,
                    "max_abs_diff": diff,
                    "hash": digest,
                    "compile_s": compile_s,
                    "run_s": min(times),
                    "backend": jax.default_backend(),
                    "device": str(jax.devices()[0].device_kind),
                }
            ),
            flush=True,
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--processes", type=int, default=1, help="fresh processes per mode (default 1)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child()
        return
    if args.processes < 1:
        raise SystemExit("--processes must be at least 1")
    rows = []
    for mode, flags in (("default", ""), ("deterministic", FLAG)):
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
        for proc in range(args.processes):
            out = subprocess.run(
                [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True
            )
            if out.returncode:
                raise SystemExit(f"{mode} run failed:\n{out.stderr[-3000:]}")
            for line in out.stdout.splitlines():
                if line.startswith("{"):
                    row = {"mode": mode, "process": proc, **json.loads(line)}
                    rows.append(row)
                    print(
                        f"{mode:13s} p{proc} {row['program']:10s} "
                        f"repeat bitwise: {row['bitwise_equal']!s:5s} "
                        f"max |diff| {row['max_abs_diff']:.3g}  hash {row['hash']}  "
                        f"compile {row['compile_s']:.1f} s  run {row['run_s'] * 1e3:.1f} ms  "
                        f"({row['device']})",
                        flush=True,
                    )
    if args.processes > 1:
        print("\nacross processes (same hash in every process = bitwise repeatable):")
        for mode in ("default", "deterministic"):
            for prog in dict.fromkeys(r["program"] for r in rows):
                hashes = {r["hash"] for r in rows if r["mode"] == mode and r["program"] == prog}
                print(f"  {mode:13s} {prog:10s} {'equal' if len(hashes) == 1 else 'DIFFERENT'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
