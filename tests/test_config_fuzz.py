"""Bad configuration never reaches JAX: every wrong key or value fails with a clear error.

Configs come from Python dicts, JSON/YAML texts (`Experiment.loads`) and the CLI's `--set`.
Wrong types, unknown keys and out-of-range values (negative `num_envs`, zero `rollout_len`,
NaN learning rates, ...) must raise a `ConfigError`/`ValueError`/`TypeError`/`KeyError` whose
message names the key, raised from marljax's own validation (no frame inside jax), before
anything is compiled or written.
"""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marljax.agents import ALGORITHMS
from marljax.core import config as cfg
from marljax.shell import cli
from marljax.shell.experiment import Experiment, build
from marljax.training.train import TrainConfig

CLEAR_ERRORS = (cfg.ConfigError, ValueError, TypeError, KeyError)
JAX_DIR = os.path.dirname(__import__("jax").__file__)
TINY = {"num_envs": 4, "rollout_len": 4, "total_env_steps": 64}
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def assert_clear(err: BaseException, key: str) -> None:
    """The error names `key` and was raised by marljax, not from inside jax."""
    msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    assert key in msg, f"the error does not name {key!r}: {msg}"
    tb = err.__traceback__
    while tb is not None:
        assert not tb.tb_frame.f_code.co_filename.startswith(JAX_DIR), (
            f"raised from inside jax ({tb.tb_frame.f_code.co_filename}): {msg}"
        )
        tb = tb.tb_next


def fails_clearly(fn, key: str) -> BaseException:
    with pytest.raises(CLEAR_ERRORS) as info:
        fn()
    assert_clear(info.value, key)
    return info.value


# ----------------------------------------------------------------------------- bad values

# (key, bad value, where it goes): top-level, train, agent (PPO) or hparams (PPO) keys.
BAD_VALUES = [
    ("seeds", 0, "run"),
    ("seeds", -3, "run"),
    ("seeds", "four", "run"),
    ("seeds", 2.5, "run"),
    ("seed", 1.5, "run"),
    ("seed", 2**40, "run"),
    ("chunk_updates", -1, "run"),
    ("checkpoint", "sometimes", "run"),
    ("name", "../elsewhere", "run"),
    ("num_envs", -4, "train"),
    ("num_envs", 0, "train"),
    ("num_envs", 2.5, "train"),
    ("num_envs", 1e12, "train"),
    ("num_envs", "many", "train"),
    ("num_envs", None, "train"),
    ("rollout_len", 0, "train"),
    ("total_env_steps", -1, "train"),
    ("hidden_sizes", "wide", "agent"),
    ("hidden_sizes", [0], "agent"),
    ("hidden_sizes", [-8, 8], "agent"),
    ("num_minibatches", 0, "agent"),
    ("num_epochs", -1, "agent"),
    ("gru_size", 0, "agent"),
    ("recurrent", "maybe", "agent"),
    ("parameter_mode", "private", "agent"),
    ("critic_input", "both", "agent"),
    ("activation", "relu6", "agent"),
    ("lr", float("nan"), "hparams"),
    ("lr", float("inf"), "hparams"),
    ("lr", -1e-3, "hparams"),
    ("lr", 0.0, "hparams"),
    ("lr", "fast", "hparams"),
    ("lr", [1e-3], "hparams"),
    ("gamma", 1.5, "hparams"),
    ("gamma", -0.1, "hparams"),
    ("gae_lambda", 2.0, "hparams"),
    ("clip_eps", -0.2, "hparams"),
    ("ent_coef", 1e400, "hparams"),
    ("vf_coef", float("nan"), "hparams"),
    ("max_grad_norm", 0.0, "hparams"),
    ("adam_eps", -1e-8, "hparams"),
]


def experiment_dict(key, value, where) -> dict:
    d = {"algo": "mappo", "env": "matrix/penalty_k0-v0", "train": dict(TINY)}
    if where == "run":
        d[key] = value
    elif where == "train":
        d["train"][key] = value
    else:
        d[where] = {key: value}
    return d


@pytest.mark.parametrize("key,value,where", BAD_VALUES, ids=lambda x: str(x)[:12])
def test_bad_value_in_a_dict_fails_naming_the_key(key, value, where):
    fails_clearly(lambda: build(Experiment.from_dict(experiment_dict(key, value, where))), key)


@pytest.mark.parametrize(
    "key,value,where",
    [b for b in BAD_VALUES if isinstance(b[1], (int, float, str)) and b[1] is not None],
    ids=lambda x: str(x)[:12],
)
def test_bad_value_on_the_command_line_fails_naming_the_key(key, value, where, tmp_path, capsys):
    args = ["train", "--env", "matrix/penalty_k0-v0", "--out", str(tmp_path), "--no-progress"]
    for k, v in TINY.items():
        args += ["--set", f"{k}={v}"]
    args += ["--set", f"{key}={value}"]
    code = cli.main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert key in err and "Traceback" not in err, err
    assert os.listdir(tmp_path) == [], "a failed configuration must not create a run directory"


# ----------------------------------------------------------------------------- texts


@pytest.mark.parametrize(
    "text,key",
    [
        ('{"seeds": 0}', "seeds"),
        ('{"sedes": 2}', "sedes"),  # unknown key, close match listed below
        ('{"train": {"num_envz": 4}}', "num_envz"),
        ('{"train": {"rollout_len": 0}}', "rollout_len"),
        ('{"train": [1, 2]}', "train"),
        ('{"grid": {"lr": []}}', "grid.lr"),
        ('{"grid": {"lr": 0.1}}', "grid.lr"),
        ('{"env_kwargs": [1]}', "env_kwargs"),
        ('{"hparams": "lr=1"}', "hparams"),
        ('{"check_finite": "sometimes"}', "check_finite"),
        ("seeds: -1\n", "seeds"),  # YAML
        ("train:\n  num_envs: -4\n", "num_envs"),
        ("train:\n  total_env_steps: .nan\n", "total_env_steps"),
        ("- a list\n- not a mapping\n", "mapping"),
        ("{unclosed", "JSON"),
    ],
)
def test_bad_json_and_yaml_texts_fail_naming_the_key(text, key):
    fails_clearly(lambda: Experiment.loads(text), key)


@pytest.mark.parametrize("name", ["run\nrm", "tab\there", "", "  ", "a/b", ".."])
def test_run_names_are_plain_printable_directory_names(name):
    fails_clearly(lambda: Experiment(name=name), "name")


def test_unknown_key_lists_close_matches():
    err = fails_clearly(lambda: Experiment.from_dict({"sedes": 2}), "sedes")
    assert "'seeds'" in str(err)
    err = fails_clearly(lambda: Experiment.from_dict({"train": {"num_envz": 4}}), "num_envz")
    assert "'num_envs'" in str(err)


def test_config_json_round_trips(tmp_path):
    exp = Experiment(
        algo="ippo",
        env="matrix/penalty_k0-v0",
        seeds=3,
        train=TrainConfig(**TINY),
        agent={"hidden_sizes": [16]},
        hparams={"lr": 3e-3},
        grid={"ent_coef": [0.0, 0.01]},
    )
    text = json.dumps(cfg.to_dict(exp))
    assert Experiment.loads(text) == exp
    yaml_text = "algo: ippo\nenv: matrix/penalty_k0-v0\nseeds: 3\ntrain:\n  num_envs: 4\n"
    loaded = Experiment.loads(yaml_text)
    assert loaded.train.num_envs == 4 and loaded.seeds == 3 and loaded.algo == "ippo"


# ----------------------------------------------------------------------------- env options


@pytest.mark.parametrize(
    "env_kwargs,key",
    [
        ({"max_steps": -3}, "max_steps"),
        ({"max_steps": "long"}, "max_steps"),
        ({"max_stepz": 3}, "max_stepz"),
        ({"payoffs": [1, 2]}, "payoffs"),
        ({"payoffs": [[[math.nan] * 3] * 3] * 2}, "payoffs"),
        ({"num_agents": 0}, "num_agents"),
    ],
)
def test_bad_env_options_fail_naming_the_option(env_kwargs, key):
    exp = Experiment(env="matrix/climbing-v0", env_kwargs=env_kwargs, train=TrainConfig(**TINY))
    fails_clearly(lambda: build(exp), key)


# ----------------------------------------------------------------------------- fuzzing

WEIRD = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=6),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
)


STATIC_CONFIGS = [TrainConfig()] + [
    spec.config_cls(**spec.config_defaults) for _, spec in sorted(ALGORITHMS.items())
]


@FUZZ
@given(obj=st.sampled_from(STATIC_CONFIGS), data=st.data())
def test_fuzzed_static_config_values_are_accepted_or_rejected_clearly(obj, data):
    """Any value for any field: either a valid config or a clear error naming the field."""
    key = data.draw(st.sampled_from(cfg.field_names(obj)))
    value = data.draw(WEIRD)
    try:
        out = cfg.replace_checked(obj, {key: value}, "cfg")
    except CLEAR_ERRORS as err:
        assert_clear(err, key)
        return
    parsed = getattr(out, key)
    assert not isinstance(parsed, float) or math.isfinite(parsed)


@FUZZ
@given(
    algo=st.sampled_from(sorted(ALGORITHMS)),
    data=st.data(),
)
def test_fuzzed_hparams_are_accepted_inside_their_range_only(algo, data):
    hp = ALGORITHMS[algo].hparams_cls()
    key = data.draw(st.sampled_from(cfg.field_names(hp)))
    value = data.draw(st.one_of(WEIRD, st.floats(-2.0, 2.0)))
    rng = cfg.ranges_of(hp).get(key)
    try:
        out = cfg.replace_checked(hp, {key: value}, "hparams")
    except CLEAR_ERRORS as err:
        assert_clear(err, key)
        return
    number = float(getattr(out, key))
    assert math.isfinite(number), f"{key}={value!r} accepted as {number}"
    if rng is not None:
        rng.check(number, key)  # would raise if an out-of-range value had been accepted


@FUZZ
@given(
    key=st.sampled_from(cfg.field_names(Experiment)),
    value=WEIRD,
)
def test_fuzzed_experiment_dicts_are_accepted_or_rejected_clearly(key, value):
    try:
        exp = Experiment.from_dict({key: value})
    except CLEAR_ERRORS as err:
        assert_clear(err, key)
        return
    assert isinstance(exp, Experiment)


@FUZZ
@given(items=st.lists(st.text(max_size=12), max_size=3))
def test_fuzzed_set_strings_never_crash(items):
    try:
        assignments = cfg.parse_assignments(items, "--set")
    except cfg.ConfigError as err:
        assert "--set" in str(err)
        return
    args = cli.build_parser().parse_args(["train"])
    args.set = [f"{k}={v}" for k, v in assignments.items()]
    try:
        cli.experiment_from_args(args)
    except CLEAR_ERRORS as err:
        assert_clear(err, next(iter(assignments)) if len(assignments) == 1 else "")


def test_valid_hparams_inside_every_range_are_accepted():
    for algo, spec in ALGORITHMS.items():
        hp = spec.hparams_cls()
        ranges = cfg.ranges_of(hp)
        assert "gamma" in ranges, f"{algo}: no range read from {type(hp).__name__}'s fields"
        for key, rng in ranges.items():
            lo = rng.lo if rng.lo is not None else -1.0
            value = lo + (1e-3 if rng.lo_open else 0.0)
            out = cfg.replace_checked(hp, {key: value}, "hparams")
            assert float(getattr(out, key)) == pytest.approx(value), (algo, key)


# ----------------------------------------------------------------------------- field metadata


def test_every_agent_config_and_hparams_field_has_help():
    for algo, spec in ALGORITHMS.items():
        for cls in (spec.config_cls, spec.hparams_cls):
            helps = cfg.help_of(cls)
            assert list(helps) == cfg.field_names(cls)
            missing = [k for k, text in helps.items() if not text.strip()]
            assert not missing, f"{algo}: {cls.__name__} fields without help: {missing}"
            assert all("\n" not in text for text in helps.values()), cls.__name__


def test_param_ranges_and_help_live_in_the_class_not_in_a_table():
    """A class unknown to marljax declares its own ranges; flax keeps the fields as leaves."""
    import dataclasses

    import jax
    from flax import struct

    @struct.dataclass
    class HP:
        gamma: float = cfg.param(0.9, lo=0.0, hi=1.0, help="discount.")
        rate: float = cfg.param(0.1, lo=0.0, lo_open=True, help="step size.")
        note: float = cfg.param(1.0)

    @dataclasses.dataclass(frozen=True)
    class Static:
        widths: tuple = cfg.param(default_factory=lambda: (8,), help="layer widths.")
        steps: int = cfg.param(3, lo=1, help="steps.")

    assert cfg.ranges_of(HP) == {"gamma": cfg.Range(0.0, 1.0), "rate": cfg.Range(0.0, None, True)}
    assert cfg.help_of(HP()) == {"gamma": "discount.", "rate": "step size.", "note": ""}
    assert jax.tree.leaves(HP()) == [0.9, 0.1, 1.0]  # traced leaves, not static metadata
    fails_clearly(lambda: cfg.replace_checked(HP(), {"gamma": 1.5}, "hp"), "hp.gamma")
    fails_clearly(lambda: cfg.replace_checked(HP(), {"rate": 0}, "hp"), "hp.rate")
    assert float(cfg.replace_checked(HP(), {"note": -7}, "hp").note) == -7.0
    assert Static().widths == (8,) and cfg.ranges_of(Static) == {"steps": cfg.Range(1.0)}
    fails_clearly(lambda: cfg.replace_checked(Static(), {"steps": 0}, "agent"), "agent.steps")
    with pytest.raises(ValueError, match="lo=2"):
        cfg.param(0, lo=2, hi=1)
    assert not hasattr(cfg, "HPARAM_RANGES")


@pytest.mark.parametrize(
    "algo,where,key,value",
    [
        ("hasac", "hparams", "actor_lr", 0.0),
        ("hasac", "hparams", "init_alpha", -1.0),
        ("qmix", "hparams", "eps_finish", 1.5),
        ("ippo", "hparams", "gae_lambda", -0.1),
        ("qmix", "agent", "learning_starts", -1),
        ("hasac", "agent", "utd_ratio", 0.0),
        ("mappo", "agent", "num_minibatches", 0),
        ("maddpg", "hparams", "noise_start", -0.1),
        ("facmac", "agent", "hypernet_layers", 3),
    ],
)
def test_out_of_range_fields_fail_naming_the_key(algo, where, key, value):
    spec = ALGORITHMS[algo]
    obj = spec.hparams_cls() if where == "hparams" else spec.config_cls(**spec.config_defaults)
    err = fails_clearly(lambda: cfg.replace_checked(obj, {key: value}, where), key)
    assert "must be" in str(err)
