"""Imports run in one direction (docs/architecture.md, "Layers").

Every module under src/snapdp is parsed with ``ast``; every import it makes — at the top, inside a
function, under ``TYPE_CHECKING`` — is resolved to the module it loads and checked against the
layer map below: a module may import from its own layer or a lower one, never from a higher one.
``from package import name`` loads ``package.name`` when that is a module, else the package;
``importlib.import_module("…")`` with a literal name counts too.
A module the map does not place fails the test too (a new module must be given a layer).
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: Top to bottom. The data flow of a release reads the same way: front end → workload → planner
#: → release → statistics → engine → noise (the release session sits above the planner, whose
#: preview it follows); the workload itself (the declaration and the one IR every
#: front end produces, ``snapdp.data.model``) is the lowest layer of ``snapdp.data``.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli/page", ("snapdp.cli", "snapdp.cli.*", "snapdp.ui", "snapdp.ui.*")),
    # the API modules above the front ends: entry points that parse TOML or SQL
    ("api", ("snapdp.data", "snapdp.data.api")),
    # text → workload (flags, TOML, SQL), the workload → TOML text writer, the demo table
    ("front ends", ("snapdp.data.frontends", "snapdp.data.frontends.*")),
    # the release: the one session, the release core, the table door, plan runs (it follows the
    # planner's preview, so it sits above the planner)
    ("release", ("snapdp.data.release", "snapdp.data.release.*")),
    ("planner", (
        "snapdp.data.planner", "snapdp.data.planner.*",
    )),
    # the data owner's tools that read the data without privacy (snapdp check), beside the planner
    ("owner", ("snapdp.data.owner", "snapdp.data.owner.*")),
    ("statistics", (
        # statistics/: kinds, pipeline, calibration, refusals, sensitivity, bounding, consistency
        # (+ consistency_fit), math/ (sum_bound, sample_variance, quantile_tree, quantile_tail,
        # exponential_grid, quantile_values)
        "snapdp.data.statistics", "snapdp.data.statistics.*",
    )),
    ("engines", ("snapdp.data.engines", "snapdp.data.engines.*")),
    # what a release hands back (results, writers, report) and the budget ledger: only model/ below
    ("output", ("snapdp.data.output", "snapdp.data.output.*")),
    ("budget", ("snapdp.data.budget", "snapdp.data.budget.*")),
    # the declaration and the workload IR: schema, predicate, query, workload, codec, names
    ("model", ("snapdp.data.model", "snapdp.data.model.*")),
    ("analysis", (
        "snapdp.analysis", "snapdp.analysis.*", "snapdp.verify", "snapdp.verify.*",
        "snapdp.usefulness",
    )),
    ("mechanism", (
        "snapdp", "snapdp.mechanism", "snapdp.accuracy", "snapdp.rescaling", "snapdp.shift",
        "snapdp.fast", "snapdp.fast_plan", "snapdp.snapping", "snapdp.distribution",
        "snapdp.parameters", "snapdp.guarantee", "snapdp.exponential", "snapdp._certcache",
        "snapdp._logcache",
    )),
    ("randomness", ("snapdp.randomness",)),
    ("ieee", ("snapdp.ieee", "snapdp.errors", "snapdp._validation", "snapdp._rational",
              "snapdp._exact", "snapdp._blas", "snapdp._records")),
)  # fmt: skip


def _modules(src: Path = SRC) -> dict[str, Path]:
    out = {}
    for path in sorted((src / "snapdp").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def layer_of(module: str) -> int | None:
    """The index of the module's layer (0 the top), the most specific pattern winning."""
    best: tuple[int, int] | None = None  # (specificity, layer)
    for i, (_name, patterns) in enumerate(LAYERS):
        for p in patterns:
            if fnmatch.fnmatchcase(module, p):
                score = len(p) - (2 if p.endswith("*") else 0)
                if best is None or score > best[0]:
                    best = (score, i)
    return None if best is None else best[1]


def imports_of(module: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, module loaded) for every snapdp import in the file, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            for a in node.names:
                full = f"{base}.{a.name}"
                out.append((node.lineno, full if full in known else base))
        elif (  # importlib.import_module("snapdp.…") with a literal name
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value))
    return [(line, m) for line, m in out if m == "snapdp" or m.startswith("snapdp.")]


def upward_imports(src: Path = SRC) -> list[str]:
    """Every import of a higher layer, as ``module:line -> target (layer -> layer)``."""
    modules = _modules(src)
    known = set(modules)
    bad = []
    for module, path in modules.items():
        own = layer_of(module)
        for line, target in imports_of(module, path, known):
            to = layer_of(target)
            if own is None or to is None:
                bad.append(f"{module}:{line} -> {target} (no layer)")
            elif to < own:
                bad.append(
                    f"{module}:{line} -> {target} ({LAYERS[own][0]} imports {LAYERS[to][0]})"
                )
    return bad


def test_every_module_has_a_layer() -> None:
    missing = [m for m in _modules() if layer_of(m) is None]
    assert not missing, missing


def test_no_module_imports_a_higher_layer() -> None:
    bad = upward_imports()
    assert not bad, "\n".join(bad)


def import_circles(src: Path = SRC) -> list[list[str]]:
    """The import circles among modules (every import counted, lazy or typing-only): the
    strongly connected components of more than one module (Tarjan's algorithm)."""
    modules = _modules(src)
    known = set(modules)
    graph = {
        m: sorted({t for _, t in imports_of(m, p, known) if t in known and t != m})
        for m, p in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_no_import_circles() -> None:
    """No two modules import each other, even lazily or for types only (was: plan ↔ two_phase)."""
    circles = import_circles()
    assert not circles, circles


def test_the_model_imports_nothing_else_of_the_data_package() -> None:
    """The workload IR and the declaration sit at the bottom of ``snapdp.data``."""
    modules = _modules()
    bad = [
        f"{m} -> {t}"
        for m, p in modules.items()
        if m.startswith("snapdp.data.model")
        for _, t in imports_of(m, p, set(modules))
        if t.startswith("snapdp.data") and not t.startswith("snapdp.data.model")
    ]
    assert not bad, bad


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ("def f():\n    from snapdp.data.frontends.toml import load_plan\n", True),
        ("import snapdp.data.frontends.sql\n", True),
        ("from snapdp.data import api\n", True),
        ("from . import statistics\n", False),
        ("from snapdp.data.model.schema import Schema\n", False),
        ("import importlib\nimportlib.import_module('snapdp.data.api')\n", True),
    ],
)
def test_the_check_sees_lazy_and_relative_imports(tmp_path: Path, text: str, caught: bool) -> None:
    """A planner module written with each import: the upward ones are caught."""
    for module, path in _modules().items():
        target = tmp_path / path.relative_to(SRC)
        target.parent.mkdir(parents=True, exist_ok=True)
        if module != "snapdp.data.planner.plan":
            target.write_text("")
    (tmp_path / "snapdp/data/planner/plan.py").write_text(text)
    assert bool(upward_imports(tmp_path)) is caught


# -- one check per fact ---------------------------------------------------------------------
def _data_files_with(text: str) -> list[str]:
    return sorted(
        str(p.relative_to(SRC))
        for p in (SRC / "snapdp" / "data").rglob("*.py")
        if text in p.read_text(encoding="utf-8")
    )


def test_one_rule_turns_a_confidence_into_alpha() -> None:
    """α = 1 − confidence from the decimal written is computed in one place
    (``snapdp.data.model.workload.alpha_of``); the planner, the session and the API call it."""
    assert _data_files_with("1 - Fraction(repr(") == ["snapdp/data/model/workload.py"]


def test_one_rule_writes_an_exact_number() -> None:
    """Every exact number the data package writes for people or files (a plan, JSON, ε) goes
    through ``snapdp._rational.exact_text``: no module spells the rule again."""
    assert _data_files_with("max_digits=None") == []


#: The most lines a source file may have (issue 31: "no file over 500 lines").
MAX_LINES = 500


def test_no_source_file_is_over_500_lines() -> None:
    """Every module under src/snapdp has one job and at most ``MAX_LINES`` lines."""
    long = {
        str(path.relative_to(SRC)): n
        for path in sorted((SRC / "snapdp").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_one_text_for_a_name_not_declared_and_a_column_not_in_the_source() -> None:
    """Every refusal of an undeclared name or a column the source lacks comes from
    ``snapdp.errors.not_declared`` / ``not_in_source`` (issue 31 item 6: one check per fact)."""
    own = {SRC / "snapdp" / "errors.py"}
    for path in sorted((SRC / "snapdp").rglob("*.py")):
        if path in own:
            continue
        text = path.read_text(encoding="utf-8")
        assert "is not declared" not in text.replace("``", ""), path
        assert "is not in the data" not in text, path
