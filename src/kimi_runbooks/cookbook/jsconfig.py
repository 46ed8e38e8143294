"""Read a cookbook config module (`export const config = {...}`) with node, never with regular
expressions.

The module runs as an ES module in a fresh V8 context (node's vm.SourceTextModule) with no
require, process or imports, under a time limit. A config's fields may be functions of the page's
selection (an overlay's flags, a row's showWhen); node evaluates them at each selection a cell can
have and returns plain JSON, so the composition (compose.py) is Python that never runs page code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

NODE_TIMEOUT_S = 30

_READER = r"""
const vm = require("vm");
const fs = require("fs");
const path = process.argv[process.argv.length - 1];
const call = (v, ...args) => (typeof v === "function" ? v(...args) : v);
const product = (dims) => {
  let out = [{}];
  for (const d of dims) {
    const next = [];
    for (const partial of out) for (const o of d.options || []) next.push({ ...partial, [d.id]: o.id });
    out = next.length ? next : out;
  }
  return out;
};
(async () => {
  const source = fs.readFileSync(path, "utf8");
  const context = vm.createContext(Object.create(null));
  const mod = new vm.SourceTextModule(source, { context, identifier: path });
  await mod.link(() => { throw new Error("a cookbook config may import nothing"); });
  await mod.evaluate({ timeout: 5000 });
  const config = mod.namespace.config;
  if (!config || typeof config !== "object") throw new Error("the module exports no `config` object");
  const overlayDims = config.overlayDims || [];
  const cells = (config.cells || []).map((cell) => {
    const selections = product(overlayDims).map((overlay) => {
      const sel = { ...cell.match, ...overlay };
      const rows = overlayDims.map((d) => ({
        id: d.id,
        visible: typeof d.showWhen !== "function" || !!d.showWhen(sel),
        options: (d.options || []).map((o) => ({
          id: o.id,
          visible: typeof o.showWhen !== "function" || !!o.showWhen(sel),
          disabled: typeof o.disabled === "function" ? !!o.disabled(sel) : !!o.disabled,
          flags: call(o.flags, sel) || [],
          env: call(o.env, sel) || [],
          stripPrefixes: call(o.stripPrefixes, sel) || [],
          hints: call(o.hints, sel) || [],
        })),
      }));
      return { overlay, rows };
    });
    return {
      match: cell.match, nnodes: cell.nnodes ?? null,
      verified: cell.verificationStatus ?? cell.verified ?? false,
      redirect: !!cell.redirect, warn: cell.warn ?? null,
      env: cell.env || [], flags: cell.flags || [], selections,
    };
  });
  const out = {
    modelName: config.modelName ?? null,
    supportedHardware: config.supportedHardware || [],
    overlayDims: overlayDims.map((d) => ({
      id: d.id, default: d.default ?? null, options: (d.options || []).map((o) => o.id),
    })),
    modelNames: config.modelNames || {},
    placeholders: Object.fromEntries(Object.entries(config.placeholders || {}).map(([k, v]) => [k, v.default ?? ""])),
    dockerImages: config.dockerImages || {},
    multiNodeHints: config.multiNodeHints || {},
    cells,
  };
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String((e && e.stack) || e)); process.exit(1); });
"""


class ConfigReadError(RuntimeError):
    """A config module node could not read; the message names the file and the fix."""


def node_binary() -> str:
    found = shutil.which("node")
    if not found:
        raise ConfigReadError(
            "reading a cookbook page needs node (a JavaScript engine) on PATH. "
            "Fix: install Node.js 18 or newer (apt-get install nodejs), then run again"
        )
    return found


def read_config(path: Path) -> dict[str, Any]:
    """The config module at `path`, its function-valued fields evaluated at each cell's selections."""
    if not path.is_file():
        raise ConfigReadError(
            f"cookbook config {path} does not exist. Fix: pass a config .jsx file or an sglang checkout"
        )
    cmd = [node_binary(), "--experimental-vm-modules", "--no-warnings", "-", str(path)]
    done = subprocess.run(cmd, input=_READER, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[0]
        raise ConfigReadError(
            f"node could not read {path} as a cookbook config module: {last}. "
            "Fix: pass the config file itself (docs_new/src/snippets/configs/<vendor>/<model>.jsx, "
            "one `export const config = {...}`)"
        )
    result: dict[str, Any] = json.loads(done.stdout)
    return result
