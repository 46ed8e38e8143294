"""Run Kimi-Vendor-Verifier's eval.py with inspect_ai.eval's own `limit` argument set.

eval.py has no --limit; it calls inspect_ai.eval() itself. Usage: python kvv_limit.py N eval.py ARGS...
(run in the checkout's or the inspect env's interpreter; not imported by the package).
"""

import functools
import runpy
import sys

import inspect_ai

inspect_ai.eval = functools.partial(inspect_ai.eval, limit=int(sys.argv[1]))
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
