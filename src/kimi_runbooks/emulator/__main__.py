"""``python -m kimi_runbooks.emulator``: run the emulator server."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
