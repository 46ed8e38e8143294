"""`kimi-runbooks report RUN_DIR [RUN_DIR ...]`: one folder -> its report.html; several -> one
cross-run comparison page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..rundir import RunFolder, write_redacted
from .compare_runs import build
from .html import render


def main(argv: list[str] | None = None) -> int:
    """`kimi-runbooks report RUN_DIR [RUN_DIR ...] [-o OUT]`: one folder -> its report.html;
    several -> one cross-run comparison (compare_runs)."""
    parser = argparse.ArgumentParser(prog="kimi-runbooks report", description=main.__doc__)
    parser.add_argument("run_dirs", nargs="+", help="run folders (outputs/<run id>/)")
    parser.add_argument(
        "-o",
        "--output",
        help="HTML to write (default: RUN_DIR/report.html, or outputs/compare-<stamp>.html for several folders)",
    )
    parser.add_argument("--api-key-env", help="NAME of an env var whose value must be redacted")
    args = parser.parse_args(argv)
    dirs = [Path(d) for d in args.run_dirs]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        print(f"error: not a run folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    folders = [RunFolder.of(d, secret_envs=[args.api_key_env]) for d in dirs]  # the one conversion of the paths
    if len(folders) > 1:
        out = build(folders, args.output)
    else:
        out = render(folders[0])
        if args.output:
            out = write_redacted(args.output, out.read_text(encoding="utf-8"), [args.api_key_env])
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
