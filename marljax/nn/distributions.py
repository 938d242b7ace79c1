"""Action distributions, kept behind one small module so the distrax dependency can be swapped.

All distributions here act on ONE agent's action per batch element, with batch shape `[...]`
(typically `[E, A]` or `[T, B, A]`).
"""

from __future__ import annotations

import distrax
import jax
import jax.numpy as jnp

Array = jax.Array

#: logit given to masked actions: finite (so entropies stay finite) and far below any real logit.
MASKED_LOGIT = -1e9


def masked_categorical(logits: Array, mask: Array | None = None) -> distrax.Categorical:
    """Categorical over `N` actions with illegal actions given zero probability.

    Args:
      logits: `[..., N]` unnormalised log-probabilities.
      mask: `[..., N]` bool, true for legal actions (None: all legal).
    """
    if mask is not None:
        logits = jnp.where(mask, logits, MASKED_LOGIT)
    return distrax.Categorical(logits=logits)


def diag_gaussian(mean: Array, log_std: Array) -> distrax.Distribution:
    """Diagonal Gaussian over `[..., D]` actions (log-prob summed over `D`)."""
    return distrax.MultivariateNormalDiag(loc=mean, scale_diag=jnp.exp(log_std))


class TanhGaussian:
    """Tanh-squashed diagonal Gaussian with the log-determinant correction.

    `log_prob(a) = log N(u) - sum_d log(1 - tanh(u_d)^2)` with `u = atanh(a)`; actions are clipped
    to `(-1 + eps, 1 - eps)` before `atanh` for stability (Haarnoja et al. 2018, appendix C).
    `entries` (`[..., D]` 0/1, broadcastable to the mean) keeps only the entries the env reads in
    the log-probability: the density of the used entries alone, so that entries an agent cannot
    affect the env with add no free entropy (e.g. a speaker's padded movement entries).
    """

    def __init__(
        self, mean: Array, log_std: Array, eps: float = 1e-6, entries: Array | None = None
    ):
        self.base = distrax.MultivariateNormalDiag(loc=mean, scale_diag=jnp.exp(log_std))
        self.eps = eps
        self.mean, self.log_std = mean, log_std
        self.entries = None if entries is None else jnp.asarray(entries, jnp.float32)

    @staticmethod
    def _log_det_terms(u: Array) -> Array:
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|.
        return 2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u))

    @staticmethod
    def _log_det(u: Array) -> Array:
        return jnp.sum(TanhGaussian._log_det_terms(u), axis=-1)

    def _log_prob_u(self, u: Array) -> Array:
        if self.entries is None:
            return self.base.log_prob(u) - self._log_det(u)
        z = (u - self.mean) * jnp.exp(-self.log_std)
        per_entry = -0.5 * z * z - self.log_std - 0.5 * jnp.log(2.0 * jnp.pi)
        return jnp.sum((per_entry - self._log_det_terms(u)) * self.entries, axis=-1)

    def sample(self, seed: Array) -> Array:
        return jnp.tanh(self.base.sample(seed=seed))

    def sample_and_log_prob(self, seed: Array) -> tuple[Array, Array]:
        u = self.base.sample(seed=seed)
        return jnp.tanh(u), self._log_prob_u(u)

    def log_prob(self, a: Array) -> Array:
        u = jnp.arctanh(jnp.clip(a, -1.0 + self.eps, 1.0 - self.eps))
        return self._log_prob_u(u)

    def entropy(self) -> Array:
        """Entropy of the *pre-squash* Gaussian (no closed form after tanh; used as a regulariser)."""
        return self.base.entropy()

    def mode(self) -> Array:
        return jnp.tanh(self.base.mean())
