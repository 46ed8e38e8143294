"""The stage-entry rules of tests/test_stage_entries.py as functions over a package folder, each
returning its offenders, so a test can run it on the real package and on a copy that breaks it."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

FOLDER_TYPE = "RunFolder"


def _public_modules(root: Path, packages: Iterable[str] | None = None) -> Iterator[tuple[str, ast.Module]]:
    """(dotted name, tree) of the modules under `packages` (folders of root), or all of root's."""
    folders = [root] if packages is None else [root / p for p in packages]
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(root.parent).with_suffix("")
            if any(part.startswith("_") and part != "__init__" for part in rel.parts):
                continue
            name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            yield name, ast.parse(path.read_text())


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    named = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    return [p for p in named if p.arg not in ("self", "cls")] + [p for p in (a.vararg, a.kwarg) if p is not None]


def wide_entry_points(root: Path, packages: Iterable[str], limit: int) -> list[str]:
    """Public module-level functions of `packages` taking more than `limit` parameters: a stage's
    knobs travel as one options model or a small typed group, not as a row of loose keywords."""
    out = []
    for module, tree in _public_modules(root, packages):
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                count = len(_parameters(node))
                if count > limit:
                    out.append(f"{module}:{node.name} ({count} parameters)")
    return out


def loose_folder_parameters(root: Path, skip: Iterable[str] = ()) -> list[str]:
    """Parameters (any function, any module) whose annotation unites RunFolder with a str or Path:
    a path becomes a RunFolder once, at the notebook or CLI edge (`RunFolder.of`), and everything
    below takes the RunFolder."""
    out = []
    for module, tree in _public_modules(root):
        if any(module.startswith(f"{root.name}.{s}") for s in skip):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for p in _parameters(node):
                if p.annotation is None:
                    continue
                names = {n.id for n in ast.walk(p.annotation) if isinstance(n, ast.Name)}
                if FOLDER_TYPE in names and names & {"str", "Path"}:
                    out.append(f"{module}:{node.name}({p.arg}: {ast.unparse(p.annotation)})")
    return out


def lazy_export_tables(root: Path, skip: Iterable[Path] = ()) -> list[str]:
    """Package `__init__` files that export through a module `__getattr__` (PEP 562) instead of
    plain imports; a heavy dependency is imported lazily where it is used, not by a name table."""
    out = []
    skipped = [s.resolve() for s in skip]
    for init in sorted(root.rglob("__init__.py")):
        if any(s in init.resolve().parents for s in skipped):
            continue
        tree = ast.parse(init.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            out.append(str(init.relative_to(root.parent)))
    return out
