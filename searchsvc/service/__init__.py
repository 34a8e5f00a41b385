"""searchsvc as a shared service: the REST API (the only package that imports the web
framework)."""

from __future__ import annotations

from typing import Any

from searchsvc.service.app import ServiceConfig, create_app


def serve_app(api: Any, host: str, port: int) -> None:
    """Serve ``api`` (from :func:`create_app`) with uvicorn until the process is stopped."""
    import gc

    import uvicorn

    from searchsvc import startup, usecases

    # What is loaded now lives as long as the server: FastAPI, SQLAlchemy, pydantic, and what
    # submitting a study and writing a report import (loaded on first use, that took ~1 s of
    # the event loop). Left to the garbage collector, each full collection walks those ~10^5
    # objects again and stops every request for 40-90 ms (benchmarks/service_load.py); frozen,
    # a full collection takes about a millisecond.
    usecases.warm_up()
    gc.collect()
    gc.freeze()
    startup.collect_as_usual()  # started: requests' garbage is collected as anywhere
    uvicorn.run(api, host=host, port=port, log_level="warning")


__all__ = ["ServiceConfig", "create_app", "serve_app"]
