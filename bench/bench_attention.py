"""Attention on few tokens: Flax's `nn.dot_product_attention` vs `marljax.nn.networks.dot_product_attention`.

The same scaled dot-product attention (causal mask, no dropout) at the shapes of marljax's
transformers, forward and backward (the gradient of a squared-output loss with respect to the
queries, keys and values), one compiled program per implementation and shape, compile apart:

- MAT training: 400 samples (16 envs x 25 steps, one minibatch) of 3 agents, 1 head of 64;
- MAT acting: 16 envs of 3 agents, forward only;
- TransfQMIX-sized: 800 samples of 6 entity tokens, 8 heads of 4 (its preset's width 32).

Flax's einsums keep the heads as a second batch axis (`...qhd,...khd->...hqk`); marljax folds
them into the batch first, so each product is one plain 3-D batched matmul. "env steps" here are
samples (one sample = all its tokens), so the ratio column is flax time / marljax time.

    python bench/bench_attention.py [--json PATH] [--repeats N]
"""

from __future__ import annotations

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
from harness import Options, Result, case, main, timed

from marljax.nn.networks import dot_product_attention

#: name -> (samples, tokens, heads, depth, backward)
SHAPES = {
    "MAT train (400 x 3 tokens, 1 x 64)": (400, 3, 1, 64, True),
    "MAT act (16 x 3 tokens, 1 x 64)": (16, 3, 1, 64, False),
    "TransfQMIX-sized (800 x 6 tokens, 8 x 4)": (800, 6, 8, 4, True),
}
IMPLEMENTATIONS = {"flax": nn.dot_product_attention, "marljax": dot_product_attention}


def _program(attend, tokens: int, backward: bool):
    mask = jnp.tril(jnp.ones((tokens, tokens), bool))[None]

    def loss(q, k, v):
        return jnp.sum(attend(q, k, v, mask=mask) ** 2)

    return jax.grad(loss, (0, 1, 2)) if backward else loss


def _attention(framework: str, opts: Options) -> list[Result]:
    out = []
    for task, (samples, tokens, heads, depth, backward) in SHAPES.items():
        keys = jax.random.split(jax.random.PRNGKey(0), 3)
        q, k, v = (jax.random.normal(key, (samples, tokens, heads, depth)) for key in keys)
        fn = _program(IMPLEMENTATIONS[framework], tokens, backward)
        t = timed(fn, q, k, v, repeats=max(opts.repeats, 20), first_call=False)
        out.append(t.result(task, framework, samples))
    return out


for _name in IMPLEMENTATIONS:
    case(f"attention/{_name}")(functools.partial(_attention, _name))


if __name__ == "__main__":
    main(
        [f"attention/{n}" for n in IMPLEMENTATIONS],
        __doc__.splitlines()[0],
        baseline="flax",
        repeats=20,
        first_call=False,
    )
