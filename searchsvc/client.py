"""A small client of a searchsvc server for the command line and the Python API (standard
library only): submit a study file, read a study, its trials and events, cancel it, download its
report. :class:`RemoteStudies` reads a user's studies on a server as a store reads them, so
``searchsvc.load(name, server=...)`` analyses them with the same code as a local study."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from searchsvc.core import (
    EventKind,
    StudyRecord,
    TrialEvent,
    TrialRecord,
)
from searchsvc.core.callables import CallableRef
from searchsvc.core.wire import study_record, trial_record
from searchsvc.errors import (
    CodeBundleError,
    ConflictError,
    LimitExceededError,
    NotFoundError,
    PermissionDeniedError,
    ServiceError,
    SpecError,
)

if TYPE_CHECKING:
    from searchsvc.usecases import Campaign


class RemoteSpecError(SpecError):
    """The server found the study file malformed: its ``searchsvc validate`` lines, as sent."""

    def __init__(self, lines: list[str]):
        self.issues = []
        Exception.__init__(self, "\n".join(lines))


class ServiceClient:
    def __init__(self, server: str, token: str | None):
        if not server:
            raise ServiceError("no server: pass --server URL or set SEARCHSVC_SERVER")
        self.server, self.token = server.rstrip("/"), token

    def submit(self, spec_text: str, code: str | None = None,
               preflight: bool = True, priority: int | None = None) -> dict[str, Any]:
        """Create a study from ``spec_text``; ``code``: the sha256 of an uploaded bundle;
        ``preflight=False``: the server starts it without preflight; ``priority``: instead of
        the study file's."""
        params = {"code": code} if code else {}
        if not preflight:
            params["preflight"] = "false"
        if priority is not None:
            params["priority"] = str(priority)
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return self._json("POST", f"/studies{query}", spec_text.encode())

    def upload_code(self, archive: bytes) -> dict[str, Any]:
        """Store a code bundle (see searchsvc.codebundle.pack); returns its sha256 and size."""
        return self._json("POST", "/code", archive, content_type="application/gzip")

    def code_policy(self) -> dict[str, Any] | None:
        """The server's ``allow_objectives`` prefixes and whether this token ``may_upload_code``
        (``GET /objectives/allowed``); None from a server without that endpoint."""
        try:
            return self._json("GET", "/objectives/allowed")
        except NotFoundError:
            return None

    def studies(self) -> list[dict[str, Any]]:
        """The token's user's studies on the server, oldest first."""
        return self._json("GET", "/studies")

    def study(self, name: str) -> dict[str, Any]:
        return self._json("GET", f"/studies/{_quote(name)}")

    def trials(self, name: str, curves: bool | Collection[int] = False
               ) -> list[dict[str, Any]]:
        """The study's trials; with every step of each (``True``) or of these trial numbers."""
        if curves is True or curves is False:
            query = "?curves=true" if curves else ""
        elif len(curves) > MAX_CURVES_ASKED:  # a URL of thousands of numbers: ask for all
            wanted = set(curves)
            return [t if t["number"] in wanted else {**t, "measurements": []}
                    for t in self.trials(name, True)]
        else:
            query = "?" + urllib.parse.urlencode([("curves_of", n) for n in sorted(curves)])
        return self._json("GET", f"/studies/{_quote(name)}/trials{query}")

    def events(self, name: str) -> list[dict[str, Any]]:
        """What the study's schedulers did to its trials, in order."""
        return self._json("GET", f"/studies/{_quote(name)}/events")

    def campaign(self, name: str) -> dict[str, Any]:
        """Campaign ``name``'s timeline, as ``searchsvc campaign --json`` prints it."""
        return self._json("GET", f"/campaigns/{_quote(name)}")

    def queue(self) -> dict[str, Any]:
        """Your queued and running studies on the server's shared cluster (``GET /queue``)."""
        return self._json("GET", "/queue")

    def cancel(self, name: str) -> dict[str, Any]:
        return self._json("POST", f"/studies/{_quote(name)}/cancel")

    def report(self, name: str, fmt: str, folder: Path) -> Path:
        data = self._request("GET", f"/studies/{_quote(name)}/report?format={fmt}")
        suffix = {"html": "report.html", "md": "report.md", "json": "report.json",
                  "csv": "trials.csv"}[fmt]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / suffix
        path.write_bytes(data)
        return path

    def _json(self, method: str, path: str, body: bytes | None = None,
              content_type: str | None = None) -> Any:
        return json.loads(self._request(method, path, body, content_type))

    def _request(self, method: str, path: str, body: bytes | None = None,
                 content_type: str | None = None) -> bytes:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.server + path, data=body, method=method,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None
        except urllib.error.URLError as exc:
            raise ServiceError(f"cannot reach {self.server}: {exc.reason}") from None


def default_code_folder(client: ServiceClient, objective: str, folder: Path) -> Path | None:
    """What a submission uploads when told neither ``--code`` nor ``--no-code``: ``folder`` (the
    study file's) when the objective's module is there, unless this token may not upload code
    and the server's allow-list admits the module, so that the server imports it itself (then
    None, as for a module not in ``folder``). A token that may not upload, for a module the
    server does not admit: :class:`~searchsvc.errors.PermissionDeniedError` naming
    ``--no-code`` and the allowed prefixes. A command objective's folder is always uploaded
    (a token that may not upload: PermissionDeniedError)."""
    from searchsvc.codebundle import allowed_module, own_code_folder
    from searchsvc.core.commands import COMMAND_OBJECTIVE

    if objective == COMMAND_OBJECTIVE:  # a script of the folder, run only from uploaded code
        policy = client.code_policy()
        if policy is not None and not policy["may_upload_code"]:
            raise PermissionDeniedError(
                "the study's objective is a command, which runs a script uploaded with the "
                "study, and this token may not upload code: ask the server's admin for a "
                "token made with `searchsvc tokens create NAME --allow-code`")
        return folder.resolve()
    found = own_code_folder(objective, folder)
    policy = client.code_policy() if found is not None else None
    if found is None or policy is None or policy["may_upload_code"]:
        return found
    module, prefixes = CallableRef.parse(objective).module, list(policy["allow_objectives"])
    if allowed_module(module, prefixes):
        return None
    raise PermissionDeniedError(
        f"the objective's module {module!r} is in {found}, whose code this token may not "
        f"upload, and this server imports only modules under the prefixes "
        f"{', '.join(prefixes) or '(none)'} (serve --allow-objectives): ask the server's admin "
        "for a token made with `searchsvc tokens create NAME --allow-code`, or submit with "
        "--no-code (code=False in Python) for an objective the server has under those prefixes")


@dataclass(frozen=True)
class Submission:
    """What :func:`submit_study` did: the server's answer, and the code it uploaded."""

    study: dict[str, Any]  # the server's JSON of the new study
    code: Path | None = None  # the folder uploaded
    upload: Mapping[str, Any] | None = None  # the server's answer to it (files, bytes, sha256)
    server_imports: str | None = None  # a module of the user's the server imports itself


def submit_study(client: ServiceClient, text: str, objective: str, folder: Path | None,
                 code: Path | Literal[False] | None = None, preflight: bool = True,
                 priority: int | None = None) -> Submission:
    """Submit the study file ``text``, whose objective is ``objective``, and the code it needs:
    ``code`` (a folder) uploaded; ``False`` none (the server must have the objective); None
    the default, :func:`default_code_folder` of the study file's ``folder`` (None: a file
    not on disk, no code). What ``searchsvc submit`` and ``searchsvc.run(server=...)`` do."""
    from searchsvc.codebundle import own_code_folder, pack

    chosen: Path | None = None if code is False else code
    server_imports = None
    if code is None and folder is not None:
        chosen = default_code_folder(client, objective, folder)
        if chosen is None and own_code_folder(objective, folder) is not None:
            server_imports = CallableRef.parse(objective).module
    upload = client.upload_code(pack(chosen)) if chosen is not None else None
    answer = client.submit(text, code=None if upload is None else upload["sha256"],
                           preflight=preflight, priority=priority)
    return Submission(answer, chosen, upload, server_imports)


MAX_CURVES_ASKED = 200  # trial numbers named in one URL (curves_of=...)


class RemoteStudies:
    """A user's studies on a searchsvc server, read as a store reads them (it is a
    :class:`searchsvc.store.StudyReader`): what ``searchsvc.load(name, server=...)`` reads
    through. The records are rebuilt from the REST API's JSON; ``id`` and ``study_id`` (the
    server's keys) read 0, ``results_dir`` (a folder on the server) None. Another user's study
    is unknown here (:class:`~searchsvc.errors.NotFoundError`), as on the server."""

    def __init__(self, client: ServiceClient):
        self.client = client
        self.url = client.server

    def get_campaign(self, name: str) -> Campaign:
        """The user's campaign ``name``, as the server builds its timeline."""
        from searchsvc.usecases import campaign_from_json

        return campaign_from_json(self.client.campaign(name))

    def list_studies(self) -> list[StudyRecord]:
        """The user's studies, as the server lists them (without study files)."""
        return [study_record(s) for s in self.client.studies()]

    def get_study(self, name: str) -> StudyRecord:
        return study_record(self.client.study(name))

    def get_trials(self, study_name: str, *,
                   measurements: bool | Collection[int] = False) -> list[TrialRecord]:
        return [trial_record(t) for t in self.client.trials(study_name, measurements)]

    def get_events(self, study_name: str, *, kind: str | None = None) -> list[TrialEvent]:
        return [TrialEvent(e["number"], EventKind(e["kind"]), e["step"], e["data"],
                           e["recorded_at"])
                for e in self.client.events(study_name) if kind is None or e["kind"] == kind]

    def __repr__(self) -> str:
        return f"<RemoteStudies {self.url}>"


def _error(status: int, body: bytes) -> Exception:
    try:
        payload = json.loads(body)
    except ValueError:
        payload = {"detail": body.decode(errors="replace")}
    detail = str(payload.get("detail", ""))
    if status == 422 and payload.get("errors"):
        # the server's validate messages, printed as they are
        return RemoteSpecError([str(line) for line in payload["errors"]])
    if status == 404:
        return NotFoundError(detail)
    if status == 409:
        return ConflictError(detail)
    if status == 401:
        return ServiceError(f"{detail} (pass --token or set SEARCHSVC_TOKEN)")
    if status == 403:
        return PermissionDeniedError(detail)
    if status == 429:
        return LimitExceededError(detail)
    if status == 413:
        return CodeBundleError(f"server answered 413: {detail}")
    return ServiceError(f"server answered {status}: {detail}")


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")
