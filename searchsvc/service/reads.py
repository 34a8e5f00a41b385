"""The routes that read a user's studies, their trials, events and reports, and stop or
queue them again; and the JSON shapes of studies and trials (counts and best from core.judging,
as every surface shows them)."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse

from searchsvc.core.wire import encode, study_json, trial_json
from searchsvc.service.access import ReportFormat
from searchsvc.service.context import ApiContext, User
from searchsvc.store import Store


def reads_router(ctx: ApiContext) -> APIRouter:
    """GET /studies, /studies/{name}, its trials, events and report; POST cancel and
    resume. A user sees only their own studies (another's answers 404, as an unknown one)."""
    router = APIRouter()
    store, studies, owned = ctx.store, ctx.studies, ctx.studies.owned

    @router.get("/studies")
    async def list_studies(owner: User) -> list[dict[str, Any]]:
        return [study_json(s) for s in store.list_studies(owner=owner)]

    @router.get("/studies/{name}")
    async def get_study(name: str, owner: User) -> dict[str, Any]:
        """The study, with its study file and provenance (what ``searchsvc.load`` needs to
        analyse it as a local study)."""
        return study_json(owned(name, owner), detail=True)

    @router.get("/studies/{name}/trials")
    async def list_trials(name: str, owner: User,
                          curves: Annotated[bool, Query(description="include every step")] = False,
                          curves_of: Annotated[list[int] | None, Query(
                              description="include every step of these trials only (trial "
                              "numbers; repeat the parameter)", max_length=1000)] = None,
                          ) -> list[dict[str, Any]]:
        owned(name, owner)
        wanted: bool | set[int] = True if curves else set(curves_of or ())
        if wanted:
            return await run_in_threadpool(trials_json, store, name, wanted)
        return trials_json(store, name, False)

    @router.get("/studies/{name}/events")
    async def list_events(name: str, owner: User) -> list[dict[str, Any]]:
        """What the study's schedulers did to its trials (Hyperband/ASHA stops, PBT exploits,
        retries), in order: the report's rungs and lineage come from these."""
        owned(name, owner)
        return [{"number": e.number, "kind": e.kind, "step": e.step, "data": dict(e.data),
                 "recorded_at": e.recorded_at} for e in store.get_events(name)]

    @router.get("/studies/{name}/report")
    def report(name: str, owner: User,
               format: Annotated[ReportFormat, Query()] = "html",
               ) -> FileResponse:
        """The study's report (written now from the store): html, md, json, or csv (trials)."""
        owned(name, owner)
        return studies.report_response(name, format)

    @router.get("/campaigns/{name}")
    def get_campaign(name: str, owner: User) -> dict[str, Any]:
        """Campaign ``name``'s timeline (as ``searchsvc campaign --json``): each round's search
        space, best with its seed noise, verdicts, the decisions that made it with their
        evidence, and compute spent. Only the user's own studies count."""
        from searchsvc import usecases

        return encode(usecases.campaign(name, store, owner=owner).as_dict())

    @router.get("/queue")
    def queue(owner: User) -> dict[str, Any]:
        """The caller's queued and running studies on the shared cluster, each with its
        priority, allowance (trials it may run at once), running trials, queue position and
        the line that says why it waits; other users' work only as load. 503 on a server that
        runs no studies."""
        return studies.queue(owner)

    @router.post("/studies/{name}/cancel")
    def cancel(name: str, owner: User) -> dict[str, Any]:
        """Stop a queued or running study (running trials are marked interrupted)."""
        return study_json(studies.cancel(name, owner))

    @router.post("/studies/{name}/resume")
    def resume(name: str, owner: User) -> dict[str, Any]:
        """Queue a stopped study again: its unfinished trials run, finished ones are kept. It
        counts against the user's queue limit as a new study does (429 when full)."""
        return study_json(studies.resume(name, owner))

    return router


def trials_json(store: Store, name: str, curves: bool | set[int]) -> list[dict[str, Any]]:
    """The study's trials, with every step of all (``True``) or of the trials numbered in
    ``curves``."""
    trials = store.get_trials(name, measurements=curves)
    if isinstance(curves, bool):
        return [trial_json(t, curves) for t in trials]
    return [trial_json(t, t.number in curves) for t in trials]
