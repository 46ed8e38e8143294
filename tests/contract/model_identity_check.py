"""Run with the bench env's python: does SGLang 0.5.23 know each (model_type, architectures) pair the
emulator reports on /model_info? Reads SGLang's source with ast (no model code is imported, no GPU):
a config class declaring that model_type (in srt/configs/, or an alias in
srt/utils/hf_transformers/common.py), and an EntryClass in srt/models/ naming each architecture.
argv: <pairs.json> <report.json>; exit 1 when something is unknown."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path


def sglang_root() -> Path:
    spec = importlib.util.find_spec("sglang")
    assert spec is not None and spec.origin is not None, "sglang is not installed here"
    return Path(spec.origin).parent


def config_model_types(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    # srt/configs/ holds the config classes; hf_transformers/common.py the aliases (kimi_k2 -> DeepSeek-V3's)
    files = [*sorted((root / "srt" / "configs").glob("*.py")), root / "srt" / "utils" / "hf_transformers" / "common.py"]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "model_type" for t in stmt.targets)
                    and isinstance(stmt.value, ast.Constant)
                ):
                    found[str(stmt.value.value)] = f"{path.relative_to(root).as_posix()}:{node.name}"
    return found


def entry_classes(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((root / "srt" / "models").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
            ):
                value = node.value
                names = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
                for name in names:
                    if isinstance(name, ast.Name):
                        found[name.id] = f"srt/models/{path.name}"
    return found


def main() -> int:
    pairs = json.loads(Path(sys.argv[1]).read_text())
    root = sglang_root()
    types, entries = config_model_types(root), entry_classes(root)
    report = []
    for pair in pairs:
        report.append(
            {
                "model": pair["model"],
                "model_type": pair["model_type"],
                "config": types.get(pair["model_type"]),
                "architectures": {a: entries.get(a) for a in pair["architectures"]},
            }
        )
    Path(sys.argv[2]).write_text(json.dumps(report, indent=1))
    ok = all(r["config"] and all(r["architectures"].values()) for r in report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
