"""Start sgl-eval's CLI with the API key taken from the environment, inside the child process.

sgl-eval has no __main__ and reads the key only from --api-key (not OPENAI_API_KEY); this is what
its console script does, plus: for `run`, the key from KIMI_RUNBOOKS_SGL_EVAL_API_KEY is appended
as --api-key here, so it never appears on a command line the parent builds or logs.
"""

import os
import sys

from sgl_eval.cli import main

sys.argv[0] = "sgl-eval"
key = os.environ.pop("KIMI_RUNBOOKS_SGL_EVAL_API_KEY", "")
if key and sys.argv[1:2] == ["run"]:
    sys.argv += ["--api-key", key]
sys.exit(main())
