"""Callbacks that let a framework's own training loop report to searchsvc: one small module per
framework, each importing its framework only when imported itself.

- :mod:`searchsvc.integrations.lightning`: PyTorch Lightning (``Trainer`` callback).
- :mod:`searchsvc.integrations.huggingface`: Hugging Face ``transformers.Trainer``.
- :mod:`searchsvc.integrations.keras`: Keras ``model.fit`` (the ``keras_tuner`` backend's too).
- :mod:`searchsvc.integrations.xgboost`: XGBoost ``xgb.train`` / ``XGBModel.fit``.
- :mod:`searchsvc.integrations.lightgbm`: LightGBM ``lgb.train``.

Each reports through :func:`searchsvc.sdk.report`, so early stopping, PBT, telemetry and the
store treat a framework's trial as any other. A stop decided by early stopping raises
``SystemExit`` inside the framework's loop at its next report (Ray Tune's way of ending a
function trial). Lightning runs its own teardown on the way out, and its callback adds the
``teardown`` hooks and ends the trial's DataLoader workers; Ray then reuses the worker.
"""
