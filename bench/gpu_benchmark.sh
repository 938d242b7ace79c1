#!/usr/bin/env bash
# The benchmark suite's GPU cells at their published budgets (docs/benchmark_suite.md), inside one
# 10-minute device call: each group of cells gets its own time limit, a killed group resumes on
# the next call (`marljax benchmark` skips finished cells, continues an interrupted one from its
# checkpoint), and every group's benchmark.json / results.md lands in OUTDIR.
#
#   bash bench/gpu_benchmark.sh OUTDIR [BUDGET_SECONDS] [BUDGET]
#
# BUDGET is `published` (default) or a number of env steps (e.g. 4096 to try the script on a CPU;
# with QUICK=1 the first measurement, MAT / HAPPO against MAPPO, runs at its tiny sizes too).
# Run from the repository root with marljax installed with the bench extra (jaxmarl, jumanji).
set -u
OUT=${1:?usage: bash bench/gpu_benchmark.sh OUTDIR [BUDGET_SECONDS] [BUDGET]}
SECONDS_LEFT=${2:-570}
BUDGET=${3:-published}
mkdir -p "$OUT"
START=$SECONDS
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false

run_group() {  # run_group NAME MAX_SECONDS TASKS ALGOS
    local name=$1 max=$2 tasks=$3 algos=$4
    local left=$((SECONDS_LEFT - (SECONDS - START) - 10))
    local limit=$((max < left ? max : left))
    if ((limit < 30)); then
        echo "## $name: skipped, ${left}s left"
        return
    fi
    echo "## $name: limit ${limit}s"
    timeout -k 5 "$limit" marljax benchmark --tasks "$tasks" --algos "$algos" --seeds 5 \
        --budget "$BUDGET" --out "$OUT/$name" --no-progress >"$OUT/$name.log" 2>&1
    echo "## $name: rc=$? at $((SECONDS - START))s"
    tail -n 12 "$OUT/$name.log"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
python3 -c 'import jax; print("jax", jax.__version__, jax.devices())'
# MAT's and HAPPO's training speed against MAPPO on MPE spread (issue targets: MAT >= 0.3x,
# HAPPO >= 0.5x), first: it is the cheapest measurement here and has no CPU answer
# (docs/benchmarks.md). QUICK=1 runs its tiny sizes (to try the script on a CPU).
echo "## happo_mat: limit 200s"
timeout -k 5 200 python3 bench/bench_happo_mat.py ${QUICK:+--quick} --repeats 5 \
    --cases ha_train/mappo ha_train/happo ha_train/mat_4_epochs ha_train/mappo_paper_mpe \
    ha_train/mat_paper_mpe --json "$OUT/happo_mat.json" >"$OUT/happo_mat.log" 2>&1
echo "## happo_mat: rc=$? at $((SECONDS - START))s"
tail -n 14 "$OUT/happo_mat.log"
run_group smax3m 300 smax/3m ippo,mappo
run_group mpe_spread 200 mpe/simple_spread ippo,mappo,vdn,pqn_vdn
run_group smax2s3z 200 smax/2s3z ippo,mappo
run_group smax3m_happo_mat 300 smax/3m happo,mat
run_group smax3m_q 300 smax/3m qmix,vdn,iql,pqn_vdn
