"""A Ray Tune function trainable written exactly the way Ray's documentation writes them.

searchsvc runs it unchanged: see examples/ray_docs_trainable/study.yaml.
"""

from ray import tune


def objective(x, a, b):
    return a * (x**0.5) + b


def trainable(config):
    for x in range(20):
        score = objective(x, config["a"], config["b"])
        tune.report({"score": score})  # This sends the score to Tune.
