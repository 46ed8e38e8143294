"""Print {"python": ..., <package>: <version or null>} as JSON for the packages named in argv
(run by a tool env's own interpreter, so no tool is imported)."""

import json
import sys
from importlib import metadata

out = {"python": sys.version.split()[0]}
for name in sys.argv[1:]:
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
