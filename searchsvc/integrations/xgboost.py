"""XGBoost: a training callback that reports each boosting round's evaluation results. ::

    from searchsvc.integrations.xgboost import SearchsvcCallback

    xgb.train(params, dtrain, num_boost_round=sdk.max_steps(100),
              evals=[(dvalid, "validation")], callbacks=[SearchsvcCallback()])

Each round reports ``{data}-{metric}`` for every evaluation set and metric (the names
``evals_result`` uses, e.g. ``validation-logloss``), with ``round`` (rounds completed) as
the step. Give the study's ``metric`` one of those names. The trial's seed reaches XGBoost
through ``params["seed"]`` (``sdk.trial_context().seed``), as XGBoost takes no global seed.
"""

from __future__ import annotations

from typing import Any

import xgboost as xgb

from searchsvc.worker.sdk import report


class SearchsvcCallback(xgb.callback.TrainingCallback):
    """Report the latest value of every evaluation set's metrics after each round."""

    def after_iteration(self, model: Any, epoch: int, evals_log: dict[str, Any]) -> bool:
        values = {f"{data}-{metric}": float(history[-1])
                  for data, metrics in evals_log.items()
                  for metric, history in metrics.items() if history}
        values["round"] = epoch + 1
        report(values)
        return False  # go on: a stop arrives as SystemExit from report
