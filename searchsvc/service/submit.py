"""The routes that bring work to the service: a study file (validated off the event loop,
within the server's limits, every module it names allowed), a code bundle, and what this
server lets a token submit."""

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at run time.
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request

from searchsvc.codebundle import CodeBundle, find_bundle, store_bundle
from searchsvc.core import StudyRecord, TokenGrant
from searchsvc.core.records import MAX_PRIORITY
from searchsvc.errors import ConflictError, PermissionDeniedError, SpecError
from searchsvc.service.access import check_quota
from searchsvc.service.config import ServiceConfig
from searchsvc.service.context import ApiContext, Grant
from searchsvc.service.reads import study_json
from searchsvc.service.sharing import PRIORITY_KEY
from searchsvc.spec import StudySpec, json_schema


def submit_router(ctx: ApiContext) -> APIRouter:
    """POST /studies, POST /code and GET /objectives/allowed."""
    router = APIRouter()

    # The handler reads the raw body, so FastAPI cannot describe it: declared here, clients
    # and the OpenAPI fuzz test (tests/service/test_openapi_fuzz.py) see what to send.
    @router.post("/studies", status_code=201,
              openapi_extra={"requestBody": _study_file_body()})
    async def create(request: Request, token: Grant,
                     code: Annotated[str | None, Query(
                         description="sha256 of a code bundle uploaded with POST /code, which "
                         "the study's objective imports from (needs a code token)",
                         pattern="^[0-9a-f]{64}$")] = None,
                     preflight: Annotated[bool, Query(
                         description="false: start the study without preflight (the "
                         "objective at the centre of the space for a few steps)")] = True,
                     priority: Annotated[int | None, Query(
                         ge=0, le=MAX_PRIORITY, description="the study's priority on the "
                         "shared cluster, instead of the study file's (at most the token's "
                         "max priority)")] = None,
                     ) -> dict[str, Any]:
        """Create a study from a study file, sent as YAML or JSON. 422 carries exactly the
        messages of ``searchsvc validate``, and names any module the server may not import."""
        body = await _limited_body(request, ctx.config.max_body_bytes)

        def create_checked() -> StudyRecord:
            # Finding the bundle walks its files (for provenance): off the loop too.
            bundle = _bundle_for(code, token) if code is not None else None
            spec = _checked_spec(body, ctx.config, bundle)
            _may_ask_priority(token, spec.priority if priority is None else priority)
            from searchsvc import usecases

            nodes = ctx.studies.cluster_nodes()
            if nodes is not None:  # never queue a study whose trials could never start
                usecases.check_capacity(spec, nodes)
            check_quota(ctx.store, token.user, ctx.config.max_queued_per_user)

            try:  # the objective's module is located, never imported, in the API process
                study = usecases.create(spec, ctx.store, owner=token.user, code=bundle,
                                        import_objective=False, preflight=preflight)
            except ConflictError:
                raise HTTPException(409, f"a study named {spec.name!r} already exists"
                                    ) from None
            if priority is None:
                return study
            return ctx.store.update_study(study.name, provenance={
                **study.provenance, PRIORITY_KEY: priority})

        return study_json(await ctx.off_loop(create_checked, "creating the study"))

    def _may_ask_priority(token: TokenGrant, priority: int) -> None:
        if priority > token.max_priority:
            raise PermissionDeniedError(
                f"priority {priority} is above this token's highest, {token.max_priority}: "
                "submit at that or lower, or ask the server's admin for a token made with "
                f"`searchsvc tokens create NAME --max-priority {priority}`")

    def _bundle_for(code: str, token: TokenGrant) -> CodeBundle:
        _may_use_code(token)
        bundle = find_bundle(ctx.config.code_root, code)
        if bundle is None:
            raise HTTPException(422, f"no code bundle {code}: upload it first (POST /code)")
        return bundle

    @router.post("/code", status_code=201, openapi_extra={"requestBody": _code_body()})
    async def upload_code(request: Request, token: Grant) -> dict[str, Any]:
        """Store a code bundle (a gzipped tar of the user's code, as ``searchsvc submit --code``
        packs it) under its sha256; studies then name it with ``?code=``. Only tokens created
        with ``--allow-code`` may: the code runs on the cluster with the service's rights."""
        _may_use_code(token)
        body = await _limited_bytes(request, ctx.config.code_limits.max_packed_bytes)
        bundle = await ctx.off_loop(
            lambda: store_bundle(body, ctx.config.code_root, ctx.config.code_limits),
            "unpacking the code bundle")
        return {"sha256": bundle.sha256, "files": bundle.files, "bytes": bundle.bytes}

    @router.get("/objectives/allowed")
    async def allowed_objectives(token: Grant) -> dict[str, Any]:
        """The module prefixes this server imports objectives from without uploaded code
        (``serve --allow-objectives``), and whether this token may upload code: what
        ``searchsvc submit`` reads to choose between uploading the study's folder and letting
        the server import the objective itself."""
        return {"allow_objectives": list(ctx.config.allow_objectives),
                "may_upload_code": token.allow_code}

    return router


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
    from searchsvc.service.allowlist import (
        refused_command,
        refused_references,
        refused_tracking,
    )
    from searchsvc.usecases import validate_text

    spec = validate_text(body, file="<request>", limits=config.limits)
    path = bundle.path if bundle is not None else None
    refused = [*refused_references(spec, config.allow_objectives, path),
               *refused_command(spec, path),
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
    # Without the per-searcher and per-backend options rules (JSON Schema if/then), which
    # OpenAPI tools do not generate or check bodies with; the service validates every file
    # against them in full, as `searchsvc validate` does.
    schema.pop("allOf", None)
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


