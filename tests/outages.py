"""The study the database-outage tests run: steps slow enough (0.25 s) that the study is still
writing while its database is down."""

TRIALS, STEPS = 8, 4
SPEC = f"""
study: {{name}}
objective: objectives.synthetic:noisy
metric: loss
mode: min
searcher: quasi_random
budget: {{{{trials: {TRIALS}, max_concurrent: 2, max_steps: {STEPS}}}}}
noise: off
parameters:
  variant: {{{{role: scientific, values: [a, b]}}}}
  x: {{{{role: nuisance, low: 0.0, high: 1.0}}}}
  sleep_s: {{{{role: fixed, value: 0.25}}}}
"""
