"""Count prompt tokens with a model's own tokenizer and chat template (run in the bench env).

Usage: python chat_tokens.py TOKENIZER_DIR < REQUESTS.json
stdin: a JSON list of {"messages": [...], "tools": [...] or null}; prints a JSON list of counts,
``len(apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True))``.
"""

import json
import sys

from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
counts = []
for item in json.load(sys.stdin):
    ids = tok.apply_chat_template(item["messages"], tools=item.get("tools"), add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    counts.append(len(ids))
print(json.dumps(counts))
