"""What every route of the API shares: the store, the service's configuration, the studies
as the signed-in user may see them, the token check, and a bounded pool for heavy work."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from searchsvc.core import TokenGrant
from searchsvc.service.access import ServiceStudies
from searchsvc.service.config import ServiceConfig
from searchsvc.store import Store

T = TypeVar("T")


@dataclass
class ApiContext:
    """The service's shared state, handed to each group of routes (and kept as
    ``app.state.api`` for the token check)."""

    store: Store
    config: ServiceConfig
    studies: ServiceStudies
    # CPU-heavy request work (validating a study file, unpacking a bundle) runs in at most two
    # threads and is abandoned after request_timeout_s: the event loop, /health and other
    # users' reads never wait for it.
    heavy: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(2))

    async def off_loop(self, work: Callable[[], T], what: str) -> T:
        """``work`` in a worker thread, given up after ``request_timeout_s`` (503)."""
        with anyio.move_on_after(self.config.request_timeout_s):
            return await anyio.to_thread.run_sync(work, limiter=self.heavy,
                                                   abandon_on_cancel=True)
        raise HTTPException(503, f"{what} took more than {self.config.request_timeout_s:g} s; "
                            "try again, or ask for less")


_bearer = HTTPBearer(auto_error=False)


# The token check is `async def`: its store call (about a millisecond) runs on the event loop.
# As `def` each request went to a worker thread and back, and under load those hand-offs of the
# GIL cost more than the call (benchmarks/service_load.py, 50 clients: p99 of 318 against
# 133 ms). What can take long (reports, every step of every trial) stays in threads.
async def _grant(request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None,
                                                          Depends(_bearer)]) -> TokenGrant:
    store: Store = request.app.state.api.store
    found = store.grant_for_token(credentials.credentials) if credentials else None
    if found is None:
        raise HTTPException(401, "a valid bearer token is required",
                            headers={"WWW-Authenticate": "Bearer"})
    return found


async def _user(found: Annotated[TokenGrant, Depends(_grant)]) -> str:
    return found.user


# What a route takes the caller's token grant, or user name, with (401 without a valid token).
Grant = Annotated[TokenGrant, Depends(_grant)]
User = Annotated[str, Depends(_user)]
