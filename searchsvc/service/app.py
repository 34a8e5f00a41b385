"""The REST API (FastAPI; OpenAPI at /openapi.json): create studies from study files, list and
read them and their trials, upload code bundles. Every call but /health needs a bearer token; a
user sees only their own studies (another user's answers 404, as an unknown one does); a
submitted study may only make the service import modules under the server's allowed prefixes,
or from a code bundle that a token created with ``--allow-code`` uploaded. Every input costs
bounded work: study files are held to :class:`SpecLimits` and validated in a worker thread
with a time limit, so one request cannot stall the others."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from searchsvc import __version__
from searchsvc.codebundle import BundleLimits, CodeBundle, find_bundle, store_bundle
from searchsvc.core import StudyRecord, TokenGrant, TrialRecord
from searchsvc.errors import (
    ConflictError,
    PermissionDeniedError,
    SearchsvcError,
    SpecError,
)
from searchsvc.service.access import ReportFormat, ServiceStudies, check_quota
from searchsvc.service.scheduler import StudyScheduler
from searchsvc.service.ui import SignInRequired, sign_in_redirect, ui_router
from searchsvc.spec import SpecLimits, StudySpec, json_schema
from searchsvc.store import Store, searchsvc_home
from searchsvc.store.jsonutil import encode

MAX_BODY_BYTES = 256 * 1024  # a study file is a few KB
# What one study may ask of a shared server (each a `serve` option); tighter than what
# `searchsvc validate` accepts on a user's own machine (searchsvc.spec.limits).
SERVER_LIMITS = SpecLimits(max_trials=10_000, max_parameters=100, max_grid_points=10_000,
                           max_arms=1_000)
T = TypeVar("T")


@dataclass(frozen=True)
class ServiceConfig:
    """What a running service is allowed to do."""

    allow_objectives: tuple[str, ...] = ("objectives.",)
    allow_tracking_uris: tuple[str, ...] = ()  # MLflow tracking URI prefixes studies may use
    max_body_bytes: int = MAX_BODY_BYTES
    limits: SpecLimits = SERVER_LIMITS
    max_queued_per_user: int = 20  # studies created or running at once, per user
    request_timeout_s: float = 10.0  # validating a study file, unpacking a bundle
    code_root: Path = field(default_factory=lambda: searchsvc_home() / "code")
    code_limits: BundleLimits = field(default_factory=BundleLimits)


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
    async def grant(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                           Depends(bearer)]) -> TokenGrant:
        found = store.grant_for_token(credentials.credentials) if credentials else None
        if found is None:
            raise HTTPException(401, "a valid bearer token is required",
                                headers={"WWW-Authenticate": "Bearer"})
        return found

    async def user(found: Annotated[TokenGrant, Depends(grant)]) -> str:
        return found.user

    Grant = Annotated[TokenGrant, Depends(grant)]
    User = Annotated[str, Depends(user)]
    # CPU-heavy request work (validating a study file, unpacking a bundle) runs in at most two
    # threads and is abandoned after request_timeout_s: the event loop, /health and other
    # users' reads never wait for it.
    heavy = anyio.CapacityLimiter(2)

    async def off_loop(work: Callable[[], T], what: str) -> T:
        with anyio.move_on_after(config.request_timeout_s):
            return await anyio.to_thread.run_sync(work, limiter=heavy,
                                                   abandon_on_cancel=True)
        raise HTTPException(503, f"{what} took more than {config.request_timeout_s:g} s; "
                            "try again, or ask for less")

    studies = ServiceStudies(store, scheduler, config.max_queued_per_user)
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
        """``degraded`` while the store is unreachable: the service and its running studies
        ride through it (retrying), requests that need the store wait or fail with 503."""
        down = store.unreachable()
        return {"status": "degraded" if down else "ok", "version": __version__,
                "store": f"unreachable: {down}" if down else "ok"}

    # The handler reads the raw body, so FastAPI cannot describe it: declared here, clients
    # and the OpenAPI fuzz test (tests/service/test_openapi_fuzz.py) see what to send.
    @app.post("/studies", status_code=201,
              openapi_extra={"requestBody": _study_file_body()})
    async def create(request: Request, token: Grant,
                     code: Annotated[str | None, Query(
                         description="sha256 of a code bundle uploaded with POST /code, which "
                         "the study's objective imports from (needs a code token)",
                         pattern="^[0-9a-f]{64}$")] = None,
                     preflight: Annotated[bool, Query(
                         description="false: start the study without preflight (the "
                         "objective at the centre of the space for a few steps)")] = True,
                     ) -> dict[str, Any]:
        """Create a study from a study file, sent as YAML or JSON. 422 carries exactly the
        messages of ``searchsvc validate``, and names any module the server may not import."""
        body = await _limited_body(request, config.max_body_bytes)

        def create_checked() -> StudyRecord:
            # Finding the bundle walks its files (for provenance): off the loop too.
            bundle = _bundle_for(code, token) if code is not None else None
            spec = _checked_spec(body, config, bundle)
            check_quota(store, token.user, config.max_queued_per_user)
            from searchsvc import usecases

            try:  # the objective's module is located, never imported, in the API process
                return usecases.create(spec, store, owner=token.user, code=bundle,
                                       import_objective=False, preflight=preflight)
            except ConflictError:
                raise HTTPException(409, f"a study named {spec.name!r} already exists"
                                    ) from None

        return _study_json(await off_loop(create_checked, "creating the study"))

    def _bundle_for(code: str, token: TokenGrant) -> CodeBundle:
        _may_use_code(token)
        bundle = find_bundle(config.code_root, code)
        if bundle is None:
            raise HTTPException(422, f"no code bundle {code}: upload it first (POST /code)")
        return bundle

    @app.post("/code", status_code=201, openapi_extra={"requestBody": _code_body()})
    async def upload_code(request: Request, token: Grant) -> dict[str, Any]:
        """Store a code bundle (a gzipped tar of the user's code, as ``searchsvc submit --code``
        packs it) under its sha256; studies then name it with ``?code=``. Only tokens created
        with ``--allow-code`` may: the code runs on the cluster with the service's rights."""
        _may_use_code(token)
        body = await _limited_bytes(request, config.code_limits.max_packed_bytes)
        bundle = await off_loop(
            lambda: store_bundle(body, config.code_root, config.code_limits),
            "unpacking the code bundle")
        return {"sha256": bundle.sha256, "files": bundle.files, "bytes": bundle.bytes}

    @app.get("/objectives/allowed")
    async def allowed_objectives(token: Grant) -> dict[str, Any]:
        """The module prefixes this server imports objectives from without uploaded code
        (``serve --allow-objectives``), and whether this token may upload code: what
        ``searchsvc submit`` reads to choose between uploading the study's folder and letting
        the server import the objective itself."""
        return {"allow_objectives": list(config.allow_objectives),
                "may_upload_code": token.allow_code}

    @app.get("/studies")
    async def list_studies(owner: User) -> list[dict[str, Any]]:
        return [_study_json(s) for s in store.list_studies(owner=owner)]

    @app.get("/studies/{name}")
    async def get_study(name: str, owner: User) -> dict[str, Any]:
        """The study, with its study file and provenance (what ``searchsvc.load`` needs to
        analyse it as a local study)."""
        return _study_json(owned(name, owner), detail=True)

    @app.get("/studies/{name}/trials")
    async def list_trials(name: str, owner: User,
                          curves: Annotated[bool, Query(description="include every step")] = False,
                          curves_of: Annotated[list[int] | None, Query(
                              description="include every step of these trials only (trial "
                              "numbers; repeat the parameter)", max_length=1000)] = None,
                          ) -> list[dict[str, Any]]:
        owned(name, owner)
        wanted: bool | set[int] = True if curves else set(curves_of or ())
        if wanted:
            return await run_in_threadpool(_trials_json, store, name, wanted)
        return _trials_json(store, name, False)

    @app.get("/studies/{name}/events")
    async def list_events(name: str, owner: User) -> list[dict[str, Any]]:
        """What the study's schedulers did to its trials (Hyperband/ASHA stops, PBT exploits,
        retries), in order: the report's rungs and lineage come from these."""
        owned(name, owner)
        return [{"number": e.number, "kind": e.kind, "step": e.step, "data": dict(e.data),
                 "recorded_at": e.recorded_at} for e in store.get_events(name)]

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
        """Queue a stopped study again: its unfinished trials run, finished ones are kept. It
        counts against the user's queue limit as a new study does (429 when full)."""
        return _study_json(studies.resume(name, owner))

    return app


async def _limited_bytes(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body over {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"request body over {limit} bytes")
    return bytes(body)


async def _limited_body(request: Request, limit: int) -> str:
    try:
        return (await _limited_bytes(request, limit)).decode()
    except UnicodeDecodeError:
        raise HTTPException(422, "the study file must be UTF-8 text") from None


def _checked_spec(body: str, config: ServiceConfig, bundle: CodeBundle | None) -> StudySpec:
    """The valid spec in ``body`` within the server's limits, every module it imports allowed
    (or in ``bundle``); nothing is imported to find out."""
    from searchsvc.service.allowlist import refused_references, refused_tracking
    from searchsvc.usecases import validate_text

    spec = validate_text(body, file="<request>", limits=config.limits)
    refused = [*refused_references(spec, config.allow_objectives,
                                   bundle.path if bundle is not None else None),
               *refused_tracking(spec, config.allow_tracking_uris)]
    if refused:
        raise SpecError(refused)
    return spec


def _may_use_code(token: TokenGrant) -> None:
    if not token.allow_code:
        raise PermissionDeniedError(
            f"this token (user {token.user!r}) may not upload or use code: ask the server's "
            "admin for one made with `searchsvc tokens create NAME --allow-code`")


def _code_body() -> dict[str, Any]:
    return {"required": True, "description": "A gzipped tar of the code (searchsvc submit "
            "--code packs one).",
            "content": {"application/octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}}


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


def _study_json(s: StudyRecord, detail: bool = False) -> dict[str, Any]:
    out = {"name": s.name, "state": s.state, "metric": s.metric, "mode": s.mode,
           "searcher": s.searcher, "total_trials": s.total_trials,
           # core.judging's counts (search trials by state, seed repeats apart) and best
           "trial_counts": dict(s.trial_counts), "repeat_counts": dict(s.repeat_counts),
           "best_value": s.best_value,
           "constraints": [{"metric": c.metric, "min": c.low, "max": c.high}
                           for c in s.constraints],
           "created_at": s.created_at, "started_at": s.started_at,
           "finished_at": s.finished_at}
    if detail:
        out.update(owner=s.owner, spec_file=s.spec_file, spec_text=s.spec_text,
                   provenance=dict(s.provenance))
    return out


def _trials_json(store: Store, name: str, curves: bool | set[int]) -> list[dict[str, Any]]:
    """The study's trials, with every step of all (``True``) or of the trials numbered in
    ``curves``."""
    trials = store.get_trials(name, measurements=curves)
    if isinstance(curves, bool):
        return [_trial_json(t, curves) for t in trials]
    return [_trial_json(t, t.number in curves) for t in trials]


def _trial_json(t: TrialRecord, curves: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "number": t.number, "state": t.state, "config": dict(t.config), "arm": dict(t.arm),
        "best_value": t.best_value, "best_step": t.best_step, "last_step": t.last_step,
        "attempts": t.attempts, "error": t.error, "node": t.node, "seed": t.seed,
        "repeat_of": t.repeat_of, "started_at": t.started_at, "finished_at": t.finished_at,
        "checkpoints": list(t.checkpoints), "final_metrics": encode(dict(t.final_metrics))}
    if curves:
        # JSON has no NaN or infinity: a diverged trial's metrics come as "NaN", "Infinity"
        # and "-Infinity", as the store keeps them.
        out["measurements"] = [{"step": m.step, "attempt": m.attempt, "value": m.value,
                                "metrics": encode(dict(m.metrics)),
                                "telemetry": encode(dict(m.telemetry)),
                                "recorded_at": m.recorded_at} for m in t.measurements]
    return out

