"""LightGBM: a callback that reports each boosting round's evaluation results. ::

    from searchsvc.integrations.lightgbm import searchsvc_callback

    lgb.train(params, train_set, num_boost_round=sdk.max_steps(100),
              valid_sets=[valid_set], valid_names=["validation"],
              callbacks=[searchsvc_callback()])

Each round reports ``{data}-{metric}`` for every validation set and metric (e.g.
``validation-binary_logloss``), with ``round`` (rounds completed) as the step. Give the
study's ``metric`` one of those names. The trial's seed reaches LightGBM through
``params["seed"]`` (``sdk.trial_context().seed``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchsvc.worker.sdk import report


def searchsvc_callback() -> Callable[[Any], None]:
    """The callback for ``lgb.train(callbacks=[...])``: reports after each round."""

    def callback(env: Any) -> None:
        values = {f"{entry[0]}-{entry[1]}": float(entry[2])
                  for entry in env.evaluation_result_list or []}
        values["round"] = env.iteration - env.begin_iteration + 1
        report(values)

    callback.order = 30  # type: ignore[attr-defined]  # after LightGBM's own (logging: 10)
    return callback
