"""LightGBM on scikit-learn's bundled breast-cancer data, tuned by searchsvc: each boosting
round is a step, so early stopping compares trials round by round.

The lines that matter: the callback, the step budget as ``num_boost_round``, and the trial's
seed in ``params``.
"""

from __future__ import annotations

import lightgbm as lgb
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from searchsvc import sdk
from searchsvc.integrations.lightgbm import searchsvc_callback


def train(config: dict) -> None:
    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_valid, y_train, y_valid = train_test_split(x, y, test_size=0.25, random_state=0)
    params = {"objective": "binary", "metric": "binary_logloss",
              "learning_rate": config["learning_rate"], "num_leaves": config["num_leaves"],
              "seed": sdk.trial_context().seed, "num_threads": 1, "verbose": -1}
    train_set = lgb.Dataset(x_train, label=y_train)
    lgb.train(params, train_set, num_boost_round=sdk.max_steps(50),
              valid_sets=[lgb.Dataset(x_valid, label=y_valid, reference=train_set)],
              valid_names=["validation"], callbacks=[searchsvc_callback()])


if __name__ == "__main__":
    print(sdk.run_locally(train, {"learning_rate": 0.1, "num_leaves": 15},
                          metric="validation-binary_logloss", max_steps=5))
