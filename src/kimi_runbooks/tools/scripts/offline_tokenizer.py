"""Write a tiny word-level HF tokenizer to DEST for bench_serving --tokenizer (run in the bench env).

Usage: python offline_tokenizer.py DEST VOCAB_SIZE
"""

import json
import string
import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

dest, size = Path(sys.argv[1]), int(sys.argv[2])
specials = ["<unk>", "<s>", "</s>", "<pad>"]
vocab_list = specials + list(string.ascii_letters + string.digits + string.punctuation)
i = 0
while len(vocab_list) < size:
    vocab_list.append(f"w{i}")
    i += 1
tok = Tokenizer(models.WordLevel(vocab={t: n for n, t in enumerate(vocab_list)}, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
template = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok,
    unk_token="<unk>",
    bos_token="<s>",
    eos_token="</s>",
    pad_token="<pad>",
    model_max_length=1 << 20,
    chat_template=template,
)
dest.mkdir(parents=True, exist_ok=True)
fast.save_pretrained(dest)
# transformers 5 writes tokenizer_class "TokenizersBackend", which transformers 4 cannot load;
# "PreTrainedTokenizerFast" loads in both. Keep the chat template inline too (older readers).
cfg_path = dest / "tokenizer_config.json"
cfg = json.loads(cfg_path.read_text())
cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
cfg["chat_template"] = template
cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")

check = AutoTokenizer.from_pretrained(str(dest), trust_remote_code=True)
ids = list(range(len(specials), min(size, len(specials) + 64)))
ok = check.encode(check.decode(ids), add_special_tokens=False) == ids
print(
    json.dumps(
        {
            "vocab_size": check.vocab_size,
            "roundtrip": ok,
            "special_tokens_added": check.num_special_tokens_to_add(),
            "has_chat_template": "chat_template" in check.init_kwargs,
        }
    )
)
if not ok:
    sys.exit("decode/encode round trip failed")
