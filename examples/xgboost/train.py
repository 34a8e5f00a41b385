"""XGBoost on scikit-learn's bundled breast-cancer data, tuned by searchsvc: each boosting
round is a step, so early stopping compares trials round by round.

The lines that matter: the callback, the step budget as ``num_boost_round``, and the trial's
seed in ``params``.
"""

from __future__ import annotations

import xgboost as xgb
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from searchsvc import sdk
from searchsvc.integrations.xgboost import SearchsvcCallback


def train(config: dict) -> None:
    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_valid, y_train, y_valid = train_test_split(x, y, test_size=0.25, random_state=0)
    params = {"objective": "binary:logistic", "eval_metric": "logloss",
              "eta": config["eta"], "max_depth": config["max_depth"],
              "seed": sdk.trial_context().seed, "nthread": 1}
    xgb.train(params, xgb.DMatrix(x_train, label=y_train),
              num_boost_round=sdk.max_steps(50),
              evals=[(xgb.DMatrix(x_valid, label=y_valid), "validation")],
              verbose_eval=False, callbacks=[SearchsvcCallback()])


if __name__ == "__main__":
    print(sdk.run_locally(train, {"eta": 0.3, "max_depth": 3}, metric="validation-logloss",
                          max_steps=5))
