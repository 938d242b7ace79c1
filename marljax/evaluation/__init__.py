"""Evaluation: statistics researchers can report, and exact game-theoretic metrics.

- `stats`: rliable / marl-eval aggregate metrics (median, IQM, mean, optimality gap),
  probability of improvement, performance profiles and sample-efficiency curves, with
  stratified-bootstrap confidence intervals computed on device.
- `normal_form`: exact best responses, NashConv and exploitability of matrix games.
- `crossplay`: cross-play matrices between populations of trained policies.
- `shapley`: Shapley credit of agents (exact or Monte Carlo) and a rollout characteristic
  function.
- `social`: social metrics of dilemmas (efficiency, equality, sustainability, peace).
- `plots`: matplotlib figures of all of the above (imported lazily: `marljax.evaluation.plots`).
"""

from marljax.evaluation.crossplay import (
    crossplay_matrix,
    crossplay_summary,
    normal_form_crossplay,
    stack_params,
)
from marljax.evaluation.normal_form import (
    best_response,
    deviation_payoffs,
    expected_payoffs,
    exploitability,
    nash_conv,
    pure_strategies,
)
from marljax.evaluation.shapley import (
    ShapleyEstimate,
    coalition_masks,
    exact_shapley,
    monte_carlo_shapley,
    rollout_value_fn,
    shapley_values,
)
from marljax.evaluation.stats import (
    AGGREGATES,
    Interval,
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    aggregate_metrics,
    aggregate_optimality_gap,
    average_score_distribution,
    format_comparison,
    interval_estimate,
    pairwise_probability_of_improvement,
    performance_profiles,
    probability_of_improvement,
    probability_of_improvement_ci,
    sample_efficiency_curves,
    score_distribution,
    stack_scores,
    stratified_resample,
)

__all__ = [
    "AGGREGATES",
    "Interval",
    "ShapleyEstimate",
    "aggregate_iqm",
    "aggregate_mean",
    "aggregate_median",
    "aggregate_metrics",
    "aggregate_optimality_gap",
    "average_score_distribution",
    "best_response",
    "coalition_masks",
    "crossplay_matrix",
    "crossplay_summary",
    "deviation_payoffs",
    "exact_shapley",
    "expected_payoffs",
    "exploitability",
    "interval_estimate",
    "monte_carlo_shapley",
    "nash_conv",
    "normal_form_crossplay",
    "format_comparison",
    "pairwise_probability_of_improvement",
    "performance_profiles",
    "probability_of_improvement",
    "probability_of_improvement_ci",
    "pure_strategies",
    "rollout_value_fn",
    "sample_efficiency_curves",
    "score_distribution",
    "shapley_values",
    "stack_params",
    "stack_scores",
    "stratified_resample",
]

# Population-based evaluation in repeated Rock-Paper-Scissors (Lanctot et al. 2023).
from marljax.evaluation.population import (  # noqa: E402
    PopulationReport,
    aggregate_score,
    bot_crosstable,
    crosstable_metrics,
    episode_returns,
    evaluate_population,
    fixed_policy_agent,
    format_population_table,
    population_return,
    population_returns,
    population_returns_over_seeds,
    report_from_returns,
    within_population_exploitability,
)

__all__ += [
    "PopulationReport",
    "aggregate_score",
    "bot_crosstable",
    "crosstable_metrics",
    "episode_returns",
    "evaluate_population",
    "fixed_policy_agent",
    "format_population_table",
    "population_return",
    "population_returns",
    "population_returns_over_seeds",
    "report_from_returns",
    "within_population_exploitability",
]
