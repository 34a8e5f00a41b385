"""What runs inside a Ray worker for each trial: the trial's context, the objective's import,
the sdk objectives call, and the trainable Ray runs. Never imports the driver (nor the store,
searchers or analysis), so a worker starts fast and the boundary stays one-way."""
