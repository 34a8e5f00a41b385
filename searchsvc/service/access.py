"""What the API and the web UI both do to a user's studies, with the same rules: a study that
is not the user's is answered as unknown (404), reports come in a closed list of formats, and
cancel/resume need a server that runs studies (503 otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from fastapi import HTTPException
from fastapi.responses import FileResponse

from searchsvc.core import StudyRecord, StudyState
from searchsvc.errors import LimitExceededError, NotFoundError
from searchsvc.service.runner import StudyRunner
from searchsvc.store import Store

ReportFormat = Literal["html", "md", "json", "csv"]
REPORT_FORMATS: tuple[str, ...] = get_args(ReportFormat)


@dataclass
class ServiceStudies:
    store: Store
    runner: StudyRunner | None = None
    max_queued_per_user: int | None = None  # studies created or running at once, per user

    @property
    def runs_studies(self) -> bool:
        return self.runner is not None

    def cluster_nodes(self) -> list[dict[str, Any]] | None:
        """The Ray nodes this service's studies run on (None: not known, or it runs none)."""
        return None if self.runner is None else self.runner.cluster.nodes()

    def owned(self, name: str, owner: str) -> StudyRecord:
        """Study ``name`` if ``owner`` owns it; 404 whether it is another user's or none."""
        try:
            study = self.store.get_study(name)
        except NotFoundError:
            study = None
        if study is None or study.owner != owner:
            raise HTTPException(404, f"no study named {name!r}")
        return study

    def report_response(self, name: str, format: str, *, inline: bool = False
                        ) -> FileResponse:
        """The study's report in ``format`` (one of REPORT_FORMATS), written now: a download,
        or with ``inline`` a page the browser shows."""
        import shutil
        import tempfile

        from starlette.background import BackgroundTask

        from searchsvc import usecases

        # Written into a folder of this response's own, removed once it is sent: in the
        # study's results folder, its driver (which writes the report there after marking the
        # study completed) or another request could rewrite the file while it is being sent.
        folder = tempfile.mkdtemp(prefix="searchsvc-report-")
        try:
            files = usecases.report(name, self.store, folder,
                                    formats=[] if format == "csv" else [format])
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        path = files.files[format]
        return FileResponse(path, filename=path.name,
                            content_disposition_type="inline" if inline else "attachment",
                            background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True))

    def cancel(self, name: str, owner: str) -> StudyRecord:
        self.owned(name, owner)
        self._runner().cancel(name)
        return self.store.get_study(name)

    def resume(self, name: str, owner: str) -> StudyRecord:
        study = self.owned(name, owner)
        if study.state != StudyState.INTERRUPTED:
            raise HTTPException(409, f"study {name!r} is {study.state}; only an interrupted "
                                "study can be resumed")
        if self.max_queued_per_user is not None:  # a resumed study is queued as a new one
            check_quota(self.store, owner, self.max_queued_per_user)
        self._runner().requeue(name)
        return self.store.get_study(name)

    def queue(self, owner: str) -> dict[str, Any]:
        return self._runner().queue(owner)

    def share_line(self, name: str, owner: str) -> str:
        """How ``owner``'s study ``name`` is doing on the shared cluster, as ``searchsvc
        queue`` says it (empty when it is not queued or running, or nothing runs here)."""
        if self.runner is None:
            return ""
        return next((s["line"] for s in self.runner.queue(owner)["studies"]
                     if s["name"] == name), "")

    def _runner(self) -> StudyRunner:
        if self.runner is None:
            raise HTTPException(503, "this server does not run studies")
        return self.runner


def check_quota(store: Store, user: str, limit: int) -> None:
    """Refuse (429) to queue another study of ``user``'s when ``limit`` are queued or running:
    creating a study and resuming one count alike."""
    active = len(store.list_studies(owner=user, states=(StudyState.CREATED, StudyState.RUNNING)))
    if active >= limit:
        raise LimitExceededError(
            f"user {user!r} has {active} studies queued or running, the most this server "
            f"allows (serve --max-queued-per-user {limit}); wait for one to finish or cancel one")
