"""`kimi-runbooks cookbook sync`: read a newer revision of the kept cookbook pages (an sglang
checkout or the config files), keep it, regenerate the recipe data and print what changed, cell by
cell, against the revision kept before (what the page shows by default: its default overlays)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .jsconfig import ConfigReadError, read_config
from .kept import generate, write_generated
from .kept_files import SOURCES_FILE, cookbook_dir, load_generated, read_sources
from .snippets import generate_snippet, read_snippet, snippet_diff


class SyncError(ValueError):
    """Bad input to `cookbook sync`; the message names the fix."""


def _page_of_file(path: Path, pages: dict[str, Any]) -> str:
    name = path.name.removesuffix(".jsx").split("@")[0]
    for page, info in pages.items():
        if name == page or Path(info["path"]).name == path.name:
            return page
    raise SyncError(
        f"{path} is none of the kept cookbook pages ({', '.join(pages)}). Fix: pass one of their config files"
    )


def _checkout_commit(directory: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SyncError(f"{directory} is not a git checkout, so its commit is unknown. Fix: pass --commit <sha>")
    return done.stdout.strip()


def _inputs(paths: list[Path], pages: dict[str, Any], commit: str | None) -> list[tuple[str, Path, str]]:
    """(page, config file, commit) for each page the inputs hold."""
    found: list[tuple[str, Path, str]] = []
    for path in paths:
        if path.is_dir():
            sha = commit or _checkout_commit(path)
            found += [
                (page, path / info["path"], sha) for page, info in pages.items() if (path / info["path"]).is_file()
            ]
            continue
        if not path.is_file():
            raise SyncError(f"{path} does not exist. Fix: pass an sglang checkout or its config .jsx files")
        page = _page_of_file(path, pages)
        _, at, tail = path.name.removesuffix(".jsx").partition("@")
        sha = commit or (tail if at else "")
        if not sha:
            raise SyncError(
                f"the commit of {path} is unknown. Fix: pass --commit <sha>, or name the file <page>@<sha>.jsx"
            )
        found.append((page, path, sha))
    if not found:
        raise SyncError("no kept cookbook page found in the inputs. Fix: pass an sglang checkout or the config files")
    return found


def _keep_revision(params_dir: Path, page: str, source: Path, commit: str) -> dict[str, Any]:
    """Copy the config into sources/ and list it first under the page (a text edit: the file's
    comments stay)."""
    rel = f"sources/{page}@{commit[:8]}.jsx"
    target = cookbook_dir(params_dir) / rel
    if source.resolve() != target.resolve():
        shutil.copyfile(source, target)
    kept = read_sources(params_dir)
    info = {**kept["pages"], **kept.get("snippets", {})}[page]
    revision = {
        "commit": commit,
        "file": rel,
        "url": f"https://github.com/sgl-project/sglang/blob/{commit}/{info['path']}",
    }
    sources = cookbook_dir(params_dir) / SOURCES_FILE
    lines = sources.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.rstrip() == f"  {page}:")
    at = next(i for i in range(at, len(lines)) if lines[i].rstrip() == "    revisions:")
    entry = [f"      - commit: {commit}\n", f"        file: {rel}\n", f"        url: {revision['url']}\n"]
    lines[at + 1 : at + 1] = entry
    sources.write_text("".join(lines), encoding="utf-8")
    return revision


def sync(params_dir: Path, paths: list[Path], commit: str | None = None) -> list[str]:
    """Keep the inputs' revisions, regenerate their recipes (a snippet: its commands), and the
    diff lines against the revisions kept before."""
    kept_sources = read_sources(params_dir)
    snippets = kept_sources.get("snippets", {})
    pages = {**kept_sources["pages"], **snippets}
    report: list[str] = []
    for page, path, sha in _inputs(paths, pages, commit):
        info = pages[page]
        is_snippet = page in snippets
        kept = info.get("revisions", [])
        before = next((r for r in kept if r["commit"] != sha), None)
        old = load_generated(params_dir, page, before["commit"]) if before else None
        try:
            # refuse a file node cannot read before keeping anything
            shown = read_snippet(path) if is_snippet else read_config(path)
            revision = next((r for r in kept if r["commit"] == sha), None) or _keep_revision(
                params_dir, page, path, sha
            )
            new = (
                generate_snippet(params_dir, page, revision, shown)
                if is_snippet
                else generate(params_dir, page, revision)
            )
        except ConfigReadError as e:
            raise SyncError(str(e)) from None
        write_generated(params_dir, info, revision, new)
        report += snippet_diff(page, old, new) if is_snippet else diff(page, old, new)
    return report


def regenerate(params_dir: Path) -> list[Path]:
    """Every kept revision's recipes generated again from its kept config file."""
    written = []
    kept = read_sources(params_dir)
    for page, info in kept["pages"].items():
        for revision in info.get("revisions", []):
            written.append(write_generated(params_dir, info, revision, generate(params_dir, page, revision)))
    for name, info in kept.get("snippets", {}).items():
        for revision in info.get("revisions", []):
            written.append(write_generated(params_dir, info, revision, generate_snippet(params_dir, name, revision)))
    return written


# --------------------------------------------------------------------------- diff


def _shown(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The page's cells as it shows them by default (its default speculative overlay), by key."""
    quants = {c.get("quantization", "") for c in data["cells"]}
    out: dict[str, dict[str, Any]] = {}
    for cell in data["cells"]:
        spec = cell.get("speculative", "")
        key = " ".join(
            [
                cell["hardware"],
                cell.get("role", "unified"),
                *([cell["quantization"]] if len(quants) > 1 else []),
                cell["strategy"],
            ]
        )
        if spec in ("", data["default_speculative"]) or key not in out:
            out[key] = cell
    return out


def _flags(cell: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for flag in cell["flags"]:
        tokens = shlex.split(flag)
        out[tokens[0]] = " ".join(tokens[1:])
    return out


def _cell_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if old["verified"] != new["verified"]:
        lines.append(f"verified: {_yes(old['verified'])} -> {_yes(new['verified'])}")
    if old["nodes"] != new["nodes"]:
        lines.append(f"nodes: {old['nodes']} -> {new['nodes']}")
    if old.get("image") != new.get("image"):
        lines.append(f"image: {old.get('image')} -> {new.get('image')}")
    a, b = _flags(old), _flags(new)
    lines += [f"flag removed: {_flag(k, a[k])}" for k in a if k not in b]
    lines += [f"flag added: {_flag(k, b[k])}" for k in b if k not in a]
    lines += [f"flag changed: {k} {a[k]} -> {b[k]}" for k in a if k in b and a[k] != b[k]]
    ea, eb = (
        {**old.get("env", {}), **old.get("multi_node_env", {})},
        {**new.get("env", {}), **new.get("multi_node_env", {})},
    )
    lines += [f"env removed: {k}={ea[k]}" for k in ea if k not in eb]
    lines += [f"env added: {k}={eb[k]}" for k in eb if k not in ea]
    lines += [f"env changed: {k} {ea[k]} -> {eb[k]}" for k in ea if k in eb and ea[k] != eb[k]]
    return lines


def _flag(name: str, value: str) -> str:
    return f"{name} {value}".strip()


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def diff(page: str, old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """What changed from the old revision's recipes to the new one's, cell by cell."""
    head = f"{page}: {old['commit'][:8] if old else '(none)'} -> {new['commit'][:8]}"
    if old is None:
        return [head, f"  first revision kept: {len(new['cells'])} recipes"]
    lines = [head]
    hw_old = {c["hardware"] for c in old["cells"]}
    hw_new = {c["hardware"] for c in new["cells"]}
    if hw_new - hw_old:
        lines.append(f"  hardware added: {', '.join(sorted(hw_new - hw_old))}")
    if hw_old - hw_new:
        lines.append(f"  hardware dropped: {', '.join(sorted(hw_old - hw_new))}")
    for hw in sorted(set(old["docker_images"]) | set(new["docker_images"])):
        a, b = old["docker_images"].get(hw), new["docker_images"].get(hw)
        if a != b:
            lines.append(f"  image {hw}: {a or '(none)'} -> {b or '(none)'}")
    if old["default_speculative"] != new["default_speculative"]:
        lines.append(
            f"  default speculative overlay: {old['default_speculative'] or '(none)'} -> "
            f"{new['default_speculative'] or '(none)'}"
        )
    shown_old, shown_new = _shown(old), _shown(new)
    for key in shown_old:
        if key not in shown_new:
            lines.append(f"  - cell {key}")
    for key, cell in shown_new.items():
        if key not in shown_old:
            lines.append(
                f"  + cell {key} ({cell['nodes']} node{'s' if cell['nodes'] > 1 else ''}, "
                f"verified {_yes(cell['verified'])})"
            )
            continue
        changes = _cell_diff(shown_old[key], cell)
        if changes:
            lines.append(f"  ~ cell {key}")
            lines += [f"      {c}" for c in changes]
    return lines
