"""Every registered backend passes the backend contract (searchsvc.testing.backend_contract),
without Ray or training; and what the contract cannot say generically of each one."""

from __future__ import annotations

import pytest

from searchsvc.backends import backend_names, check_backend
from searchsvc.testing.backend_contract import (
    BackendContract,
    FunctionBackendContract,
    backend_spec,
    function_backends,
)


class TestBackendContract(BackendContract):
    @pytest.fixture(params=backend_names())
    def backend(self, request: pytest.FixtureRequest) -> str:
        return request.param


class TestFunctionBackendContract(FunctionBackendContract):
    @pytest.fixture(params=function_backends())
    def backend(self, request: pytest.FixtureRequest) -> str:
        return request.param


def test_ray_is_a_function_backend_and_the_keras_ones_are_not() -> None:
    assert function_backends() == ["ray"]


def test_autokeras_refuses_a_searcher_and_a_study_without_epochs() -> None:
    issues = check_backend(backend_spec("autokeras", searcher="random", budget="{trials: 2}"))
    assert sorted(i.field for i in issues) == ["budget.max_steps", "searcher"]
    assert "backend_options.tuner" in next(i.message for i in issues if i.field == "searcher")


def test_keras_tuner_needs_its_data_function() -> None:
    [issue] = check_backend(backend_spec("keras_tuner", {}))
    assert (issue.field, issue.message) == ("backend_options.data", "is required")


@pytest.mark.parametrize(("config", "message"), [
    ({"units": 4, "depth": 2}, "hyperparameter 'depth' = 2: the hypermodel declares no such"),
    ({"units": 99}, r"hyperparameter 'units' = 99 is outside the hypermodel's range \[4, 8\]"),
])
def test_keras_tuner_refuses_values_its_hypermodel_does_not_declare_before_training(
        tmp_path, config: dict, message: str) -> None:
    from searchsvc.backends.keras import KerasTunerBackend
    from searchsvc.errors import ObjectiveError
    from searchsvc.testing.backend_contract import reports

    (tmp_path / "contract_hypermodel.py").write_text(
        "import keras\n\n\n"
        "def build(hp):\n"
        "    units = hp.Int('units', 4, 8)\n"
        "    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(units)])\n\n\n"
        "def data():\n"
        "    raise AssertionError('the data is loaded only to train')\n")
    backend = KerasTunerBackend("contract_hypermodel:build", [str(tmp_path)], "loss", 1,
                                {"data": "contract_hypermodel:data"})
    with reports() as caught, pytest.raises(ObjectiveError, match=message):
        backend.run(config)
    assert caught == []
