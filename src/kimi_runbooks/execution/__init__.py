"""How a notebook runs: papermill with a kernel manager that survives a loaded machine (`notebook`),
and the Jupyter kernel the notebooks run in (`kernel`).

Below the stages, the report and the runbook, which all execute notebooks; kept empty on purpose:
the kernel imports this package at start-up, so it must cost nothing.
"""
