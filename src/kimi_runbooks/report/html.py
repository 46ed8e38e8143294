"""Render the report: execute notebooks/report.ipynb for a run folder and export it as one
self-contained HTML file (code hidden, plotly.js inlined once, no external script or stylesheet,
secrets redacted)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..paths import NOTEBOOKS_DIR
from ..rundir import RunFolder

REPORT_NOTEBOOK = "report.ipynb"
MAX_REPORT_BYTES = 10 * 1024 * 1024


_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
"""
"""nbconvert's lab template without the MathJax and require.js CDN scripts (the report has no maths)."""

_EXTERNAL = re.compile(
    r"""<script\b[^>]*\bsrc\s*=\s*["']?(?!data:)[^"'\s>]+|"""
    r"""<link\b[^>]*\brel\s*=\s*["']?stylesheet[^>]*>|@import\s+url\(\s*["']?https?:""",
    re.IGNORECASE,
)


_PLOTLY_MATHJAX = re.compile(
    r"""<script src=["']https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/[^"']+["']></script>"""
)
"""plotly's `notebook` renderer puts a MathJax CDN loader before every figure (hard-coded
include_mathjax="cdn"); it only typesets LaTeX labels, which the report has none of, so it is dropped."""


def strip_plotly_mathjax(text: str) -> str:
    return _PLOTLY_MATHJAX.sub("", text)


def external_references(text: str) -> list[str]:
    """Every external script, stylesheet link or CSS @import in `text` (should be none)."""
    return [m.group(0)[:200] for m in _EXTERNAL.finditer(text)]


def export_html(
    notebook: str | Path, folder: RunFolder, html_path: str | Path | None = None, *, title: str | None = None
) -> Path:
    """Executed notebook -> self-contained HTML without code cells; refuses external references."""
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    if title:
        nb.metadata["title"] = title
    exporter = HTMLExporter(
        extra_loaders=[jinja2.DictLoader({"kimi_report.html.j2": _TEMPLATE})],
        template_file="kimi_report.html.j2",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    body, _ = exporter.from_notebook_node(nb)
    body = strip_plotly_mathjax(body)  # save_text redacts it, in its text nodes only
    found = external_references(body)
    if found:
        raise RuntimeError(
            f"the report would load external resources: {found[:3]}. Fix: use plotly "
            "renderer 'notebook' (report.setup_notebook()) and no CDN-linked outputs."
        )
    out = folder.save_text(html_path or folder.report, body)
    size = out.stat().st_size
    if size > MAX_REPORT_BYTES:
        raise RuntimeError(
            f"{out} is {size / 1e6:.1f} MB, over the {MAX_REPORT_BYTES / 1e6:.0f} MB limit. "
            "Fix: fewer figures or smaller tables in the report notebook."
        )
    return out


def redact_notebook(folder: RunFolder, path: str | Path) -> None:
    """Rewrite an executed notebook with every secret value replaced (outputs, parameters, logs)."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    folder.save_notebook(path, json.loads(nbformat.writes(nb)))


def render(
    folder: RunFolder,
    *,
    notebook: str | Path | None = None,
    kernel_name: str | None = None,
    progress: bool = False,
) -> Path:
    """Execute the report notebook for `folder` (copy kept in its notebooks/) -> report.html, with
    the values of the folder's secret env names redacted."""
    where = folder.path.resolve()  # the notebook runs in the folder: a relative path would not find it
    if not folder.path.is_dir():
        raise FileNotFoundError(f"run folder {folder.path} does not exist. Fix: pass an existing run folder.")
    source = Path(notebook) if notebook else NOTEBOOKS_DIR / REPORT_NOTEBOOK
    executed = folder.notebook(REPORT_NOTEBOOK)
    folder.mkdir(folder.notebooks)
    from ..execution.notebook import execute_notebook  # not at import: the report kernel never runs one

    execute_notebook(
        str(source),
        str(executed),
        parameters={"run_dir": str(where)},
        kernel_name=kernel_name,
        cwd=str(where),
        progress_bar=progress,
        save_each_cell=False,
    )
    redact_notebook(folder, executed)
    return export_html(executed, folder, title=f"Kimi runbook report {folder.run_id}")
