"""The published OpenAPI document, fuzzed with schemathesis: no request to any operation it lists
(valid or schema-violating data, with or without a valid bearer token, naming the user's study
or an unknown one) gets a server error (5xx).

Reproducible: generation is derandomized, so every run sends the same requests. A failure prints
the request as a curl command; add it to test_api.py as a plain regression test with the fix."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import yaml
from fastapi.testclient import TestClient
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.transport.serialization import Binary

from searchsvc.service import ServiceConfig, create_app
from searchsvc.service.runner import StudyRunner
from searchsvc.store import SqlStore
from tests.archives import tar_gz

ROOT = Path(__file__).resolve().parents[2]


SPEC = (ROOT / "spaces" / "quickstart.yaml").read_text()
QUICKSTART: dict[str, Any] = yaml.safe_load(SPEC)
STUDY = QUICKSTART["study"]
# Fuzzing-phase examples per operation (and generation mode). Schemathesis's example and
# coverage phases (boundary values, missing or wrong-typed parameters, missing token, other
# methods) add a bounded number of their own: about 850 requests in all.
MAX_EXAMPLES = 30
ARCHIVES = [tar_gz(("train.py", b"def train(config):\n    return 0.0\n")),
            tar_gz(("../escape.py", b"x")), tar_gz(("a/b.py", b"x"), ("/abs.py", b"x"))]

Statuses = collections.Counter[tuple[str, int]]


def _without_lifespan(app: Any) -> Any:
    """``app`` with its lifespan refused: schemathesis's ASGI client starts an app's lifespan
    (and keeps it for the rest of the process), and this app's would start the runner, which
    launches real `searchsvc resume` processes for queued studies."""

    async def no_lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return  # an app that returns at once has no lifespan (the ASGI spec)
        await app(scope, receive, send)

    return no_lifespan


@pytest.fixture
def api_schema(tmp_path: Path) -> schemathesis.BaseSchema:
    """The app's OpenAPI document, loaded from the app in-process, over a fresh store where user
    "ada" (whose token schemathesis sends) owns study "quickstart"."""
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    # A code token: uploads (POST /code, POST /studies?code=) get past the permission check.
    token = store.create_token("ada", allow_code=True)
    # A real runner, never started (see _without_lifespan): cancel and resume change the
    # study's state in the store, as on a server that runs studies, and nothing is launched.
    app = create_app(store, ServiceConfig(max_body_bytes=20_000, code_root=tmp_path / "code"),
                     runner=StudyRunner(store))
    created = TestClient(app).post("/studies", content=SPEC,
                                   headers={"Authorization": f"Bearer {token}"})
    assert created.status_code == 201, created.text
    config = schemathesis.Config.from_dict({
        "seed": 20240501,
        "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "deterministic": True,
                       "database": "none"},
        # Sent wherever the document asks for the bearer token, except in the cases that test
        # its absence.
        "auth": {"openapi": {"HTTPBearer": {"bearer": token}}},
        # Generated strings are mostly unknown study names and malformed study files; these
        # values, drawn often, let requests get past the lookup and the first checks.
        "dictionaries": {
            "studies": {"values": [STUDY]},
            "new-studies": {"values": ["fuzzed", "fuzzed-2"]},
            "objectives": {"values": [
                "objectives.synthetic:playbook", "objectives.missing:train",
                "objectives.synthetic:nothing", "os:system"]},
            "metrics": {"values": ["val_loss"]},
            "searchers": {"values": [
                "grid", "random", "quasi_random", "bayesian", "hyperband", "asha", "bohb",
                "pbt", "nas"]},
        },
        "parameters": {
            "path.name": {"dictionary": "studies", "probability": 0.5},
            "body.study": {"dictionary": "new-studies", "probability": 0.7},
            "body.objective": {"dictionary": "objectives", "probability": 0.7},
            "body.metric": {"dictionary": "metrics", "probability": 0.7},
            "body.searcher": {"dictionary": "searchers", "probability": 0.7},
        },
    })
    schema = schemathesis.openapi.from_asgi("/openapi.json", _without_lifespan(app),
                                           config=config)

    @schema.hook
    def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
        """Half the study files: the quickstart's with the generated top-level fields laid over
        it. Generated files are almost never valid as a whole (the rules tie fields together),
        so without these no request would get past validation to study creation."""
        if isinstance(body, Binary):  # POST /code: also real archives, good and hostile
            return st.sampled_from([body, *(Binary(a) for a in ARCHIVES)])
        if not isinstance(body, dict):
            return st.just(body)
        overlaid = {**QUICKSTART, **{k: v for k, v in body.items() if k != "parameters"}}
        return st.sampled_from([body, overlaid])

    return schema


@pytest.fixture(autouse=True)
def _pytest_9_2_node_id(request: pytest.FixtureRequest) -> None:
    # schemathesis 4.32's from_fixture reads and rewrites Node._nodeid (to name each operation in
    # reports), which pytest 9.2 no longer has; without it the test errors before any request.
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


@pytest.fixture
def statuses(api_schema: schemathesis.BaseSchema) -> Iterator[Statuses]:
    """Responses per (operation, status); after the test, checks that the fuzzing reached every
    operation's handler: one that only ever answered 401 (or 405, to a request with another
    method) was never sent the token, and this test would pass whatever its handler does."""
    seen: Statuses = collections.Counter()
    yield seen
    for result in api_schema.get_all_operations():
        operation = result.ok().label
        assert any(o == operation and status not in (401, 405) for o, status in seen), (
            f"{operation} never got past authentication", sorted(seen.items()))
    # The upload got real archives: stored (201) and hostile ones refused (422).
    assert seen["POST /code", 201] and seen["POST /code", 422], sorted(seen.items())


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
def test_no_request_gets_a_server_error(case: schemathesis.Case, statuses: Statuses) -> None:
    response = case.call_and_validate(checks=[not_a_server_error])
    statuses[case.operation.label, response.status_code] += 1
