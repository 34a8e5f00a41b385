"""The REST API (FastAPI; OpenAPI at /openapi.json): create studies from study files, list and
read them and their trials. Every call but /health needs a bearer token; a user sees only
their own studies (another user's answers 404, as an unknown one does); a submitted study may
only name objectives under the server's allowed module prefixes."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from searchsvc import __version__
from searchsvc.errors import ConflictError, SearchsvcError, SpecError
from searchsvc.service.access import ReportFormat, ServiceStudies
from searchsvc.service.scheduler import StudyScheduler
from searchsvc.service.ui import SignInRequired, sign_in_redirect, ui_router
from searchsvc.spec import json_schema
from searchsvc.store import Store, StudyRecord, TrialRecord

MAX_BODY_BYTES = 256 * 1024  # a study file is a few KB


@dataclass(frozen=True)
class ServiceConfig:
    """What a running service is allowed to do."""

    allow_objectives: tuple[str, ...] = ("objectives.",)
    max_body_bytes: int = MAX_BODY_BYTES


def create_app(store: Store, config: ServiceConfig | None = None,
               scheduler: StudyScheduler | None = None) -> FastAPI:
    """The API on ``store``; with a ``scheduler``, submitted studies also run."""
    config = config or ServiceConfig()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if scheduler is not None:
            scheduler.start()
        yield
        if scheduler is not None:
            scheduler.stop()

    app = FastAPI(title="searchsvc", version=__version__, lifespan=lifespan,
                  description="Hyperparameter studies on Ray Tune: submit, watch, read.")
    bearer = HTTPBearer(auto_error=False)

    # The token check and the list/get reads are `async def`: their store calls (about a
    # millisecond, a 1,000-trial listing ~15 ms) run on the event loop. As `def` each request
    # went to a worker thread and back three times, and under load those hand-offs of the GIL
    # between threads cost more than the calls (benchmarks/service_load.py, 50 clients: p99 of
    # 318 against 133 ms). What can take long (reports, every step of every trial) stays in
    # threads.
    async def user(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
                   ) -> str:
        name = store.user_for_token(credentials.credentials) if credentials else None
        if name is None:
            raise HTTPException(401, "a valid bearer token is required",
                                headers={"WWW-Authenticate": "Bearer"})
        return name

    User = Annotated[str, Depends(user)]

    studies = ServiceStudies(store, scheduler)
    owned = studies.owned
    app.include_router(ui_router(studies))
    app.add_exception_handler(SignInRequired, sign_in_redirect)  # type: ignore[arg-type]

    @app.exception_handler(SearchsvcError)
    async def _searchsvc_error(request: Request, exc: SearchsvcError) -> JSONResponse:
        body: dict[str, Any] = {"detail": str(exc)}
        if isinstance(exc, SpecError):
            body["errors"] = [i.render() for i in exc.issues]
        return JSONResponse(body, status_code=exc.http_status)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    # The handler reads the raw body, so FastAPI cannot describe it: declared here, clients
    # and the OpenAPI fuzz test (tests/service/test_openapi_fuzz.py) see what to send.
    @app.post("/studies", status_code=201,
              openapi_extra={"requestBody": _study_file_body()})
    async def create(request: Request, owner: User) -> dict[str, Any]:
        """Create a study from a study file, sent as YAML or JSON. 422 carries exactly the
        messages of ``searchsvc validate``."""
        body = await _limited_body(request, config.max_body_bytes)
        from searchsvc.runner import RunOptions, create_study
        from searchsvc.validation import validate_text

        spec = validate_text(body, file="<request>")
        if not _allowed(spec.objective, config.allow_objectives):
            raise HTTPException(422, f"objective {spec.objective!r} is not allowed: this server "
                                "runs only objectives under the module prefixes "
                                f"{', '.join(config.allow_objectives)} (serve "
                                "--allow-objectives)")
        try:
            study = create_study(spec, store, RunOptions(), owner=owner)
        except ConflictError:
            raise HTTPException(409, f"a study named {spec.name!r} already exists") from None
        return _study_json(study)

    @app.get("/studies")
    async def list_studies(owner: User) -> list[dict[str, Any]]:
        return [_study_json(s) for s in store.list_studies(owner=owner)]

    @app.get("/studies/{name}")
    async def get_study(name: str, owner: User) -> dict[str, Any]:
        return _study_json(owned(name, owner))

    @app.get("/studies/{name}/trials")
    async def list_trials(name: str, owner: User,
                          curves: Annotated[bool, Query(description="include every step")] = False,
                          ) -> list[dict[str, Any]]:
        owned(name, owner)
        if curves:
            return await run_in_threadpool(_trials_json, store, name, curves)
        return _trials_json(store, name, curves)

    @app.get("/studies/{name}/report")
    def report(name: str, owner: User,
               format: Annotated[ReportFormat, Query()] = "html",
               ) -> FileResponse:
        """The study's report (written now from the store): html, md, json, or csv (trials)."""
        owned(name, owner)
        return studies.report_response(name, format)

    @app.post("/studies/{name}/cancel")
    def cancel(name: str, owner: User) -> dict[str, Any]:
        """Stop a queued or running study (running trials are marked interrupted)."""
        return _study_json(studies.cancel(name, owner))

    @app.post("/studies/{name}/resume")
    def resume(name: str, owner: User) -> dict[str, Any]:
        """Queue a stopped study again: its unfinished trials run, finished ones are kept."""
        return _study_json(studies.resume(name, owner))

    return app


async def _limited_body(request: Request, limit: int) -> str:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body over {limit} bytes")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"request body over {limit} bytes")
    try:
        return body.decode()
    except UnicodeDecodeError:
        raise HTTPException(422, "the study file must be UTF-8 text") from None


def _study_file_body() -> dict[str, Any]:
    """The OpenAPI request body of POST /studies: one study file (the JSON Schema that
    ``searchsvc schema`` prints), as YAML or JSON."""
    schema = json_schema()
    schema.pop("$schema", None)
    # Inlined: its "#/$defs/..." references would resolve against the OpenAPI document.
    schema = _inline_refs(schema, schema.pop("$defs", {}))
    return {"required": True, "description": "A study file, as `searchsvc validate` reads it.",
            "content": {media: {"schema": schema}
                        for media in ("application/yaml", "application/json")}}


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every ``{"$ref": "#/$defs/NAME", ...}`` replaced by ``defs[NAME]`` (merged
    with the reference's other keys); the study file's models are not recursive."""
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline_refs({**defs[ref.removeprefix("#/$defs/")], **rest}, defs)
    return {key: _inline_refs(value, defs) for key, value in node.items()}


def _allowed(objective: str, prefixes: Sequence[str]) -> bool:
    module = objective.partition(":")[0]
    return any(module.startswith(p) or module == p.rstrip(".") for p in prefixes)


def _study_json(s: StudyRecord) -> dict[str, Any]:
    return {"name": s.name, "state": s.state, "metric": s.metric, "mode": s.mode,
            "searcher": s.searcher, "total_trials": s.total_trials,
            "trial_counts": dict(s.trial_counts), "best_value": s.best_value,
            "created_at": s.created_at, "started_at": s.started_at,
            "finished_at": s.finished_at}


def _trials_json(store: Store, name: str, curves: bool) -> list[dict[str, Any]]:
    return [_trial_json(t, curves) for t in store.get_trials(name, measurements=curves)]


def _trial_json(t: TrialRecord, curves: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "number": t.number, "state": t.state, "config": dict(t.config), "arm": dict(t.arm),
        "best_value": t.best_value, "best_step": t.best_step, "last_step": t.last_step,
        "attempts": t.attempts, "error": t.error, "node": t.node}
    if curves:
        out["measurements"] = [{"step": m.step, "attempt": m.attempt, "value": m.value,
                                "metrics": dict(m.metrics)} for m in t.measurements]
    return out
