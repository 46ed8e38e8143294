"""The notebooks' Jupyter kernel: ipykernel, without one warning that does not apply on loopback.

`papermill runbooks/<id>.ipynb ...` starts the runbook's own kernel on TCP (the stage notebooks it
runs use IPC sockets, see execution.notebook). ipykernel then logs "Kernel is running over TCP without
encryption", which is about eavesdropping on a network; on the loopback interface only this
machine's root could listen. That one warning is dropped when, and only when, the kernel's address
is loopback; on any other address it stays.

    python -m kimi_runbooks.execution.kernel install   # make the project's python3 kernelspec use this module

`install` also writes the speed notebook's kernelspec (prewarm.SPEED_KERNEL): the same kernel with
prewarm.PREWARM_ENV set, which starts the bench worker before ipykernel is even imported.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from ..rundir import write_redacted
from . import prewarm

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WARNING_TEXT = "running over TCP without encryption"


class LoopbackTransportWarning(logging.Filter):
    """Drops ipykernel's TCP eavesdropping warning for a kernel bound to loopback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if WARNING_TEXT not in record.getMessage():
            return True
        from ipykernel.kernelapp import IPKernelApp

        app = IPKernelApp.instance() if IPKernelApp.initialized() else None
        return app is None or str(getattr(app, "ip", "")) not in LOOPBACK


def install(prefix: str = sys.prefix) -> Path:
    """Install ipykernel's python3 kernelspec into `prefix`, launching this module instead, and the
    speed notebook's (the same, with the bench worker prewarmed); returns the python3 one."""
    from ipykernel.kernelspec import install as install_kernelspec

    folder = Path(install_kernelspec(prefix=prefix))
    spec_file = folder / "kernel.json"
    spec = json.loads(spec_file.read_text())
    spec["argv"] = [a if a != "ipykernel_launcher" else "kimi_runbooks.execution.kernel" for a in spec["argv"]]
    write_redacted(spec_file, json.dumps(spec, indent=1) + "\n")
    speed = Path(install_kernelspec(prefix=prefix, kernel_name=prewarm.SPEED_KERNEL)) / "kernel.json"
    speed_spec = {
        **spec,
        "display_name": "Python 3 (kimi-runbooks speed: bench worker prewarmed)",
        "env": {**spec.get("env", {}), prewarm.PREWARM_ENV: prewarm.PREWARM_BENCH},
    }
    write_redacted(speed, json.dumps(speed_spec, indent=1) + "\n")
    return spec_file


def main() -> None:
    if sys.argv[1:2] == ["install"]:
        print(f"installed {install()}")
        return
    prewarm.start_if_asked()  # first: its imports then overlap the kernel's start and the first cells
    logging.getLogger("IPKernelApp").addFilter(LoopbackTransportWarning())
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
