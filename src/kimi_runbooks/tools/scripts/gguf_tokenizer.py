"""Export the tokenizer embedded in a GGUF file as a Hugging Face tokenizer directory (bench env).

Usage: python gguf_tokenizer.py MODEL.gguf DEST

bench_serving needs a tokenizer *directory*: given the .gguf path it asks the HF hub for a config
and fails offline. transformers reads the GGUF's embedded vocabulary, merges and chat template
(`gguf_file=`) and `save_pretrained` writes tokenizer.json, tokenizer_config.json and
chat_template.jinja, which then load in a fraction of a second.
"""

import json
import sys
from pathlib import Path

from transformers import AutoTokenizer

gguf, dest = Path(sys.argv[1]), Path(sys.argv[2])
tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
dest.mkdir(parents=True, exist_ok=True)
tok.save_pretrained(str(dest))
check = AutoTokenizer.from_pretrained(str(dest))
text = "The capital of France is a city called"
same = check.encode(text) == tok.encode(text)
print(json.dumps({"dest": str(dest), "vocab": len(check), "chat_template": bool(check.chat_template), "same": same}))
if not same or not check.chat_template:
    sys.exit("the exported tokenizer does not encode like the GGUF's, or has no chat template")
