"""docs/architecture.md names only what exists, so that it cannot go stale silently.

Every file path it writes (`ragstream/...`, `tests/...::test`, `deploy/...`, ...), every
link to another doc and its anchor, every code name in backticks (`QueryTable`,
`LabelJoin.open_scanned`), every "`Name` (`module path`)" pairing and its layer diagram
are checked against the repository and `pyproject.toml`.
"""

from __future__ import annotations

import ast
import builtins
import re
import tomllib
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
DOC = DOCS / "architecture.md"

_PATH = re.compile(r"\b(?:ragstream|tests|deploy|scripts|docs|bench)/[\w./-]*\w(?:::\w+)?")
_LINK = re.compile(r"\]\(([\w.-]+\.md)(?:#([\w-]+))?\)")
_CODE = re.compile(r"`([^`\n]+)`")
_NAME = re.compile(r"_?[A-Z]\w*(?:\.\w+)*")
"""A class, constant or protocol name, possibly with attributes: checked."""
_PAIRED = re.compile(r"`(\w+)`(?:\s+\(|,\s+|\s+of\s+|\s+in\s+)`(ragstream/[\w/]+\.(?:py|pyi|c))`")
"""`name` (`its module`), (`name`, `its module`), `name` of/in `its module`."""


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


class _Defined:
    """Every name the package defines or imports, and each class's attributes."""

    def __init__(self) -> None:
        self.names: set[str] = set(dir(builtins))
        self.by_file: dict[Path, set[str]] = defaultdict(set)
        self.attributes: dict[str, set[str]] = defaultdict(set)
        for path in sorted((ROOT / "ragstream").rglob("*.py*")):
            if path.suffix in (".py", ".pyi"):
                self._read(path, ast.parse(path.read_text(encoding="utf-8")))

    def _read(self, path: Path, tree: ast.Module) -> None:
        for node in tree.body:
            self.names.update(_bound(node))
            self.by_file[path].update(_bound(node, imports=False))
        for sub in ast.walk(tree):
            if isinstance(sub, ast.ImportFrom):
                self.names.update(alias.asname or alias.name for alias in sub.names)
            if isinstance(sub, ast.ClassDef):
                self.names.add(sub.name)
                self.attributes[sub.name].update(_class_attributes(sub))


def _bound(node: ast.stmt, *, imports: bool = True) -> list[str]:
    """The names a statement binds (by an import too, unless not `imports`)."""
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Try):  # optional imports of a compiled module
        return [n for stmt in node.body + node.orelse for n in _bound(stmt, imports=imports)]
    if isinstance(node, ast.ImportFrom) and imports:
        return [alias.asname or alias.name for alias in node.names]
    return []


def _class_attributes(node: ast.ClassDef) -> set[str]:
    """Methods, class-level names, `__slots__` and `self.x` assignments of a class."""
    out: set[str] = set()
    for item in node.body:
        out.update(_bound(item))
        if isinstance(item, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in item.targets
        ):
            out.update(ast.literal_eval(item.value))
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
        ):
            out.add(sub.attr)
    return out


@cache
def _defined() -> _Defined:
    return _Defined()


def _exists(name: str) -> bool:
    """`Name` is defined or used by the package; `Name.attr` is an attribute of a class of
    that name (its methods, fields, slots, properties)."""
    defined = _defined()
    head, *rest = name.split(".")
    if head not in defined.names:
        return False
    if not rest:
        return True
    return rest[0] in defined.attributes.get(head, set())


def test_every_path_exists() -> None:
    paths = sorted(set(_PATH.findall(_text())))
    assert len(paths) > 50  # the doc names the modules it describes
    missing = []
    for written in paths:
        path, _, test = written.partition("::")
        target = ROOT / path
        if not target.exists() or (test and test not in _test_names(target)):
            missing.append(written)
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def _test_names(path: Path) -> set[str]:
    """The module-level test functions of a test file."""
    return set(re.findall(r"^(?:async )?def (test\w*)\(", path.read_text(), re.M))


def test_every_link_and_anchor_resolves() -> None:
    links = _LINK.findall(_text())
    assert links
    broken = []
    for name, anchor in links:
        target = DOCS / name
        if not target.exists():
            broken.append(name)
        elif anchor and anchor not in _anchors(target):
            broken.append(f"{name}#{anchor}")
    assert not broken, f"docs/architecture.md links to what is not there: {broken}"


def _anchors(doc: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    headings = re.findall(r"^#+ (.+)$", doc.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_code_name_exists() -> None:
    names = sorted(
        {code for code in _CODE.findall(_text()) if _NAME.fullmatch(code) and "/" not in code}
    )
    assert len(names) > 50
    unknown = [name for name in names if not _exists(name)]
    assert not unknown, f"docs/architecture.md names what the package does not have: {unknown}"


def test_each_name_is_in_the_module_written_beside_it() -> None:
    pairs = sorted(set(_PAIRED.findall(_text())))
    assert len(pairs) > 12
    by_file = _defined().by_file
    wrong = []
    for name, path in pairs:
        target = ROOT / path
        if path.endswith(".c"):
            found = target.exists() and name in target.read_text(encoding="utf-8")
        else:
            found = name in by_file.get(target, set())
        if not found:
            wrong.append(f"{name} ({path})")
    assert not wrong, f"not defined where docs/architecture.md says: {wrong}"


def test_the_layer_diagram_is_the_import_contract() -> None:
    diagram = re.search(r"```text\n(.*?)```", _text(), re.S)
    assert diagram is not None
    drawn = [re.split(r"\s{2,}", line.strip())[0] for line in diagram[1].splitlines()]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    assert drawn == [layer.replace("ragstream.", "") for layer in layers]


@pytest.mark.parametrize("name", ["QueryTable", "PartitionState.export", "Engine.apply"])
def test_the_checks_find_real_names(name: str) -> None:
    assert _exists(name)


@pytest.mark.parametrize("name", ["QueryTables", "LabelJoin.open_lazy", "Engine.nothing"])
def test_the_checks_refuse_made_up_names(name: str) -> None:
    assert not _exists(name)
