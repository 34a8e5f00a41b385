"""A small client of a searchsvc server for the command line (standard library only): submit
a study file, read a study, cancel it, download its report."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from searchsvc.errors import (
    CodeBundleError,
    ConflictError,
    LimitExceededError,
    NotFoundError,
    PermissionDeniedError,
    ServiceError,
    SpecError,
)


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

    def submit(self, spec_text: str, code: str | None = None) -> dict[str, Any]:
        """Create a study from ``spec_text``; ``code``: the sha256 of an uploaded bundle."""
        query = f"?code={code}" if code else ""
        return self._json("POST", f"/studies{query}", spec_text.encode())

    def upload_code(self, archive: bytes) -> dict[str, Any]:
        """Store a code bundle (see searchsvc.codebundle.pack); returns its sha256 and size."""
        return self._json("POST", "/code", archive, content_type="application/gzip")

    def study(self, name: str) -> dict[str, Any]:
        return self._json("GET", f"/studies/{_quote(name)}")

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
              content_type: str | None = None) -> dict[str, Any]:
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
