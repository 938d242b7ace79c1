"""Shared pytest fixtures, and one XLA compilation cache for the whole test run."""

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

#: XLA flags of the whole test run (set before jax starts; inherited by the xdist workers, notebook
#: kernels and subprocesses). The suite is dominated by compile time on CPU, so by default it
#: compiles for speed of compiling: LLVM's optimisation level 0 (about 30 % faster;
#: tests/test_hasac.py alone: 160 s -> 115 s on 2 cores) and XLA:CPU's older loop emitters instead
#: of its MLIR fusion emitters (another 30-60 % off each compile: a QMIX training program 13.9 s ->
#: 9.7 s, `check_env` on Harvest 15.7 s -> 9.8 s; the programs' run time did not change). Every
#: comparison inside the suite runs under the same flags. `MARLJAX_TEST_OPT_LEVEL=2` (XLA's
#: default level) tests the optimised code with XLA's default emitters instead.
_OPT_FLAG = "--xla_backend_optimization_level"
_EMITTER_FLAG = "--xla_cpu_use_fusion_emitters=false"


def _xla_accepts(flag: str) -> bool:
    """Whether this jaxlib knows `flag` (an unknown flag in XLA_FLAGS aborts the process, and
    XLA renames and retires its flags): asked of a short subprocess, once per test run."""
    probe = "import jax; jax.devices()"
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()}
    env.setdefault("JAX_PLATFORMS", "cpu")
    proc = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=120)
    return proc.returncode == 0


#: The XLA_FLAGS the run started with (before the compile-speed flags), for the few programs
#: whose run time outweighs their compile time (e.g. the swarm notebook's large swarms).
BASE_FLAGS_ENV = "MARLJAX_TEST_BASE_XLA_FLAGS"
if _OPT_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ[BASE_FLAGS_ENV] = os.environ.get("XLA_FLAGS", "")
    level = os.environ.get("MARLJAX_TEST_OPT_LEVEL", "0")
    flags = [f"{_OPT_FLAG}={level}"]
    if level == "0" and _xla_accepts(_EMITTER_FLAG):
        flags.append(_EMITTER_FLAG)
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *flags]).strip()

import jax  # noqa: E402
import pytest  # noqa: E402

from marljax.testing import CountingEnv  # noqa: E402

#: Environment variable naming the run's compilation cache (set by the first process, inherited by
#: the xdist workers, notebook kernels and the subprocesses the tests start).
CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"


def pytest_configure(config):
    """Share compiled XLA programs across the whole test run.

    Many tests build the same agent and env and jit a fresh closure of the same program; jax's
    in-memory cache keys on the Python function, so each would compile again. jax's persistent
    cache keys on the program itself, so the second build loads the executable instead. The
    cache lives in a new temporary folder per run (nothing is reused between runs) and is removed
    by the process that made it.
    """
    if not os.environ.get(CACHE_ENV):
        os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="marljax-xla-cache-")
        config._marljax_cache_owner = True
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
    jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_ENV])
    jax.config.update(
        "jax_persistent_cache_min_compile_time_secs",
        float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]),
    )


def pytest_unconfigure(config):
    if getattr(config, "_marljax_cache_owner", False):
        shutil.rmtree(os.environ.pop(CACHE_ENV), ignore_errors=True)


#: Test files that take long for their number of tests (whole training programs, notebooks,
#: subprocesses, the registry-wide conformance check), longest first (estimated from CI runs'
#: `--durations`). xdist hands whole files to its workers in collection order (`--dist loadfile
#: --no-loadscope-reorder` in pyproject.toml): these go first and the other files after them,
#: most tests first, so that no worker is left alone with a long file at the end of the run.
#: `MARLJAX_TEST_FILE_TIMES=out.json pytest` writes every file's summed time to refresh this.
SLOW_FILES = (
    "test_notebooks.py",
    "test_crash_safety.py",
    "test_conformance.py",
    "test_train.py",
    "test_data_parallel.py",
    "test_rps_parity.py",
    "test_distributed.py",
    "test_properties.py",
    "test_cli.py",
    "test_benchmark.py",
    "test_population.py",
    "test_rps_population.py",
    "test_hasac.py",
    "test_meanfield_pg.py",
    "test_eval_loop.py",
    "test_render.py",
    "test_smax.py",
    "test_qlearning.py",
    "test_bn.py",
    "test_adapters.py",
    "test_jumanji_adapter.py",
    "test_offpolicy.py",
    "test_determinism.py",
    "test_policy_heads.py",
    "test_swarm.py",
)


def pytest_collection_modifyitems(config, items):
    """Slow files first (`SLOW_FILES`), then the others by falling number of tests."""
    counts = collections.Counter(item.path.name for item in items)
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(
        key=lambda it: (rank.get(it.path.name, len(rank)), -counts[it.path.name], str(it.path))
    )


_FILE_TIMES: collections.Counter = collections.Counter()


def pytest_runtest_logreport(report):
    if os.environ.get("MARLJAX_TEST_FILE_TIMES"):
        _FILE_TIMES[report.nodeid.split("::")[0]] += report.duration


def pytest_sessionfinish(session):
    out = os.environ.get("MARLJAX_TEST_FILE_TIMES")
    if out and _FILE_TIMES and not hasattr(session.config, "workerinput"):
        with open(out, "w") as f:
            json.dump(dict(_FILE_TIMES.most_common()), f, indent=1)


@pytest.fixture
def key() -> jax.Array:
    """A fixed PRNG key (tests are deterministic)."""
    return jax.random.PRNGKey(0)


@pytest.fixture
def counting() -> CountingEnv:
    """The toy env of `marljax.testing` with two agents."""
    return CountingEnv(num_agents=2)


#: make() options of the registry-wide checks (conformance, property tests) for envs whose
#: default build is dominated by compile time: the RoShamBo population and league with 3 of its 43 bots
#: (the two most complex and a trivial one); every bot is checked in tests/test_rps_*.py.
CHECK_BOTS = {"bots": ("rockbot", "iocainebot", "halbot")}
CHECK_OPTIONS = {"matrix/rrps_population-v0": CHECK_BOTS, "matrix/rrps_league-v0": CHECK_BOTS}


@pytest.fixture
def make_for_checks():
    """`make_for_checks(env_id) -> (env, params)`: `marljax.make` with `CHECK_OPTIONS`."""
    import marljax

    return lambda env_id: marljax.make(env_id, **CHECK_OPTIONS.get(env_id, {}))
