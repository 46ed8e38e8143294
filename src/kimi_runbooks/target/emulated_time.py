"""The header a client sends an EMULATED server to run one request's emulated time faster.

Shared by the emulator (emulator/fast_forward.py honours it) and the checks that send it (the
invoke stage's long_context check), which must not import the emulator. Real SGLang ignores it.
"""

FAST_FORWARD_HEADER = "x-kimi-emulator-fast-forward"
"""Its value N (1 to 1000): this request's prefill and decode steps sleep 1/N of the server's time."""
