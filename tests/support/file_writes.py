"""Who writes files, read from the syntax tree: the package's own writes (`file_writes`) and the
files it has other programs write (`tool_outputs`): papermill's executed notebook, a subprocess's
stdout/stderr given a file, and a path after an output flag on a tool's command line."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

WRITE_METHODS = {"write_text", "write_bytes", "touch", "chmod", "symlink_to", "hardlink_to"}
WRITE_FUNCTIONS = {
    ("json", "dump"),
    ("nbformat", "write"),
    ("shutil", "copy"),
    ("shutil", "copyfile"),
    ("shutil", "copy2"),
    ("shutil", "copytree"),
    ("shutil", "move"),
    ("os", "write"),
    ("os", "rename"),
    ("os", "replace"),
}


def file_writes(path: Path) -> list[str]:
    """Writes by the module itself: Path.write_text and kin, json.dump, shutil copies and moves,
    os.write/rename/replace, and open()/Path.open()/os.fdopen() in a writing mode."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if func.attr in WRITE_METHODS or (owner, func.attr) in WRITE_FUNCTIONS:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(func)}")
                continue
        fdopen = isinstance(func, ast.Attribute) and func.attr == "fdopen"
        if (
            (isinstance(func, ast.Name) and func.id == "open")
            or fdopen
            or (isinstance(func, ast.Attribute) and func.attr == "open")
        ):
            mode = (
                node.args[1]
                if (isinstance(func, ast.Name) or fdopen) and len(node.args) > 1
                else (node.args[0] if isinstance(func, ast.Attribute) and not fdopen and node.args else None)
            )
            for kw in node.keywords:
                if kw.arg == "mode":
                    mode = kw.value
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
                opener = "os.fdopen" if fdopen else "open"  # fdopen: a descriptor (a pipe, a temp file)
                found.append(f"{path.name}:{node.lineno} {opener}(mode={mode.value!r})")
    return found


# ---------------------------------------------------------------- files other programs write

OUTPUT_FLAG = re.compile(r"--(output|out|log|artifact|save|export|results?|summary|run)(-(file|dir|path|folder))?")
"""Flags after which a tool writes to the path that follows (bench_serving --output-file, sgl-eval
--out-dir, inspect --log-dir, K2VV --output/--summary, aiperf --artifact-dir, the log pump --log)."""
QUIET_STREAMS = {"None", "subprocess.PIPE", "subprocess.DEVNULL", "subprocess.STDOUT", "sys.stdout", "sys.stderr"}
PATH_STEPS = {"resolve", "absolute", "expanduser", "with_suffix", "with_name", "joinpath"}
AS_PATH = {"str", "Path", "os.fspath", "write_atomically"}
"""Calls that hand on the path they are given (write_atomically: papermill's atomic I/O handler's URL)."""
NOTEBOOK_OUTPUT = ("output_path", "dest")


@dataclass
class _Scope:
    """One function (or a module's top level): its parameters, what each local name is bound to,
    and which names hold a RunFolder."""

    module: str
    name: str
    params: list[str]
    method: bool
    bound: dict[str, list[ast.expr]] = field(default_factory=dict)
    folders: set[str] = field(default_factory=set)
    body: list[ast.AST] = field(default_factory=list)


def _own_nodes(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a scope, not descending into the functions and classes it defines."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        todo += ast.iter_child_nodes(node)


def _scopes(module: str, tree: ast.Module) -> list[_Scope]:
    out = [_Scope(module, "<module>", [], False, body=list(tree.body))]
    classes = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            every = [*a.posonlyargs, *a.args, *a.kwonlyargs]
            scope = _Scope(module, node.name, [p.arg for p in every], id(node) in classes, body=list(node.body))
            scope.folders = {
                p.arg for p in every if p.annotation is not None and "RunFolder" in ast.unparse(p.annotation)
            }
            out.append(scope)
    for scope in out:
        for node in _own_nodes(scope.body):
            pairs: list[tuple[ast.expr, ast.expr]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                pairs = [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars is not None]
            for target, value in pairs:
                if isinstance(target, ast.Name):
                    scope.bound.setdefault(target.id, []).append(value)
                    if _is_folder(value, scope):
                        scope.folders.add(target.id)
    return out


def _is_folder(expr: ast.expr, scope: _Scope) -> bool:
    """A RunFolder: a name annotated or bound as one, a RunFolder(...)/RunFolder.of(...) call, or
    anything called `folder` (the package's one name for a RunFolder: `folder`, `run.folder`)."""
    if isinstance(expr, ast.Name):
        return expr.id == "folder" or expr.id in scope.folders
    if isinstance(expr, ast.Attribute):
        return expr.attr == "folder"
    if isinstance(expr, ast.Call):
        return ast.unparse(expr.func).split(".")[0] == "RunFolder" or (
            isinstance(expr.func, ast.Attribute)
            and _is_folder(expr.func.value, scope)
            and expr.func.attr in ("of", "create", "writer")
        )
    if isinstance(expr, ast.BoolOp):
        return any(_is_folder(v, scope) for v in expr.values)
    return False


Origin = frozenset[str] | None
"""Where a path comes from: None when not from a RunFolder, else the parameters it is passed in
through (empty: from a RunFolder in this very scope)."""


def _join(*origins: Origin) -> Origin:
    if any(o is None for o in origins):
        return None
    return frozenset().union(*(o for o in origins if o is not None))


def origin(expr: ast.expr, scope: _Scope, seen: frozenset[str] = frozenset()) -> Origin:
    """A path obtained from a RunFolder: a call or attribute on one (`folder.notebook(name)`,
    `folder.path`, `RunFolder.tool_log(...)`), that path wrapped (str(), Path(), `/ "name"`,
    .resolve(), .parent, ...), or a local name bound only to such paths."""
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and (
            _is_folder(func.value, scope) or ast.unparse(func.value) == "RunFolder"
        ):
            return frozenset()
        if ast.unparse(func) in AS_PATH and expr.args:
            return origin(expr.args[0], scope, seen)
        if isinstance(func, ast.Attribute) and func.attr in PATH_STEPS:
            return origin(func.value, scope, seen)
        return None
    if isinstance(expr, ast.Attribute):
        if _is_folder(expr.value, scope):
            return frozenset()
        return origin(expr.value, scope, seen) if expr.attr == "parent" else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        return origin(expr.left, scope, seen)
    if isinstance(expr, ast.IfExp):
        return _join(origin(expr.body, scope, seen), origin(expr.orelse, scope, seen))
    if isinstance(expr, ast.Name):
        if expr.id in scope.bound and expr.id not in seen:
            return _join(*(origin(v, scope, seen | {expr.id}) for v in scope.bound[expr.id]))
        if expr.id in scope.params:
            return frozenset({expr.id})
    return None


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _sinks(scope: _Scope) -> Iterator[tuple[int, str, ast.expr]]:
    """(line, what, path expression) for each place in the scope a program is told where to write."""
    for node in _own_nodes(scope.body):
        if isinstance(node, ast.Call):
            if _callee(node) == "execute_notebook":
                dest = node.args[1] if len(node.args) > 1 else None
                dest = next((k.value for k in node.keywords if k.arg in NOTEBOOK_OUTPUT), dest)
                if dest is not None:
                    yield node.lineno, "papermill's executed notebook", dest
            for kw in node.keywords:
                if kw.arg in ("stdout", "stderr") and ast.unparse(kw.value) not in QUIET_STREAMS:
                    yield node.lineno, f"a subprocess's {kw.arg}", kw.value
        elif isinstance(node, (ast.List, ast.Tuple)):
            for flag, value in zip(node.elts, node.elts[1:], strict=False):
                if isinstance(flag, ast.Constant) and isinstance(flag.value, str) and OUTPUT_FLAG.fullmatch(flag.value):
                    yield node.lineno, f"a tool's {flag.value}", value
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and OUTPUT_FLAG.fullmatch(key.value):
                    yield node.lineno, f"a tool's {key.value}", value
        elif isinstance(node, ast.JoinedStr) and len(node.values) > 1:
            head, formatted = node.values[0], node.values[1]
            if isinstance(head, ast.Constant) and isinstance(formatted, ast.FormattedValue):
                name = str(head.value).removesuffix("=")
                if str(head.value).endswith("=") and OUTPUT_FLAG.fullmatch(name):
                    yield node.lineno, f"a tool's {name}", formatted.value


def _key(scope: _Scope) -> str:
    return f"{scope.module}:{scope.name}"


def _argument(call: ast.Call, scope: _Scope, param: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    params = scope.params[1:] if scope.method and isinstance(call.func, ast.Attribute) else scope.params
    index = params.index(param)
    args = call.args
    if any(isinstance(a, ast.Starred) for a in args[: index + 1]) or index >= len(args):
        return None
    return args[index]


def tool_outputs(modules: Mapping[str, Path], allowed: Mapping[str, str]) -> list[str]:
    """Paths a program is told to write that do not come from a RunFolder. A path that arrives as a
    parameter is followed to every call of that function in the package (matched by name), and
    each caller must pass a RunFolder path (or its own parameter, followed the same way); a
    function no caller reaches is an offender. `allowed` ("module:function" -> why) exempts what
    one function does, with the reason its path is a run folder's or needs none."""
    scopes = [s for name, path in modules.items() for s in _scopes(name, ast.parse(path.read_text()))]
    calls: dict[str, list[tuple[ast.Call, _Scope]]] = {}
    for scope in scopes:
        for node in _own_nodes(scope.body):
            if isinstance(node, ast.Call) and (callee := _callee(node)):
                calls.setdefault(callee, []).append((node, scope))
    offenders: dict[tuple[str, int], str] = {}  # one per call: a call can be a sink and pass a path on
    todo: list[tuple[_Scope, str, str]] = []  # (function, parameter, what it ends up as)
    for scope in scopes:
        for line, what, expr in _sinks(scope):
            found = origin(expr, scope)
            if found is None and _key(scope) not in allowed:
                message = f"{_key(scope)}:{line} {what} is {ast.unparse(expr)!r}, not a RunFolder path"
                offenders.setdefault((_key(scope), line), message)
            todo += [(scope, param, what) for param in sorted(found or ())]
    done: set[tuple[str, str, str]] = set()
    while todo:
        scope, param, what = todo.pop()
        key = (scope.module, scope.name, param)
        if key in done:
            continue
        done.add(key)
        sites = [(c, s) for c, s in calls.get(scope.name, []) if s is not scope]
        reached = False
        for call, caller in sites:
            arg = _argument(call, scope, param)
            if arg is None:
                continue
            reached = True
            found = origin(arg, caller)
            if found is None and _key(caller) not in allowed:
                message = (
                    f"{_key(caller)}:{call.lineno} passes {ast.unparse(arg)!r} as {scope.name}({param}=...), "
                    f"which becomes {what}: not a RunFolder path"
                )
                offenders.setdefault((_key(caller), call.lineno), message)
            todo += [(caller, p, what) for p in sorted(found or ())]
        if not reached and _key(scope) not in allowed:
            message = f"{_key(scope)}({param}) becomes {what}, and no caller in the package passes it"
            offenders.setdefault((_key(scope), 0), message)
    return [offenders[k] for k in sorted(offenders)]
