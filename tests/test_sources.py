"""Sources a successor can audit: what the product shows cites public pages, never private notes.

The project was built from private working notes ("seed 000", "facts.md section 4", files under
/work/shared). None of that may leak into what ships: every `source:` names a public page, issue,
PR or repository file, and docs/sources.md lists each public source once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kimi_runbooks.paths import REPO_ROOT

SHIPPED_DIRS = ("params", "src", "notebooks", "runbooks", "scripts")
SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints"}
PRIVATE_MARKER = re.compile(r"seed 0\d|facts\.md|/work/shared|\bseeds'|\bseed's\b", re.IGNORECASE)
URL = re.compile(r"https?://[^\s'\"()<>]+")
SOURCES_DOC = REPO_ROOT / "docs" / "sources.md"


def _shipped_files() -> Iterator[Path]:
    for top in SHIPPED_DIRS:
        for path in sorted((REPO_ROOT / top).rglob("*")):
            parts = set(path.relative_to(REPO_ROOT).parts)
            if not path.is_file() or parts & SKIPPED_DIRS or any(p.endswith(".egg-info") for p in parts):
                continue
            yield path


def _source_values(node: Any, where: str = "") -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """(path, value, parent mapping) of every `source` / `*_source` key in a YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}" if where else str(key)
            if key == "source" or str(key).endswith("_source"):
                yield here, value, node
            else:
                yield from _source_values(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _source_values(item, f"{where}[{i}]")


def _params_sources() -> list[tuple[str, Any, dict[str, Any]]]:
    out = []
    for path in sorted((REPO_ROOT / "params").rglob("*.yaml")):
        rel = path.relative_to(REPO_ROOT)
        out += [
            (f"{rel}:{key}", value, parent) for key, value, parent in _source_values(yaml.safe_load(path.read_text()))
        ]
    return out


def test_no_shipped_file_cites_a_private_note():
    hits = []
    for path in _shipped_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary asset
        for lineno, line in enumerate(text.splitlines(), 1):
            if m := PRIVATE_MARKER.search(line):
                hits.append(f"{path.relative_to(REPO_ROOT)}:{lineno}: {m.group(0)!r}")
    assert not hits, "cite the public page instead (see docs/sources.md):\n" + "\n".join(hits)


def test_the_marker_catches_what_it_must():
    for private in (
        "(seed 000 section 3.2)",
        "Seed 003's matrix",
        "facts.md section 4",
        "/work/shared/seeds/x",
        "the seeds' version",
        "the seed's tables",
    ):
        assert PRIVATE_MARKER.search(private), private
    for public in ("seed: null", "--seed 1", "row['seed']", "seeded from its content", "tests/fixtures/seed_commands"):
        assert not PRIVATE_MARKER.search(public), public


def test_every_params_source_is_non_empty():
    sources = _params_sources()
    assert len(sources) > 50, "expected the sources of platforms, models, rules, references, scenarios"
    empty = []
    for where, value, parent in sources:
        sibling = re.split(r"[:.]", where)[-1].removesuffix("_source")
        if value is None and sibling != "source" and parent.get(sibling, "missing") is None:
            continue  # e.g. docker_image: null -> docker_image_source: null (nothing to cite)
        if not isinstance(value, str) or not value.strip():
            empty.append(where)
    assert not empty, f"empty source values: {empty}"


def test_every_url_in_params_sources_is_listed_in_docs_sources():
    assert SOURCES_DOC.is_file(), "docs/sources.md lists every public source once"
    listed = SOURCES_DOC.read_text()
    missing = sorted(
        {
            url.rstrip(".,;:")
            for _, value, _ in _params_sources()
            if isinstance(value, str)
            for url in URL.findall(value)
        }
        - {url for url in URL.findall(listed)}
    )
    assert not missing, f"add these to docs/sources.md: {missing}"


@pytest.mark.parametrize("url", sorted(set(URL.findall(SOURCES_DOC.read_text()))) if SOURCES_DOC.is_file() else [])
def test_docs_sources_cites_public_urls_only(url: str):
    assert not PRIVATE_MARKER.search(url) and "localhost" not in url and "127.0.0.1" not in url


PUBLIC_REFERENCE = re.compile(
    r"https?://"  # a page
    r"|\b[\w.-]+/[\w.-]+ (?:PR|issue|pull)s?\b"  # owner/repo PR 123, owner/repo issue 45
    r"|\.(?:py|js|yaml|md|mdx)\b[^;]*\b(?:sgl-project|ROCm|vllm-project)/[\w.-]+"  # a file of a named repo
)


NO_URL_KNOWN = {"rtx-pro-6000-mem-fraction-images"}
"""Rules whose only source is a public page we know by name but not by address; the source says so."""


def test_every_rule_cites_a_public_reference():
    """A rule's source is a page, an issue, a PR or a file of a public repository, not a label like
    'SGLang expert parallelism' or a path inside this repo."""
    weak = []
    for path in sorted((REPO_ROOT / "params" / "rules").glob("*.yaml")):
        for rule in yaml.safe_load(path.read_text())["rules"]:
            if rule["id"] in NO_URL_KNOWN:
                assert "no URL known" in rule["source"], rule["id"]
                continue
            if not PUBLIC_REFERENCE.search(str(rule.get("source", ""))):
                weak.append(f"{path.name}:{rule['id']}: {rule.get('source')!r}")
    assert not weak, "cite a public page, issue, PR or repository file:\n" + "\n".join(weak)
