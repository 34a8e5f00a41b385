"""Small values parsed and written in one place: `module:callable` references, database URLs,
constraints."""

from searchsvc.core.callables import CallableRef


def test_a_reference_splits_into_its_module_and_attribute_path() -> None:
    ref = CallableRef.parse("objectives.torch_digits:Model.train")
    assert (ref.module, ref.attribute) == ("objectives.torch_digits", "Model.train")
    assert ref.parts == ("objectives", "torch_digits") and ref.top == "objectives"
    assert ref.attributes == ("Model", "train")
    assert str(ref) == "objectives.torch_digits:Model.train"


def test_a_module_alone_has_no_attribute_path() -> None:
    ref = CallableRef.parse("my_train")
    assert (ref.module, ref.attribute, ref.attributes, ref.top) == ("my_train", "", (), "my_train")
    assert str(ref) == "my_train"


def test_a_database_url_names_its_dialect_without_the_driver() -> None:
    from searchsvc.core.urls import dialect

    assert dialect("postgresql+psycopg://u@h/db") == "postgresql"
    assert dialect("SQLite:////tmp/x.db") == "sqlite" and dialect("memory:") == "memory"


def test_a_constraint_round_trips_through_its_dict() -> None:
    from searchsvc.core import Constraint

    bound = Constraint("memory_mb", None, 4000.0)
    assert bound.to_dict() == {"metric": "memory_mb", "min": None, "max": 4000.0}
    assert Constraint.from_dict(bound.to_dict()) == bound
