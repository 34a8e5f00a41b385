"""The package's boundaries, checked on its source (docs/architecture.md): the import graphs
between sub-packages and between modules (imports inside functions included) have no cycle,
the pure layers import no persistence, Ray or web framework, the worker never imports the
driver, the front doors (CLI, Python API, client, service) reach the layers below only through
``usecases``, and only ``driver/raycompat/`` touches Ray's private names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "searchsvc"
RAY_COMPAT = "searchsvc.driver.raycompat"


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. searchsvc.driver.run
    tree: ast.Module

    @property
    def part(self) -> str:
        """The sub-package (or top-level module) it belongs to: ``driver``, ``cli``, ..."""
        return self.name.split(".")[1] if "." in self.name else ""


def _modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if "migrations" in parts:
            continue  # Alembic's scripts
        found.append(Module(".".join(parts), ast.parse(path.read_text(), str(path))))
    return found


MODULES = _modules()


def imports(module: Module) -> Iterator[tuple[str, int]]:
    """(imported module, line) of every import, at any depth (lazy ones count too)."""
    is_package = (PACKAGE.parent / module.name.replace(".", "/") / "__init__.py").exists()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, node.lineno
            for alias in node.names:  # `from searchsvc import sdk` imports a module
                yield f"{base}.{alias.name}", node.lineno


def _part_of(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] != "searchsvc" or len(parts) < 2:
        return None
    candidate = PACKAGE / parts[1]
    if candidate.is_dir() or candidate.with_suffix(".py").exists():
        return parts[1]
    return None  # a name imported from searchsvc/__init__.py (e.g. __version__)


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        edges = graph.setdefault(module.part, set())
        for name, _ in imports(module):
            target = _part_of(name)
            if target is not None and target != module.part:
                edges.add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_cycle_between_packages() -> None:
    assert cycles(package_graph()) == []


def module_edges(module: Module, known: set[str]) -> Iterator[str]:
    """The searchsvc modules ``module`` imports, at any depth (imports inside functions too):
    ``from a import b`` imports the module ``a.b`` when there is one, else reads a name of
    ``a``; the parent packages Python initialises on the way are not edges of their own."""
    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            targets = [resolve(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = next(name for name, line in imports(Module(module.name, ast.Module(
                body=[node], type_ignores=[]))))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else resolve(base)
                       for a in node.names]
        else:
            continue
        yield from (t for t in targets if t is not None and t != module.name)


def module_graph(modules: list[Module]) -> dict[str, set[str]]:
    known = {m.name for m in modules}
    return {m.name: set(module_edges(m, known)) for m in modules}


def test_no_cycle_between_modules() -> None:
    assert cycles(module_graph(MODULES)) == []


def test_the_module_graph_sees_lazy_imports_and_names_read_from_a_package() -> None:
    def module(name: str, source: str) -> Module:
        return Module(name, ast.parse(source))

    found = module_graph([
        module("searchsvc.store", "from searchsvc.store.sql import SqlStore\n"),
        module("searchsvc.store.sql", "def f():\n    from searchsvc.store import Store\n"),
        module("searchsvc.store.jsonutil", ""),
        module("searchsvc.store.memory", "from searchsvc.store import jsonutil\n"),
    ])
    assert found["searchsvc.store.sql"] == {"searchsvc.store"}  # a name of the package
    assert found["searchsvc.store.memory"] == {"searchsvc.store.jsonutil"}  # a module
    assert cycles(found) == [["searchsvc.store", "searchsvc.store.sql"]]


# What the report's sections and charts share; each one's own code is in its own module.
REPORT_SHARED = ("searchsvc.report.plotdata", "searchsvc.report.figures",
                 "searchsvc.report.plots")
REPORT_OWNERS = ("searchsvc.report.sections.", "searchsvc.report.charts.")


def is_report_owner(name: str) -> bool:
    """A section's or a chart's own module (not the packages, nor the Section contract)."""
    return name.startswith(REPORT_OWNERS) and name != "searchsvc.report.sections.base"


def top_level_names(tree: ast.Module) -> dict[str, ast.stmt]:
    """The functions, classes and names a module defines at its top level, with their node."""
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            found.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
    return found


def reads_name_of(module: Module, shared: str, name: str) -> bool:
    """Whether ``module`` reads ``name`` of the module ``shared`` (at any depth, type-checking
    imports too): ``from shared import name``, or ``shared`` imported whole and ``.name``
    read."""
    whole = False
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            alone = Module(module.name, ast.Module(body=[node], type_ignores=[]))
            base = next(found for found, _ in imports(alone))
            if base == shared and any(a.name == name for a in node.names):
                return True
            whole |= any(f"{base}.{a.name}" == shared for a in node.names)
        elif isinstance(node, ast.Import):
            whole |= any(a.name == shared for a in node.names)
    return whole and any(isinstance(n, ast.Attribute) and n.attr == name
                         for n in ast.walk(module.tree))


def section_code_in_shared_modules(modules: list[Module]) -> list[str]:
    """Each top-level name of ``REPORT_SHARED`` that is not shared: read by one section's or
    chart's module alone (that module's own code, to be moved there), or by no module at all
    (left behind). Shared is: read by two or more other modules of the package, or by one
    that is not a section's or chart's own (the report's machinery: ``html``, ``writer``,
    ``sections/__init__``, another shared module), or by the module's own other
    definitions."""
    found = []
    for shared in (m for m in modules if m.name in REPORT_SHARED):
        defined = top_level_names(shared.tree)
        for name, definition in defined.items():
            inside = any(isinstance(n, ast.Name) and n.id == name
                         for node in shared.tree.body if node is not definition
                         for n in ast.walk(node))
            users = [m.name for m in modules
                     if m is not shared and reads_name_of(m, shared.name, name)]
            if inside or len(users) > 1 or any(not is_report_owner(u) for u in users):
                continue
            found.append(f"{shared.name}.{name} is read by {users[0]} alone: move it there"
                         if users else f"{shared.name}.{name} is read by no module")
    return found


def test_the_shared_report_modules_hold_no_sections_own_code() -> None:
    """Each report section (``report/sections/<name>.py``) and chart (``report/charts/``) is
    one module: its plot data, Plotly figures and PNGs. ``plotdata.py``, ``figures.py`` and
    ``plots.py`` keep only what is shared: no top-level name of theirs is read by exactly one
    section or chart module and nowhere else (nor by nothing). Tests and benchmarks do not
    count as readers: a name one section uses belongs in that section even when a test
    imports it."""
    found = section_code_in_shared_modules(MODULES)
    assert not found, "\n".join(found)


def test_the_shared_module_check_finds_a_sections_code_and_a_left_over() -> None:
    def module(name: str, source: str) -> Module:
        return Module(name, ast.parse(source))

    found = section_code_in_shared_modules([
        module("searchsvc.report.plotdata",
               "SEED = 0\nclass Series: ...\nclass IsoPlot: ...\n"
               "def iso_plots():\n    return IsoPlot(), SEED\ndef left_over(): ...\n"),
        module("searchsvc.report.figures",
               "from searchsvc.report import plotdata\ndef draw(s: plotdata.Series): ...\n"),
        module("searchsvc.report.html", "def render():\n"
                                        "    from searchsvc.report.plotdata import SEED\n"),
        module("searchsvc.report.sections.isolation",
               "from searchsvc.report.plotdata import Series, iso_plots\n"
               "from searchsvc.report.figures import draw\n"),
        module("searchsvc.report.charts.progress", "from ..plotdata import Series\n"
                                                   "from searchsvc.report import figures\n"
                                                   "figures.draw(Series())\n"),
    ])
    assert found == ["searchsvc.report.plotdata.iso_plots is read by "
                     "searchsvc.report.sections.isolation alone: move it there",
                     "searchsvc.report.plotdata.left_over is read by no module"]


# part -> what it must never import (a sub-package, or a third-party top-level module)
FORBIDDEN = {
    "core": {"spec", "store", "searchers", "analysis", "report", "driver", "worker", "service",
             "backends", "cli", "usecases", "ray", "sqlalchemy", "fastapi"},
    "spec": {"store", "searchers", "analysis", "report", "driver", "worker", "service", "ray",
             "sqlalchemy", "fastapi"},
    "store": {"spec", "searchers", "analysis", "report", "driver", "worker", "service", "ray",
              "fastapi"},
    "searchers": {"store", "analysis", "report", "driver", "worker", "service", "ray",
                  "sqlalchemy", "fastapi"},
    "analysis": {"store", "report", "driver", "worker", "service", "ray", "sqlalchemy",
                 "fastapi", "matplotlib", "plotly"},
    # The allocator's rule and its allowance files: no store, no Ray, no web.
    "allocation": {"spec", "store", "searchers", "analysis", "report", "driver", "worker",
                   "service", "backends", "usecases", "cli", "ray", "sqlalchemy", "fastapi"},
    # Reports render records and their analysis; reading them from a store is reporting.py's.
    "report": {"store", "driver", "worker", "service", "ray", "sqlalchemy", "fastapi"},
    "worker": {"driver", "store", "searchers", "analysis", "report", "service", "usecases",
               "cli", "backends", "sqlalchemy", "fastapi", "optuna"},
    "backends": {"driver", "store", "searchers", "analysis", "report", "service", "usecases",
                 "sqlalchemy", "fastapi"},
    "driver": {"service", "cli", "usecases", "fastapi"},
    # Framework callbacks run in a trial, on the worker's sdk: nothing of the driver's side.
    "integrations": {"driver", "store", "searchers", "analysis", "report", "service",
                     "usecases", "cli", "api", "backends", "tracking", "sqlalchemy", "fastapi"},
    # Trackers get searchsvc's own records from the driver: no Ray, no store, no web.
    "tracking": {"store", "searchers", "analysis", "report", "driver", "worker", "service",
                 "backends", "usecases", "cli", "api", "ray", "sqlalchemy", "fastapi"},
}
RAY_USERS = {"driver", "worker"}  # the only parts that import ray
WEB_USERS = {"service"}  # the only part that imports the web framework


def violations() -> list[str]:
    found = []
    for module in MODULES:
        banned = set(FORBIDDEN.get(module.part, ()))
        if module.part not in RAY_USERS:
            banned.add("ray")
        if module.part not in WEB_USERS:
            banned |= {"fastapi", "starlette", "uvicorn"}
        for name, line in imports(module):
            target = _part_of(name) or name.split(".")[0]
            if target in banned:
                found.append(f"{module.name}:{line} imports {name}")
    return found


def test_layers_import_only_what_they_may() -> None:
    assert violations() == []


# The front doors: the modules a user's command, call or request comes in by.
FRONT_DOORS = {"searchsvc", "searchsvc.cli", "searchsvc.api", "searchsvc.client",
               "searchsvc.service"}
# What they reach only through searchsvc.usecases (its functions, options and types).
BEHIND_USECASES = {"driver", "worker", "backends", "analysis", "report", "reporting"}


def is_front_door(name: str) -> bool:
    return name in FRONT_DOORS or name.startswith("searchsvc.service.")


def _file_of(name: str) -> str:
    path = PACKAGE.parent / name.replace(".", "/")
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py"))
               .relative_to(PACKAGE.parent))


def front_door_violations(modules: list[Module]) -> list[str]:
    """Each import, at any depth (inside functions and ``if TYPE_CHECKING:`` too), by which a
    front door reaches a part behind the use cases: FILE:LINE, the statement, and the part."""
    found = []
    for module in modules:
        if not is_front_door(module.name):
            continue
        nodes = [n for n in ast.walk(module.tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        for node in sorted(nodes, key=lambda n: n.lineno):
            alone = Module(module.name, ast.Module(body=[node], type_ignores=[]))
            parts = sorted({part for name, _ in imports(alone)
                            if (part := _part_of(name)) in BEHIND_USECASES})
            if parts:
                found.append(f"{_file_of(module.name)}:{node.lineno}: `{ast.unparse(node)}` "
                             f"imports searchsvc.{', searchsvc.'.join(parts)}: a front door "
                             "calls searchsvc.usecases for it instead")
    return found


def test_front_doors_go_through_the_use_cases() -> None:
    found = front_door_violations(MODULES)
    assert not found, "\n".join(found)


def test_the_front_door_check_sees_every_kind_of_import() -> None:
    def module(name: str, source: str) -> Module:
        return Module(name, ast.parse(source))

    found = front_door_violations([
        module("searchsvc.cli", "from searchsvc.driver import RunOptions\n"
                                "def f():\n    import searchsvc.worker.objective\n"),
        module("searchsvc.api", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from searchsvc.analysis.campaign import Campaign\n"),
        module("searchsvc.service.ui", "from .. import report\n"
                                       "from searchsvc import usecases, reporting\n"),
        module("searchsvc.service", "import searchsvc.backends\n"),
        module("searchsvc.usecases", "from searchsvc.driver import RunOptions\n"),  # no door
        module("searchsvc.client", "from searchsvc.usecases import Campaign\n"),  # the way in
    ])
    assert found == [
        "searchsvc/cli.py:1: `from searchsvc.driver import RunOptions` imports searchsvc.driver"
        ": a front door calls searchsvc.usecases for it instead",
        "searchsvc/cli.py:3: `import searchsvc.worker.objective` imports searchsvc.worker"
        ": a front door calls searchsvc.usecases for it instead",
        "searchsvc/api.py:3: `from searchsvc.analysis.campaign import Campaign` imports "
        "searchsvc.analysis: a front door calls searchsvc.usecases for it instead",
        "searchsvc/service/ui.py:1: `from .. import report` imports searchsvc.report"
        ": a front door calls searchsvc.usecases for it instead",
        "searchsvc/service/ui.py:2: `from searchsvc import usecases, reporting` imports "
        "searchsvc.reporting: a front door calls searchsvc.usecases for it instead",
        "searchsvc/service/__init__.py:1: `import searchsvc.backends` imports "
        "searchsvc.backends: a front door calls searchsvc.usecases for it instead",
    ]


def _defined_names(tree: ast.Module) -> set[str]:
    """Names a module defines itself: functions, classes, assigned names and attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def ray_private_uses(module: Module) -> list[str]:
    """Where ``module`` touches a private name of Ray: importing one, or (in a module that
    imports Ray) reading a private attribute it does not define itself."""
    uses_ray = any(name.split(".")[0] == "ray" for name, _ in imports(module))
    found = []
    for name, line in imports(module):
        if name.split(".")[0] == "ray" and any(p.startswith("_") for p in name.split(".")):
            found.append(f"{module.name}:{line} imports {name}")
    if uses_ray:
        own = _defined_names(module.tree)
        for node in ast.walk(module.tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.attr not in own):
                found.append(f"{module.name}:{node.lineno} reads .{node.attr}")
    return found


def in_ray_compat(module: str) -> bool:
    return module == RAY_COMPAT or module.startswith(RAY_COMPAT + ".")


def test_only_the_ray_compat_package_touches_ray_private_names() -> None:
    found = [use for m in MODULES if not in_ray_compat(m.name) for use in ray_private_uses(m)]
    assert found == []


def test_the_private_name_check_sees_them_in_the_compat_module() -> None:
    """The check is not vacuous: run on raycompat itself, it finds what that package uses."""
    found = " ".join(use for m in MODULES if in_ray_compat(m.name) for use in ray_private_uses(m))
    for name in ("._actor_to_trial", "._quantiles", "._actor_id", "ray._private",
                 "ray.air._internal"):
        assert name in found, name


@pytest.mark.parametrize("source, expected", [
    ("import ray\nx = y._secret\n", ["m:2 reads ._secret"]),
    ("import ray\nself._mine = 1\nx = self._mine\n", []),
    ("from ray.tune.schedulers.async_hyperband import _Bracket\n",
     ["m:1 imports ray.tune.schedulers.async_hyperband._Bracket"]),
    ("x = y._secret\n", []),  # no Ray in this module: not Ray's name
])
def test_the_private_name_check(source: str, expected: list[str]) -> None:
    assert ray_private_uses(Module("m", ast.parse(source))) == expected


def part_names_in_spec() -> list[str]:
    """Where ``searchsvc/spec`` names a registered searcher, backend or tracker: a string that
    is one of their names, or an attribute or keyword argument spelled as a tracker's (a
    field per tracker; "grid" is also a parameter's method)."""
    from searchsvc.plugins import BACKENDS, SEARCHERS, TRACKERS

    names = {*SEARCHERS.names(), *BACKENDS.names(), *TRACKERS.names()}
    found = []
    for module in MODULES:
        if module.part != "spec":
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                spelled, among = node.value, names
            elif isinstance(node, ast.Attribute):
                spelled, among = node.attr, set(TRACKERS.names())
            elif isinstance(node, ast.keyword) and node.arg:
                spelled, among = node.arg, set(TRACKERS.names())
            else:
                continue
            if spelled in among:
                found.append(f"{module.name}:{getattr(node, 'lineno', '?')} names {spelled!r}")
    return found


def test_spec_holds_no_searcher_backend_or_tracker_names() -> None:
    found = part_names_in_spec()
    assert found == [], (
        "searchsvc/spec must not name a searcher, backend or tracker: ask the registries of "
        "searchsvc.plugins for names and capabilities (a part's class attributes, e.g. "
        f"multi_fidelity) instead: {found}")


def test_the_part_name_check_sees_a_name() -> None:
    module = Module("searchsvc.spec.x", ast.parse(
        'MULTI = ("asha", "hyperband")\nuri = spec.tracking.mlflow\nTracking(wandb=None)\n'))
    MODULES.append(module)
    try:
        assert sorted(part_names_in_spec()) == [
            "searchsvc.spec.x:1 names 'asha'", "searchsvc.spec.x:1 names 'hyperband'",
            "searchsvc.spec.x:2 names 'mlflow'", "searchsvc.spec.x:3 names 'wandb'"]
    finally:
        MODULES.remove(module)


# The states have one name each, their enum's member (TrialState.COMPLETED, not an alias).
STATE_ALIAS = re.compile(r"(TRIAL|STUDY|EVENT)_(RUNNING|COMPLETED|PRUNED|FAILED|INFEASIBLE|"
                         r"INTERRUPTED|CREATED|STATES|STOPPED_EARLY|EXPLOIT|RETRIED|STORE_OUTAGE)")


def state_aliases(module: Module) -> list[str]:
    """Where ``module`` defines or imports a second name for a study state, trial state or
    event kind (``TRIAL_COMPLETED = TrialState.COMPLETED``, ``from ... import TRIAL_FAILED``)."""
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [n for alias in node.names for n in (alias.name, alias.asname)]
            verb = "imports"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names, verb = [node.name], "defines"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names, verb = [node.id], "defines"
        else:
            continue
        found += [f"{module.name}:{node.lineno} {verb} {name}"
                  for name in names if name and STATE_ALIAS.fullmatch(name)]
    return found


def test_no_module_gives_a_state_a_second_name() -> None:
    found = [alias for module in MODULES for alias in state_aliases(module)]
    assert found == [], f"use the StudyState/TrialState/EventKind members instead: {found}"


def test_the_state_alias_check_sees_one() -> None:
    module = Module("m", ast.parse("from searchsvc.core import TRIAL_FAILED, TrialState\n"
                                   "EVENT_RETRIED = 'retried'\nFINISHED_TRIAL_STATES = ()\n"))
    assert state_aliases(module) == ["m:1 imports TRIAL_FAILED", "m:2 defines EVENT_RETRIED"]


def test_the_next_study_names_no_searcher() -> None:
    """Whether a study's searcher can take a replayed rule's ``early_stopping:`` block, the
    searchers say (``stops_trials``): the suggested next study asks the registry instead of
    listing names."""
    from searchsvc.plugins import SEARCHERS

    [module] = [m for m in MODULES if m.name == "searchsvc.analysis.next_study"]
    found = [f"{module.name}:{node.lineno} names {node.value!r}" for node in ast.walk(module.tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and node.value in SEARCHERS.names()]
    assert found == []


DRIVER_MODULE_LINES = 400  # each of the driver's modules does one job of a run


def test_no_driver_module_outgrows_one_job() -> None:
    long = {path.name: n for path in sorted((PACKAGE / "driver").rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > DRIVER_MODULE_LINES}
    assert long == {}, f"split by job: {long}"


def name_users(name: str) -> list[str]:
    """The modules that read ``name`` (as a plain name or an attribute), its definer aside."""
    return sorted(m.name for m in MODULES
                  if any((isinstance(n, ast.Name) and n.id == name)
                         or (isinstance(n, ast.Attribute) and n.attr == name)
                         or (isinstance(n, ast.alias) and n.name == name)
                         for n in ast.walk(m.tree)))


def test_a_studys_objective_paths_have_one_rule() -> None:
    # Where an objective is imported from (its code, its file's folder, its launch folder) is
    # decided by provenance.objective_paths; a use case computes it once and hands it down, so
    # preflight, the Ray session and the run cannot disagree.
    assert name_users("search_paths_for") == ["searchsvc.provenance"]
    assert "searchsvc.driver.session" not in name_users("objective_paths")
    assert "searchsvc.driver.preflight" not in name_users("objective_paths")


def test_the_name_user_finder_sees_imports_and_attributes() -> None:
    users = name_users("objective_paths_of")
    assert "searchsvc.driver.run" in users and "searchsvc.usecases" in users
