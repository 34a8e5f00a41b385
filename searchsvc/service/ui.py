"""The web UI: server-rendered pages (Jinja2, no front-end build) over the same store and rules
as the REST API. A user signs in with their API token, which is kept in an HttpOnly,
SameSite=Strict cookie (so another site can neither read it nor post forms with it); an
``Authorization: Bearer`` header works too. Pages: the user's studies with live progress, a
study with its trials and a progress plot, and its report."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
import functools
import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from searchsvc import __version__, usecases
from searchsvc.core import StudyRecord, StudyState, TrialRecord
from searchsvc.core.durations import format_duration
from searchsvc.core.judging import best_trial, by_value, ranked
from searchsvc.service.access import REPORT_FORMATS, ServiceStudies

COOKIE = "searchsvc_token"
REFRESH_S = 5  # how often a page with a live study reloads itself
MAX_ERROR_CHARS = 160  # a trial's error's end in the table; its page has it whole
MAX_TRIAL_ROWS = 500  # a study page stays light; trials.csv has every trial
LIVE_STATES = (StudyState.CREATED, StudyState.RUNNING)
MISSING = "\N{EN DASH}"  # an empty cell


class SignInRequired(Exception):
    """Raised by a page that needs a user when the request carries no valid token."""

    def __init__(self, path: str):
        self.path = path


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("searchsvc.service", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["when"] = _when
    env.filters["duration"] = _duration
    env.filters["number"] = _number
    env.filters["url"] = lambda s: quote(str(s), safe="")
    env.globals["version"] = __version__
    return env


class _Pages:
    """Renders the UI's templates with the headers every page carries."""

    def __init__(self) -> None:
        self.templates = _environment()

    def __call__(self, name: str, request: Request, status_code: int = 200, **context: Any
                 ) -> HTMLResponse:
        html = self.templates.get_template(name).render(request=request, **context)
        return HTMLResponse(html, status_code=status_code,
                            headers={"Cache-Control": "no-store",
                                     "X-Frame-Options": "DENY",
                                     "Content-Security-Policy": _CSP})


def _viewer(request: Request) -> str:
    """The signed-in user (the cookie's token, or a bearer header); SignInRequired if none."""
    token = request.cookies.get(COOKIE) or _bearer(request)
    user = request.app.state.api.store.user_for_token(token) if token else None
    if user is None:
        raise SignInRequired(request.url.path)
    return user


Viewer = Annotated[str, Depends(_viewer)]


def ui_router(studies: ServiceStudies) -> APIRouter:
    """The UI's pages, mounted under /ui (and / redirects there)."""
    router = APIRouter(include_in_schema=False)
    page = _Pages()
    _session_routes(router, studies, page)
    _study_pages(router, studies, page)
    _study_actions(router, studies)
    return router


def _session_routes(router: APIRouter, studies: ServiceStudies, page: _Pages) -> None:
    """Signing in and out, and what every page loads: the favicon, plotly.js."""
    @router.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=303)

    @router.get("/favicon.ico")
    def favicon() -> Response:
        return Response(_FAVICON, media_type="image/svg+xml",
                        headers={"Cache-Control": "public, max-age=86400"})

    @router.get("/ui/login")
    def login_form(request: Request, next: str = "/ui") -> HTMLResponse:
        return page("login.html", request, next=_local(next), error=None)

    @router.post("/ui/login")
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body())[:4096].decode(errors="replace"))
        token = (form.get("token") or [""])[0].strip()
        target = _local((form.get("next") or ["/ui"])[0])
        if not token or studies.store.user_for_token(token) is None:
            return page("login.html", request, status_code=401, next=target,
                        error="That token is not valid. Create one with "
                              "`searchsvc tokens create NAME` on the server.")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https", max_age=30 * 86400)
        return response

    @router.post("/ui/logout")
    def logout() -> RedirectResponse:
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    @router.get("/ui/static/plotly.min.js")
    def plotly_js() -> Response:
        return Response(_plotly_js(), media_type="application/javascript",
                        headers={"Cache-Control": "public, max-age=86400"})



def _study_pages(router: APIRouter, studies: ServiceStudies, page: _Pages) -> None:
    """The user's studies, one study with its trials, one trial with its telemetry."""
    @router.get("/ui")
    def study_list(request: Request, user: Viewer) -> HTMLResponse:
        rows = [_study_view(s) for s in studies.store.list_studies(owner=user)]
        rows.sort(key=lambda r: r["created_at"] or 0, reverse=True)
        live = any(r["state"] in LIVE_STATES for r in rows)
        return page("studies.html", request, user=user, studies=rows,
                    refresh=REFRESH_S if live else None)

    @router.get("/ui/studies/{name}")
    def study_page(name: str, request: Request, user: Viewer,
                   sort: Literal["number", "best"] = "number") -> HTMLResponse:
        study = studies.owned(name, user)
        trials = studies.store.get_trials(name)
        view = _study_view(study)
        rows = _trial_rows(study, trials, sort)
        return page("study.html", request, user=user, study=view, sort=sort,
                    parameters=_parameter_names(trials), trials=rows[:MAX_TRIAL_ROWS],
                    hidden_trials=max(0, len(rows) - MAX_TRIAL_ROWS),
                    plot=_progress_plot(study, trials),
                    refresh=REFRESH_S if view["state"] in LIVE_STATES else None,
                    can_cancel=view["state"] in LIVE_STATES and studies.runs_studies,
                    can_resume=view["state"] == StudyState.INTERRUPTED and studies.runs_studies,
                    campaign=_campaign_of(study), share=studies.share_line(name, user))

    @router.get("/ui/campaigns/{name}")
    def campaign_page(name: str, request: Request, user: Viewer) -> HTMLResponse:
        """A campaign's rounds as a timeline (``searchsvc campaign``)."""
        found = usecases.campaign(name, studies.store, owner=user)
        return page("campaign.html", request, user=user, campaign=found,
                    plot=_campaign_plot(found))

    @router.get("/ui/studies/{name}/trials/{number}")
    def trial_page(name: str, number: int, request: Request, user: Viewer) -> HTMLResponse:
        """One trial: its config, outcome and the telemetry of every step (worker/
        telemetry.py), with its summary."""
        study = studies.owned(name, user)
        found = [t for t in studies.store.get_trials(name, measurements=[number])
                 if t.number == number]
        if not found:
            raise HTTPException(404, f"study {name!r} has no trial {number}")
        trial = found[0]
        steps = [m for m in trial.measurements if m.attempt == trial.attempts]
        columns = list(dict.fromkeys(k for m in steps for k, v in m.telemetry.items()
                                     if not isinstance(v, list | dict)))
        return page("trial.html", request, user=user, study=_study_view(study), trial=trial,
                    summary=usecases.trial_telemetry(trial), steps=steps, columns=columns)



def _study_actions(router: APIRouter, studies: ServiceStudies) -> None:
    """A study's report, and stopping or queueing it again."""
    @router.get("/ui/studies/{name}/report")
    def report(name: str, user: Viewer, format: str = "html") -> Response:
        studies.owned(name, user)
        if format not in REPORT_FORMATS:  # 404 like any unknown page, not the API's 422
            raise HTTPException(404, f"no report format {format!r}")
        return studies.report_response(name, format, inline=format == "html")

    @router.post("/ui/studies/{name}/cancel")
    def cancel(name: str, user: Viewer) -> RedirectResponse:
        studies.cancel(name, user)
        return RedirectResponse(f"/ui/studies/{quote(name, safe='')}", status_code=303)

    @router.post("/ui/studies/{name}/resume")
    def resume(name: str, user: Viewer) -> RedirectResponse:
        studies.resume(name, user)
        return RedirectResponse(f"/ui/studies/{quote(name, safe='')}", status_code=303)


@functools.cache
def _plotly_js() -> str:
    """plotly.js (about 4 MB), read from the plotly package once, not on every page view."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def sign_in_redirect(_: Request, exc: SignInRequired) -> RedirectResponse:
    """The exception handler that sends a signed-out visitor to the sign-in page."""
    return RedirectResponse(f"/ui/login?next={quote(exc.path)}", status_code=303)


_FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
            '<rect width="16" height="16" rx="3" fill="#16324f"/>'
            '<path d="M3 12 L6 7 L9 9 L13 3" stroke="#8fd" stroke-width="2" fill="none"/></svg>')
# Scripts only from this server (plotly.js) plus the inline figure call; no framing.
_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _local(target: str) -> str:
    """``target`` if it is a path on this server's UI, else /ui: the sign-in form's ``next``
    must not send anyone to another site."""
    return target if target.startswith("/ui") and "//" not in target else "/ui"


def _study_view(s: StudyRecord) -> dict[str, Any]:
    counts = s.counts  # core.judging: search trials by state, seed repeats apart
    finished = counts.ended
    total = max(s.total_trials or 0, finished)
    return {"name": s.name, "state": s.state, "metric": s.metric, "mode": s.mode,
            "searcher": s.searcher, "finished": finished, "total": total,
            "running": counts.running, "counts": dict(counts.search),
            "repeats": counts.repeats_total,
            "percent": round(100 * finished / total) if total else 0,
            "best": s.best_value, "created_at": s.created_at, "started_at": s.started_at,
            "finished_at": s.finished_at, "failure": s.failure,
            "elapsed": ((s.finished_at or time.time()) - s.started_at) if s.started_at
            else None}


def _campaign_of(study: StudyRecord) -> str | None:
    """The campaign a study is a round of (None: it is in none)."""
    return usecases.in_campaign(study)


def _parameter_names(trials: Sequence[TrialRecord]) -> list[str]:
    names: dict[str, None] = {}
    for t in trials:
        names.update(dict.fromkeys(t.config))
    return list(names)


def _trial_rows(study: StudyRecord, trials: Sequence[TrialRecord], sort: str
                ) -> list[dict[str, Any]]:
    """Table rows, newest first (``sort="number"``) or best first (``"best"``; trials with no
    value last)."""
    best = best_trial(trials, study.mode, study.constraints)
    if sort == "best":  # the study's candidates by core.judging, then other results, then rest
        candidates = ranked(trials, study.mode, study.constraints)
        taken = {t.number for t in candidates}
        results = by_value((t for t in trials if t.number not in taken), study.mode)
        taken |= {t.number for t in results}
        ordered = [*candidates, *results, *(t for t in trials if t.number not in taken)]
    else:
        ordered = sorted(trials, key=lambda t: -t.number)
    rows = []
    for t in ordered:
        error = t.error or ""
        rows.append({"number": t.number, "state": t.state, "config": dict(t.config),
                     "value": t.best_value, "best_step": t.best_step, "last_step": t.last_step,
                     "attempts": t.attempts, "node": _short_node(t.node), "full_node": t.node,
                     "repeat_of": t.repeat_of, "seed": t.seed,
                     "is_best": best is not None and t.number == best.number,
                     "error": _error_end(error), "full_error": error})
    return rows


def _short_node(node: str | None) -> str:
    """"host (ip) node <56 hex digits>" as "host (ip) · <8 digits>": enough to tell nodes
    apart in a table (the whole id is the cell's tooltip)."""
    if not node:
        return ""
    where, _, node_id = node.partition(" node ")
    return f"{where} · {node_id[:8]}" if node_id else where


def _progress_plot(study: StudyRecord, trials: Sequence[TrialRecord]) -> str | None:
    """A Plotly div of the study's progress chart (report/charts/progress.py: its data and
    figure): each finished trial's best metric in the order trials finished, and the study's
    best so far; None before any trial has a value."""
    plot = usecases.progress_plot(study, trials)
    if plot is None:
        return None
    return _plot_div(usecases.progress_figure(plot), "progress-plot")


def _campaign_plot(found: "usecases.Campaign") -> str | None:
    """A Plotly div of the campaign's chart (report/charts/campaign.py: its data and figure,
    as the docs' figure): the best per round with its seed noise; None before any round has a
    value."""
    plot = usecases.campaign_plot(found)
    if plot is None:
        return None
    return _plot_div(usecases.campaign_figure(plot), "campaign-plot")


def _plot_div(fig: Any, div_id: str) -> str:
    """``fig`` as a div of the page (plotly.js is loaded once, by the page's template)."""
    import plotly.io as pio

    return pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False})


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return MISSING
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _duration(seconds: float | None) -> str:
    return MISSING if seconds is None else format_duration(seconds)


def _number(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


def _error_end(error: str) -> str:
    """The end of a trial's error for the study's table (core.failures.error_tail: the
    exception, or a command's last lines of stderr), at most MAX_ERROR_CHARS."""
    from searchsvc.core.failures import error_tail

    end = " · ".join(error_tail(error, 3))
    return end if len(end) <= MAX_ERROR_CHARS else "…" + end[-MAX_ERROR_CHARS:]
