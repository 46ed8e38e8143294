"""Every run-folder name comes from RunFolder (issue 25 item 12): no other module types one out.

Three checks over the package's source (its syntax tree, so comments and docstrings do not count):

* a RunFolder name (a class constant such as "server.log", or a template of a path method such as
  "bench-{}.log") typed as a string anywhere but rundir/__init__.py;
* a path joined onto one of RunFolder's directory names (``x / "logs"``) anywhere but rundir/__init__.py;
* any other string shaped like a file name (``watchdog.log``, ``k2vv-{}.json``) that is not on the
  short list below of names that are not the run folder's (a checkpoint's, a tokenizer's, a tool
  repository's), each with its reason. A new log or result file must be named on RunFolder.

The checks run on a copy of the package with one literal put back (test_the_check_catches_...),
so they are known to fail when a literal reappears.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from pathlib import Path

import pytest

from kimi_runbooks.rundir import RunFolder

SRC = Path(__file__).resolve().parents[1] / "src" / "kimi_runbooks"
RUNDIR = Path("rundir", "__init__.py")

FILE_NAME = re.compile(r"^[\w{}-][\w.{}-]*\.(log|jsonl|json|html|txt|sbatch|sh|csv|out|err)$")
NOT_THE_RUN_FOLDERS = {
    "model.safetensors.index.json": "a checkpoint's shard index (deploy/preflight reads the model folder)",
    "tokenizer.json": "the Hugging Face tokenizer file inside a tokenizer folder",
    "config.json": "a checkpoint's config (the CPU rehearsal writes a tiny Hugging Face model folder)",
    "generation_config.json": "a checkpoint's generation config (the CPU rehearsal's tiny model folder)",
    "tokenizer_config.json": "the Hugging Face tokenizer file inside a tokenizer folder",
    "kernel.json": "a Jupyter kernelspec's file",
    "profile_export.jsonl": "AIPerf's own per-request export, inside the artifact directory AIPerf is given",
    "sglang_server_args.json": "package data (the emulator's copy of SGLang's ServerArgs)",
    "sglang_server_options.json": "package data (SGLang's launch options)",
    "setup_tool_env.sh": "the checkout's scripts/ file that builds a tool env",
    "gpqa_diamond.csv": "the dataset file inspect_evals downloads",
    "compare-{}.html": "a comparison page, written next to the run folders, not inside one",
    "tool-calls/samples.jsonl": "K2-Vendor-Verifier's own file in its checkout",
}
NOT_THE_RUN_FOLDERS_DIRS = {("paths.py", "notebooks"): "the checkout's notebooks/ folder"}


def _template(node: ast.AST) -> str | None:
    """A string constant's value, or an f-string with each placeholder as {}."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else "{}" for v in node.values]
        return "".join(str(p) for p in parts)
    return None


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
    }
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    found = []
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in parts:
            continue
        text = _template(node)
        if text is not None:
            found.append((getattr(node, "lineno", 0), text))
    return found


@functools.cache
def _run_folder_names() -> tuple[set[str], set[str]]:
    """(file names and templates, directory names) as rundir/__init__.py spells them."""
    tree = ast.parse((SRC / RUNDIR).read_text())
    files = {t for _, t in _strings(tree) if FILE_NAME.match(t)}
    joined = [n.right for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    named = [
        n.args[0] for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "_Named" and n.args
    ]
    # RunFolder's own constants without a suffix name folders too (TOOL_LOGS, CI_TOOLCALL_SAMPLES)
    (folder_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RunFolder"]
    constants = [n.value for n in folder_class.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)]
    dirs = {t for node in joined + named + constants if (t := _template(node)) and re.fullmatch(r"[\w-]+", t)}
    return files, dirs


def violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root) != RUNDIR:
            found += _file_violations(str(path.relative_to(root)), path.read_text())
    return found


@functools.cache
def _file_violations(where: str, text: str) -> list[str]:
    """One file's findings; cached by its text, so the put-back copies parse only the file they change."""
    files, dirs = _run_folder_names()
    found = []
    tree = ast.parse(text, where)
    for line, value in _strings(tree):
        if value in files:
            found.append(f"{where}:{line}: {value!r} is RunFolder's name: use its constant or path method")
        elif FILE_NAME.match(value) and value not in NOT_THE_RUN_FOLDERS:
            found.append(f"{where}:{line}: {value!r} looks like a run-folder file: name it on RunFolder")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and (name := _template(node.right)) in dirs
            and (where, name) not in NOT_THE_RUN_FOLDERS_DIRS
        ):
            found.append(f"{where}:{node.lineno}: / {_template(node.right)!r}: use RunFolder's directory")
    return found


def test_run_folder_names_come_from_run_folder_only() -> None:
    found = violations(SRC)
    assert not found, "run-folder names typed outside rundir/__init__.py:\n" + "\n".join(found)


def test_the_names_found_are_run_folders_own() -> None:
    files, dirs = _run_folder_names()
    assert {RunFolder.SERVER_LOG, RunFolder.MANIFEST, RunFolder.BENCH, RunFolder.WATCHDOG_LOG} <= files
    assert "bench-{}.log" in files and "server-{}-{}.log" in files
    assert {"logs", "metrics", "telemetry", "bench_raw", RunFolder.CI_TOOLCALL_SAMPLES} <= dirs


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("deploy/watchdog.py", "RunFolder.WATCHDOG_LOG", '"watchdog.log"'),  # a known name back
        (
            "speed/run.py",
            "run.folder.logs / RunFolder.TOKEN_PROBE_LOG",
            'run.folder.path / "logs" / "probe.log"',
        ),  # a new one
        ("deploy/sbatch.py", "RunFolder.SERVER_LOG", '"server.log"'),
        ("accuracy/suites.py", "ctx.work / RunFolder.CI_TOOLCALL_SAMPLES", 'ctx.work / "toolcall-ci"'),  # a folder
    ],
)
def test_the_check_catches_a_literal_put_back(tmp_path: Path, module: str, old: str, new: str) -> None:
    copy = tmp_path / "kimi_runbooks"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    text = target.read_text()
    assert old in text, f"{module} no longer says {old}: update this test"
    target.write_text(text.replace(old, new, 1))
    found = violations(copy)
    assert found and all(str(Path(module)) in f for f in found), found
