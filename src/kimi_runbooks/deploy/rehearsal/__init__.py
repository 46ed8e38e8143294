"""The CPU rehearsal on real SGLang: a tiny checkpoint of the plan's model, and the plan's flags as
they apply on a CPU (launchers/sglang_cpu.py starts it)."""
