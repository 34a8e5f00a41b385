"""MkDocs hooks (mkdocs.yml, ``hooks:``): reference sections rendered from the code when the site
is built, so they cannot drift from it.

A page asks for one with a marker line, ``<!-- generated: NAME -->``:

- ``study-file-schema``: every key of the study file, from ``searchsvc.spec.json_schema()``
  (what ``searchsvc schema`` prints and what validates files);
- ``rest-api``: every operation of the service, from the OpenAPI document of the FastAPI app
  that ``searchsvc serve`` runs (``searchsvc.service.app.create_app``);
- ``exit-codes``: the command line's exit codes and the service's HTTP statuses, from the
  ``searchsvc.errors.SearchsvcError`` hierarchy;
- ``benchmark-results``: ``benchmarks/RESULTS.md``, with its links to recorded results turned
  into paths;
- ``cli-reference``: every command of the ``searchsvc`` command line, walking the Click command
  tree of the Typer app (``searchsvc.cli.app``): usage, help, arguments and options, as
  ``searchsvc COMMAND --help`` prints them;
- ``searcher-options``: every registered searcher (``searchsvc.plugins.SEARCHERS``) with its
  summary, whether it searches several objectives, runs seed repeats and stops trials at rungs
  (multi-fidelity), and the
  ``searcher_options`` it accepts, from the JSON Schema of its ``Options`` model (the model
  that validates them).

An unknown marker, or one whose section fails to render, fails the build. The hooks also render
the docstrings' reST cross-references (``:class:`...```) on the Python API page as code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


# --- the study file's JSON Schema -------------------------------------------------------------


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return defs[ref.rsplit("/", 1)[-1]]
    return node


def _alternatives(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A node's alternatives without the bare null an optional key allows."""
    options = node.get("anyOf") or node.get("oneOf") or [node]
    return [o for o in options if o.get("type") != "null"]


def _object_of(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema with properties that a key holds (directly, as a list of them, or as
    one alternative of several), if any."""
    for option in _alternatives(node):
        option = _resolve(option, defs)
        if option.get("properties"):
            return option
        if option.get("type") == "array" and "items" in option:
            items = _resolve(option["items"], defs)
            if items.get("properties"):
                return items
    return None


def _bounds(node: dict[str, Any]) -> str:
    parts = []
    for key, sign in (("exclusiveMinimum", ">"), ("minimum", "≥"),
                      ("exclusiveMaximum", "<"), ("maximum", "≤")):
        if key in node:
            parts.append(f"{sign} {node[key]}")
    return " " + ", ".join(parts) if parts else ""


def _type_of(node: dict[str, Any], defs: dict[str, Any], link: str | None) -> str:
    kinds = []
    for option in _alternatives(node):
        if "$ref" in option or option.get("properties"):
            kinds.append(f"[mapping](#{link})" if link else "mapping")
        elif "enum" in option:
            kinds.append(" \\| ".join(f"`{v}`" if isinstance(v, str) else f"`{json.dumps(v)}`"
                                      for v in option["enum"]))
        elif option.get("type") == "array":
            items = option.get("items", {})
            inner = _type_of(items, defs, link) if items else "any"
            kinds.append(f"list of {inner}")
        elif option.get("type") == "object":
            extra = option.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                kinds.append(f"mapping of name → {_type_of(extra, defs, link)}")
            else:
                kinds.append("mapping")
        elif "type" in option:
            names = option["type"] if isinstance(option["type"], list) else [option["type"]]
            kinds.append(" or ".join(names) + _bounds(option))
        else:
            kinds.append("any")
    return " or ".join(dict.fromkeys(kinds)) or "any"


# A docstring's pointer for readers of the source, e.g. (docs/DESIGN.md, "Noise") or
# (docs/tracking.md): the page that renders the docstring is already that documentation.
SOURCE_NOTE = re.compile(r"\s*\(docs/[\w./-]+[^()]*\)")


def _cell(text: str) -> str:
    """``text`` (a docstring or a schema description) as one line of a markdown table cell:
    pointers to the documentation dropped, reST's double backticks made single, pipes escaped,
    and brackets and "<" outside code escaped (so "[a-z0-9]" is no link, "<folder>" no tag)."""
    text = SOURCE_NOTE.sub("", text)
    parts = " ".join(text.replace("``", "`").split()).split("`")
    for i in range(0, len(parts), 2):  # outside code spans
        parts[i] = re.sub(r"([\[\]])", r"\\\1", parts[i]).replace("<", "&lt;")
    return "`".join(parts).replace("|", "\\|")


def _default(node: dict[str, Any], required: bool) -> str:
    if required:
        return "**required**"
    if "default" not in node or node["default"] is None:
        return ""
    return f"`{json.dumps(node['default'])}`"


def _anchor(path: str, prefix: str = "key") -> str:
    return f"{prefix}-" + re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def _schema_section(path: str, schema: dict[str, Any], defs: dict[str, Any],
                    out: list[str]) -> None:
    """A heading and a table of ``schema``'s keys, then a section for each key holding an object
    of its own (depth first, in the schema's order)."""
    nested: list[tuple[str, dict[str, Any]]] = []
    rows = []
    required = set(schema.get("required", []))
    for key, node in schema["properties"].items():
        child = _object_of(node, defs)
        extra = node.get("additionalProperties")
        if child is None and isinstance(extra, dict):  # a mapping of names to objects
            child = _object_of(extra, defs)
            child_path = f"{path}{key}.NAME"
        else:
            child_path = f"{path}{key}" + ("[]" if node.get("type") == "array"
                                           or any(o.get("type") == "array"
                                                  for o in _alternatives(node)) else "")
        link = _anchor(child_path) if child else None
        if child:
            nested.append((child_path, child))
        description = node.get("description") or ""
        rows.append(f"| `{key}` | {_type_of(node, defs, link)} | {_default(node, key in required)}"
                    f" | {_cell(description)} |")
    title = path.rstrip(".") or "Top level"
    out += [f"### `{title}` {{#{_anchor(path.rstrip('.') or 'top')}}}" if path
            else f"### {title} {{#{_anchor('top')}}}", ""]
    if path and schema.get("description"):
        out += [_cell(schema["description"]), ""]
    out += ["| key | type | default | description |", "|---|---|---|---|", *rows, ""]
    for child_path, child in nested:
        _schema_section(child_path + ".", child, defs, out)


def render_study_file_schema() -> str:
    from searchsvc.spec import json_schema

    schema = json_schema()
    out: list[str] = []
    _schema_section("", schema, schema.get("$defs", {}), out)
    return "\n".join(out)


# --- the service's OpenAPI document -----------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    from searchsvc.service.app import create_app
    from searchsvc.store import open_store

    return create_app(open_store("memory:")).openapi()


def _param_type(schema: dict[str, Any]) -> str:
    return _type_of(schema, {}, None)


def render_rest_api() -> str:
    doc = openapi_document()
    info = doc["info"]
    out = [f"OpenAPI {doc['openapi']}, {info['title']} {info['version']}: "
           f"{_cell(info.get('description', ''))}", "",
           "| operation | what it does |", "|---|---|"]
    operations = [(path, method.upper(), op) for path, ops in doc["paths"].items()
                  for method, op in ops.items()]
    for path, method, op in operations:
        anchor = _anchor(f"{method} {path}", "op")
        first = (op.get("description") or op.get("summary", "")).split(". ")[0].rstrip(".")
        out.append(f"| [`{method} {path}`](#{anchor}) | {_cell(first)} |")
    out.append("")
    for path, method, op in operations:
        out += [f"### `{method} {path}` {{#{_anchor(f'{method} {path}', 'op')}}}", "",
                f"**{op.get('summary', '')}.** {_cell(op.get('description') or '')}", ""]
        auth = "bearer token" if op.get("security") else "none"
        out += [f"Authentication: {auth}.", ""]
        params = op.get("parameters") or []
        if params:
            out += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
            for p in params:
                schema = p.get("schema", {})
                default = schema.get("default")
                note = p.get("description") or schema.get("description") or ""
                if default is not None:
                    note = f"{note} (default `{json.dumps(default)}`)".strip()
                out.append(f"| `{p['name']}` | {p['in']} | {_param_type(schema)} | "
                           f"{'yes' if p.get('required') else 'no'} | {_cell(note)} |")
            out.append("")
        body = op.get("requestBody")
        if body:
            types = ", ".join(f"`{t}`" for t in body.get("content", {}))
            out += [f"Request body ({'required' if body.get('required') else 'optional'}): "
                    f"{types}.", ""]
        codes = ", ".join(f"{code} ({resp.get('description', '')})"
                          for code, resp in op.get("responses", {}).items())
        out += [f"Documented responses: {codes}.", ""]
    return "\n".join(out)


# --- exit codes -------------------------------------------------------------------------------


def render_exit_codes() -> str:
    from searchsvc import errors
    from searchsvc.driver.preflight import PreflightError

    classes = [errors.SearchsvcError, *errors.SearchsvcError.__subclasses__()]
    if PreflightError not in classes:
        classes.append(PreflightError)
    out = ["| exit code | HTTP status | error | when |", "|---|---|---|---|"]
    for cls in sorted(classes, key=lambda c: c.exit_code):
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        status = cls.http_status if cls.__module__ == errors.__name__ else "(CLI only)"
        out.append(f"| {cls.exit_code} | {status} | `{cls.__name__}` | {_cell(doc)} |")
    return "\n".join(out)


# --- benchmark results ------------------------------------------------------------------------

RESULT_LINK = re.compile(r"\[([^\]]+)\]\((results/[^)\s]+)\)")


def render_benchmark_results() -> str:
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    text = text.split("\n", 1)[1] if text.startswith("# ") else text  # the page has its title
    text = re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M)  # its sections under the page's
    # Recorded result files stay in the repository, beside the scripts, not in the site.
    return RESULT_LINK.sub(lambda m: f"`benchmarks/{m.group(2)}`", text)


# --- the command line -------------------------------------------------------------------------


def _cli_commands() -> list[tuple[str, Any, Any]]:
    """(full name, command, context) of every command of ``searchsvc``, in the order
    ``searchsvc --help`` lists them, a group's subcommands after it. The commands are Click's
    (as vendored by Typer): a group is a command that lists subcommands."""
    import typer

    from searchsvc.cli import app

    root = typer.main.get_command(app)
    found: list[tuple[str, Any, Any]] = []

    def walk(command: Any, ctx: Any) -> None:
        if not hasattr(command, "list_commands"):
            found.append((ctx.command_path, command, ctx))
            return
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            walk(sub, sub.context_class(sub, info_name=name, parent=ctx))

    walk(root, root.context_class(root, info_name="searchsvc"))
    return found


def _help(text: str | None) -> str:
    """A command's or parameter's help as one paragraph of markdown (Click's ``\\b`` marks and
    line breaks folded)."""
    return _cell((text or "").replace("\b", ""))


def _cli_param(param: Any, ctx: Any) -> str:
    """One table row of a parameter: its names and value (e.g. ``--storage <str>``) and its help
    with the default, environment variable and bounds, as ``--help`` prints them."""
    record = param.get_help_record(ctx)
    names, text = record if record else (param.name, "")
    if param.param_type_name == "argument":
        names = names.upper()
    return f"| `{names}` | {_help(text)} |"


def render_cli_reference() -> str:
    """Every command: a table of them, then each one's usage, help, arguments and options."""
    commands = _cli_commands()
    out = ["| command | what it does |", "|---|---|"]
    for path, command, _ in commands:
        first = _help(command.get_short_help_str(limit=200))
        out.append(f"| [`{path}`](#{_anchor(path, 'cli')}) | {first} |")
    out.append("")
    for path, command, ctx in commands:
        usage = " ".join(command.collect_usage_pieces(ctx))
        usage = re.sub(r"\{(\w+)\}", lambda m: m.group(1).upper(), usage)  # {spec}: SPEC
        out += [f"### `{path}` {{#{_anchor(path, 'cli')}}}", "",
                "```", f"{path} {usage}".rstrip(), "```", "", _help(command.help), ""]
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options = [p for p in command.params
                   if p.param_type_name == "option" and not p.hidden]
        if arguments:
            out += ["| argument | description |", "|---|---|",
                    *(_cli_param(p, ctx) for p in arguments), ""]
        if options:
            out += ["| option | description |", "|---|---|",
                    *(_cli_param(p, ctx) for p in options), ""]
    return "\n".join(out)


# --- searchers and their options --------------------------------------------------------------


def render_searcher_options() -> str:
    """Per registered searcher: its summary, what it supports, and a table of the options its
    ``Options`` model accepts (types, defaults and bounds from the model's JSON Schema)."""
    from searchsvc.plugins import SEARCHERS

    out = ["| searcher | several objectives | seed repeats | multi-fidelity | options |",
           "|---|---|---|---|---|"]
    for name in SEARCHERS.names():
        cls = SEARCHERS.get(name)
        fields = list(cls.Options.model_json_schema().get("properties", {}))
        options = ", ".join(f"`{f}`" for f in fields) or "none"
        out.append(f"| [`{name}`](#{_anchor(name, 'searcher')}) | "
                   f"{'yes' if cls.multi_objective else 'no'} | "
                   f"{'yes' if cls.repeats_supported else 'no'} | "
                   f"{'yes' if cls.multi_fidelity else 'no'} | {options} |")
    out.append("")
    for name in SEARCHERS.names():
        cls = SEARCHERS.get(name)
        schema = cls.Options.model_json_schema()
        defs = schema.get("$defs", {})
        out += [f"### `{name}` {{#{_anchor(name, 'searcher')}}}", "",
                _cell(cls.summary[:1].upper() + cls.summary[1:]) + ".", ""]
        if not cls.multi_objective:
            out += [f"One objective only: {_cell(cls.single_objective_because)}.", ""]
        if not cls.repeats_supported:
            out += [f"No seed repeats: {_cell(cls.no_repeats_because)}.", ""]
        properties = schema.get("properties", {})
        if not properties:
            out += ["`searcher_options`: none (an empty mapping or left out).", ""]
            continue
        out += ["| option | type | default | description |", "|---|---|---|---|"]
        for key, node in properties.items():
            out.append(f"| `{key}` | {_type_of(node, defs, None)} | {_default(node, False)} | "
                       f"{_cell(node.get('description') or '')} |")
        out.append("")
    return "\n".join(out)


RENDERERS = {
    "study-file-schema": render_study_file_schema,
    "rest-api": render_rest_api,
    "exit-codes": render_exit_codes,
    "benchmark-results": render_benchmark_results,
    "cli-reference": render_cli_reference,
    "searcher-options": render_searcher_options,
}


def expand(markdown: str) -> str:
    """``markdown`` with every marker replaced by the section it names."""

    def section(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in RENDERERS:
            raise ValueError(f"unknown generated section {name!r}; known: {sorted(RENDERERS)}")
        return RENDERERS[name]()

    return MARKER.sub(section, markdown)


# The package's docstrings cross-reference in reST (:class:`~searchsvc.errors.SpecError`), which
# the Markdown of the Python API page shows as literal text: render the name alone, as code.
REST_ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj):<code>(~?)([\w.]+)</code>")


def _role(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if short else name}</code>"


def on_page_markdown(markdown: str, **_: Any) -> str:
    return expand(markdown)


def on_page_content(html: str, **_: Any) -> str:
    return REST_ROLE.sub(_role, html)
