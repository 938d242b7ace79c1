#!/usr/bin/env bash
# One GPU measurement session (docs/gpu.md): env speed at 1k-1M envs beside JaxMARL / Jumanji,
# swarms at 1e3-1e6 agents, determinism across processes with and without XLA's
# deterministic-ops flag, and the GPU-sensitive tests. Each step has its own time limit and all
# share one budget, so a slow step costs only itself; every step's log and JSON lands in OUTDIR.
#
#   bash bench/gpu_run.sh OUTDIR [BUDGET_SECONDS]
#
# Run from the repository root on the GPU machine, with marljax installed (`pip install -e .`)
# and the bench extra's packages importable (jaxmarl, jumanji; the test extra for the tests).
set -u
OUT=${1:?usage: bash bench/gpu_run.sh OUTDIR [BUDGET_SECONDS]}
BUDGET=${2:-570}
TESTS_RESERVE=${TESTS_RESERVE:-130} # seconds kept for the determinism + tests phase
mkdir -p "$OUT"
START=$SECONDS
export PYTHONUNBUFFERED=1

left() { echo $((BUDGET - (SECONDS - START))); }

# step NAME MAX_SECONDS RESERVE_SECONDS CMD...: run CMD with at most MAX_SECONDS, never eating
# into the last RESERVE_SECONDS of the budget; its output goes to OUTDIR/NAME.log.
step() {
    local name=$1 max=$2 reserve=$3
    shift 3
    local avail=$(($(left) - reserve))
    local limit=$((max < avail ? max : avail))
    if ((limit < 15)); then
        echo "## $name: skipped, ${avail}s left"
        return
    fi
    echo "## $name: limit ${limit}s, at $((SECONDS - START))s"
    timeout -k 5 "$limit" "$@" >"$OUT/$name.log" 2>&1
    echo "## $name: rc=$? at $((SECONDS - START))s"
    grep -v '^Importing\|^Submoduled' "$OUT/$name.log" | tail -n 30
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c 'import jax; print("jax", jax.__version__, jax.devices())'

R=$TESTS_RESERVE
# one process per size, so that a size that runs out of time or memory costs only itself
for E in 1024 32768 1048576; do
    step coin_game_$E 50 "$R" python3 bench/bench_social.py --cases social_coin_game/marljax_vs_jaxmarl \
        --num-envs $E --num-steps 100 --repeats 3 --no-first-call --json "$OUT/coin_game_$E.json"
done
for E in 1024 32768 1048576; do
    step lbf_$E 60 "$R" python3 bench/bench_lbf.py --num-envs $E \
        --repeats 3 --no-first-call --json "$OUT/lbf_$E.json"
done
for task in vicsek aggregation kuramoto; do
    step swarm_$task 40 "$R" python3 bench/bench_swarm.py --cases swarm_scaling/$task \
        --num-agents 1000,10000,100000,1000000 --num-steps 10 --repeats 3 --no-first-call \
        --json "$OUT/swarm_$task.json"
done
for E in 1024 32768 1048576; do
    step ssd_$E 60 "$R" python3 bench/bench_ssd.py --configs full matched --num-envs $E \
        --num-steps 20 --repeats 2 --no-first-call --json "$OUT/ssd_$E.json"
done

# determinism (two fresh processes per mode) beside the tests: timings of the tests do not matter,
# and the determinism runs' run times are small next to their compiles.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export MARLJAX_TEST_OPT_LEVEL=2  # test the GPU's optimised code (the CPU suite compiles at 0)
step determinism 200 5 python3 bench/determinism.py --processes 2 \
    --json "$OUT/determinism.json" &
step pytest 200 5 python3 -m pytest -q -n 12 --dist load --timeout 200 -p no:cacheprovider \
    tests/test_crash_safety.py tests/test_checkpoint.py tests/test_coin_game_parity.py \
    tests/test_determinism.py tests/test_core.py tests/test_qlearning.py tests/test_hasac.py
wait
echo "## done at $((SECONDS - START))s"
