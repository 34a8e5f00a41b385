"""The store's contract (searchsvc.testing.store_contract), run against every implementation:
SQLite, a real PostgreSQL server (a fresh database per test; see tests/conftest.py) and the
in-memory store; then what only the SQL store has (migrations, tokens hashed in the table)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.store import SqlStore, Store, open_store
from searchsvc.store.memory import InMemoryStore
from searchsvc.testing.store_contract import StoreContract

STORES = ["sqlite", "postgresql", "memory"]


def sql_url(request: pytest.FixtureRequest, tmp_path: Path, database: str) -> str:
    return (f"sqlite:///{tmp_path / 'store.db'}" if database == "sqlite"
            else request.getfixturevalue("postgres_url"))


class TestStoreContract(StoreContract):
    @pytest.fixture(params=STORES)
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
        s = (open_store("memory:") if request.param == "memory"
             else SqlStore(sql_url(request, tmp_path, request.param)))
        yield s
        s.close()


def test_memory_url_opens_a_fresh_in_memory_store() -> None:
    first, second = open_store("memory:"), open_store("memory:")
    assert isinstance(first, InMemoryStore) and first.url == "memory:"
    first.create_study(name="s", metric="loss", mode="min", searcher="random", spec_text="",
                       spec_file="-", total_trials=1, results_dir=None, provenance={})
    assert [s.name for s in second.list_studies()] == []  # nothing shared between stores


def test_the_in_memory_store_keeps_only_a_hash_of_each_token() -> None:
    import hashlib

    store = InMemoryStore()
    token = store.create_token("ada")
    kept = repr(vars(store))
    assert token not in kept and hashlib.sha256(token.encode()).hexdigest() in kept


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    s = SqlStore(sql_url(request, tmp_path, request.param))
    yield s
    s.close()


def test_the_head_revision_is_alembics_and_a_store_at_it_opens_without_alembic(
        tmp_path: Path) -> None:
    import subprocess
    import sys

    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from searchsvc.store.sql import HEAD_REVISION, MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD_REVISION
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    SqlStore(url).create_study(name="s", metric="loss", mode="min", searcher="random",
                               spec_text="", spec_file="s.yaml", total_trials=1,
                               results_dir=None, provenance={})
    opened = subprocess.run([sys.executable, "-c", f"""
import sys
from searchsvc.store import SqlStore
print(SqlStore({url!r}).get_study("s").name, "alembic" in sys.modules)
"""], capture_output=True, text=True, timeout=120)
    assert opened.stdout.split() == ["s", "False"], opened.stderr


def test_a_database_made_before_migrations_is_adopted_not_recreated(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, inspect, text

    from searchsvc.store.sql import MIGRATIONS

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:  # the 0.1 schema, made without migrations: no version
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(text("DROP TABLE alembic_version"))
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO studies (name, state, metric, mode, searcher, spec_text, spec_file, "
            "created_at, provenance, driver) VALUES ('old', 'completed', 'loss', 'min', "
            "'random', 'study: old', '/x.yaml', 0, '{}', '{}')"))
    store = SqlStore(url)
    assert store.get_study("old").state == "completed"  # kept
    with engine.connect() as connection:
        assert "alembic_version" in inspect(connection).get_table_names()
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == (
            "0010")
        assert "owner" in {c["name"] for c in inspect(connection).get_columns("studies")}


def test_a_constrained_study_stored_before_its_bounds_were_kept_is_judged_by_them(
        tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    from searchsvc.core import Constraint
    from searchsvc.store.sql import MIGRATIONS

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0007")
        connection.execute(text(
            "INSERT INTO studies (id, name, state, metric, mode, searcher, spec_text, spec_file,"
            " created_at, provenance, driver) VALUES (1, 'old', 'completed', 'loss', 'min', "
            "'random', :spec, '/x.yaml', 0, '{}', '{}')"),
            {"spec": "study: old\nconstraints:\n  - {metric: memory_mb, max: 100}\n"})
        for number, value, memory in ((0, 0.5, 50), (1, 0.1, 500)):
            connection.execute(text(
                "INSERT INTO trials (study_id, number, state, config, arm, seed, attempts, "
                "checkpoints, best_value, final_metrics) VALUES (1, :n, 'completed', '{}', "
                "'{}', 0, 1, '[]', :v, :f)"), {"n": number, "v": value,
                                               "f": f'{{"memory_mb": {memory}}}'})
    store = SqlStore(url)
    study = store.get_study("old")
    assert study.constraints == (Constraint("memory_mb", high=100),)
    assert study.best_value == 0.5


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_migrations_build_exactly_the_schema_the_code_uses(
        request: pytest.FixtureRequest, tmp_path: Path, database: str) -> None:
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.config import Config
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine

    from searchsvc.store.schema import Base
    from searchsvc.store.sql import HEAD_REVISION, MIGRATIONS

    # Every migration in turn, from an empty database: what an old store goes through, and
    # the schema a new store is created with at once (create_all, stamped at the head).
    engine = create_engine(sql_url(request, tmp_path, database))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert compare_metadata(context, Base.metadata) == []
        assert context.get_current_revision() == HEAD_REVISION
    engine.dispose()


def test_a_new_store_is_created_at_the_head_revision_alembic_recognises(
        sql_store: SqlStore) -> None:
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.config import Config
    from alembic.migration import MigrationContext

    from searchsvc.store.schema import Base
    from searchsvc.store.sql import HEAD_REVISION, MIGRATIONS

    with sql_store.engine.connect() as connection:  # SqlStore created it on open
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == HEAD_REVISION
        assert compare_metadata(context, Base.metadata) == []
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with sql_store.engine.begin() as connection:  # a later migration would start from here
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        assert MigrationContext.configure(connection).get_current_revision() == HEAD_REVISION


def test_tokens_are_stored_hashed(sql_store: SqlStore) -> None:
    from sqlalchemy import text

    token = sql_store.create_token("ada")
    assert sql_store.user_for_token(token) == "ada"
    with sql_store.engine.connect() as connection:
        stored = connection.execute(text("SELECT token_hash FROM tokens")).scalars().all()
    assert token not in stored and len(stored) == 1
