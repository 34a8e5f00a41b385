"""The REST API (FastAPI; OpenAPI at /openapi.json): create studies from study files, list and
read them and their trials, upload code bundles. Every call but /health needs a bearer token; a
user sees only their own studies (another user's answers 404, as an unknown one does); a
submitted study may only make the service import modules under the server's allowed prefixes,
or from a code bundle that a token created with ``--allow-code`` uploaded. Every input costs
bounded work: study files are held to :class:`SpecLimits` and validated in a worker thread
with a time limit, so one request cannot stall the others."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from searchsvc import __version__
from searchsvc.errors import SearchsvcError, SpecError
from searchsvc.service.access import ServiceStudies
from searchsvc.service.capacity import cluster_summary
from searchsvc.service.config import MAX_BODY_BYTES, SERVER_LIMITS, ServiceConfig
from searchsvc.service.context import ApiContext
from searchsvc.service.reads import reads_router
from searchsvc.service.runner import StudyRunner
from searchsvc.service.submit import submit_router
from searchsvc.service.ui import SignInRequired, sign_in_redirect, ui_router
from searchsvc.store import Store

__all__ = ["MAX_BODY_BYTES", "SERVER_LIMITS", "ServiceConfig", "create_app"]

def create_app(store: Store, config: ServiceConfig | None = None,
               runner: StudyRunner | None = None) -> FastAPI:
    """The API on ``store``; with a ``runner``, submitted studies also run."""
    config = config or ServiceConfig()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if runner is not None:
            runner.start()
        yield
        if runner is not None:
            runner.stop()

    app = FastAPI(title="searchsvc", version=__version__, lifespan=lifespan,
                  description="Hyperparameter studies on Ray Tune: submit, watch, read.")
    studies = ServiceStudies(store, runner, config.max_queued_per_user)
    ctx = ApiContext(store, config, studies)
    app.state.api = ctx
    app.include_router(submit_router(ctx))
    app.include_router(reads_router(ctx))
    app.include_router(ui_router(studies))
    app.add_exception_handler(SignInRequired, sign_in_redirect)  # type: ignore[arg-type]
    app.add_exception_handler(SearchsvcError, _searchsvc_error)  # type: ignore[arg-type]

    @app.get("/health")
    def health() -> dict[str, str]:
        """``degraded`` while the store is unreachable: the service and its running studies
        ride through it (retrying), requests that need the store wait or fail with 503.
        ``cluster``: what the studies run on, as submissions are checked against it."""
        down = store.unreachable()
        found = {"status": "degraded" if down else "ok", "version": __version__,
                 "store": f"unreachable: {down}" if down else "ok"}
        if runner is not None:
            found["cluster"] = cluster_summary(runner.cluster.nodes())
        return found

    return app


async def _searchsvc_error(request: Request, exc: SearchsvcError) -> JSONResponse:
    body: dict[str, Any] = {"detail": str(exc)}
    if isinstance(exc, SpecError):
        body["errors"] = [i.render() for i in exc.issues]
    return JSONResponse(body, status_code=exc.http_status)
