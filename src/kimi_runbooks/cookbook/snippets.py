"""Run a cookbook deployment snippet (a React component that builds its command in code) and list
the command it shows for every selection a reader can reach.

The K2 / K2.5 / K2.6 / K2.7-Code pages hold no config literal: `generateCommand()` reads the
component's `useState` values. So the page's own code runs: babel (dukpy's, from the package index)
turns the JSX into plain JavaScript, node evaluates it in an empty vm context whose React is a
recorder, and the text of the rendered `<pre>` is the command. Every option is explored by clicking
the rendered radio and checkbox inputs (their own onChange handlers) and running the component's
effects as React would when their dependencies change; no regular expression reads the page.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from .jsconfig import NODE_TIMEOUT_S, ConfigReadError, node_binary
from .kept_files import cookbook_dir

MAX_STATES = 5000  # a bound on the selections explored, far above the kept pages' few hundred

_RENDERER = r"""
const vm = require("vm");
const fs = require("fs");
const code = fs.readFileSync(0, "utf8");
const MAX_STATES = Number(process.argv[process.argv.length - 1]);

const h = (type, props, ...children) => ({ type, props: props || {}, children: children.flat(Infinity) });
const node = { classList: { contains: () => false }, getAttribute: () => null, style: {} };
let hook = null; // the render in progress: its state, queued updates and effects

const context = vm.createContext(Object.create(null));
Object.assign(context, {
  exports: {},
  React: { createElement: h },
  document: { documentElement: node },
  MutationObserver: class { observe() {} disconnect() {} },
  useState: (init) => {
    const slot = hook.slot++;
    if (slot > 0) return [typeof init === "function" ? init() : init, () => {}];
    if (hook.state === undefined) hook.state = typeof init === "function" ? init() : init;
    return [hook.state, (u) => hook.updates.push(u)];
  },
  useEffect: (fn, deps) => { hook.effects.push({ fn, deps }); },
});
vm.runInContext(code, context, { timeout: 5000 });
const names = Object.keys(context.exports).filter((k) => typeof context.exports[k] === "function");
if (names.length !== 1) throw new Error(`the snippet exports ${names.length} components, expected one`);
const Component = context.exports[names[0]];

const render = (state) => {
  hook = { state, slot: 0, updates: [], effects: [] };
  const tree = Component();
  const out = { state: hook.state, effects: hook.effects, pre: [], inputs: [] };
  const walk = (n) => {
    if (n === null || n === undefined || typeof n !== "object") return;
    const text = (c) => typeof c === "string" || typeof c === "number";
    if (n.type === "pre") out.pre.push(n.children.filter(text).join(""));
    if (n.type === "input" && (n.props.type === "radio" || n.props.type === "checkbox")) out.inputs.push(n.props);
    n.children.forEach(walk);
  };
  walk(tree);
  return out;
};
const apply = (state, updates) => updates.reduce((s, u) => (typeof u === "function" ? u(s) : u), state);
const sameDeps = (a, b) => !!a && !!b && a.length === b.length && a.every((v, i) => Object.is(v, b[i]));

// Render `state`, run the effects whose deps differ from `before` (all on mount), until it settles.
const settle = (state, before) => {
  for (let round = 0; round < 20; round++) {
    const r = render(state);
    hook.updates = [];
    r.effects.forEach((e, i) => {
      if (!before || !sameDeps(before[i] && before[i].deps, e.deps)) e.fn();
    });
    const next = apply(r.state, hook.updates);
    if (JSON.stringify(next) === JSON.stringify(r.state)) return r;
    before = r.effects;
    state = next;
  }
  throw new Error("the component's effects never settle");
};
const sorted = ([k, v]) => [k, Array.isArray(v) ? [...v].sort() : v];
const key = (s) => JSON.stringify(s && typeof s === "object" ? Object.entries(s).map(sorted) : s ?? null);

const first = settle(undefined, null);
const seen = new Map();
const queue = [first];
while (queue.length) {
  const r = queue.shift();
  const k = key(r.state);
  if (seen.has(k)) continue;
  if (r.pre.length !== 1) throw new Error(`a render shows ${r.pre.length} <pre> blocks, expected one`);
  seen.set(k, { values: r.state, command: r.pre[0] });
  if (seen.size > MAX_STATES) throw new Error(`more than ${MAX_STATES} selections`);
  for (const input of r.inputs) {
    if (input.disabled || (input.type === "radio" && input.checked) || typeof input.onChange !== "function") continue;
    hook.updates = [];
    input.onChange({ target: { checked: !input.checked, value: input.value } });
    const next = apply(r.state, hook.updates);
    if (!seen.has(key(next))) queue.push(settle(next, r.effects));
  }
}
process.stdout.write(JSON.stringify({ component: names[0], default: first.state, combinations: [...seen.values()] }));
"""


def compile_jsx(source: str, path: Path) -> str:
    """The snippet as plain JavaScript (CommonJS), by dukpy's babel (presets es2015 + react)."""
    try:
        import dukpy
    except ImportError:
        raise ConfigReadError(
            "reading a cookbook deployment snippet needs dukpy (babel for its JSX). "
            "Fix: pip install -e '.[dev]' (or pip install dukpy), then run again"
        ) from None
    try:
        code: str = dukpy.jsx_compile(source, plugins=["transform-object-rest-spread"])
    except dukpy.JSRuntimeError as e:
        first = str(e).strip().splitlines()[0]
        raise ConfigReadError(
            f"babel could not compile {path}: {first}. Fix: pass the snippet file itself "
            "(docs_new/src/snippets/autoregressive/<model>-deployment.jsx)"
        ) from None
    return code


def read_snippet(path: Path) -> dict[str, Any]:
    """The component's name, its default selection and every reachable selection with its command."""
    if not path.is_file():
        raise ConfigReadError(
            f"cookbook snippet {path} does not exist. Fix: pass a snippet .jsx file or an sglang checkout"
        )
    code = compile_jsx(path.read_text(encoding="utf-8"), path)
    cmd = [node_binary(), "--no-warnings", "-e", _RENDERER, "--", str(MAX_STATES)]
    done = subprocess.run(cmd, input=code, capture_output=True, text=True, timeout=NODE_TIMEOUT_S, check=False)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.split(":")[0].strip().endswith("Error")]
        lines = errors or done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise ConfigReadError(
            f"node could not render {path} as a deployment snippet: {lines[0]}. Fix: pass a snippet whose "
            "single exported component shows its command in one <pre> (docs_new/src/snippets/autoregressive/)"
        )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# --------------------------------------------------------------------------- kept data


def generate_snippet(
    params_dir: Path, name: str, revision: dict[str, Any], shown: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One kept snippet revision's commands, one per reachable selection, with its commit
    (`shown`: the kept file's read_snippet result when the caller has it already)."""

    shown = shown or read_snippet(cookbook_dir(params_dir) / revision["file"])
    return {
        "page": name,
        "commit": revision["commit"],
        "url": revision.get("url", ""),
        "component": shown["component"],
        "default": shown["default"],
        "combinations": shown["combinations"],
    }


def selection_key(values: dict[str, Any]) -> str:
    """A selection as one line, `hardware=h200 strategy=dp+tp ...` (a checkbox's ids sorted)."""
    return " ".join(f"{k}={'+'.join(sorted(v)) if isinstance(v, list) else v}" for k, v in values.items())


def default_command(data: dict[str, Any], **chosen: str) -> str:
    """The command the page shows at its default selection with `chosen` options changed (as a
    reader clicks them), e.g. `default_command(data, hardware="mi355x")`."""
    wanted = selection_key({**data["default"], **chosen})
    for combo in data["combinations"]:
        if selection_key(combo["values"]) == wanted:
            command: str = combo["command"]
            return command
    raise KeyError(f"{data['page']} has no reachable selection {wanted}")


def parse_command(text: str) -> dict[str, Any] | None:
    """A shown command as env, program and flags ({'--tp': '8', '--trust-remote-code': ''});
    None when the page shows a `# ...` message instead of a command."""
    if text.lstrip().startswith("#"):
        return None
    tokens = shlex.split(text.replace("\\\n", " "))
    env: dict[str, str] = {}
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    program: list[str] = []
    while tokens and not tokens[0].startswith("--"):
        program.append(tokens.pop(0))
    flags: dict[str, str] = {}
    current = ""
    for token in tokens:
        if token.startswith("--"):
            current = token
            flags[current] = ""
        else:
            flags[current] = f"{flags[current]} {token}".strip()
    return {"env": env, "program": program, "flags": flags}


def _changes(old: str, new: str) -> list[str]:
    a, b = parse_command(old), parse_command(new)
    if a is None or b is None:
        return [f"shows: {old.splitlines()[0]!r} -> {new.splitlines()[0]!r}"]
    lines = [f"program: {' '.join(a['program'])} -> {' '.join(b['program'])}"] if a["program"] != b["program"] else []
    for kind in ("flags", "env"):
        x, y = a[kind], b[kind]
        sep = " " if kind == "flags" else "="
        word = "flag" if kind == "flags" else "env"
        lines += [f"{word} removed: {k}{sep}{x[k]}".strip() for k in x if k not in y]
        lines += [f"{word} added: {k}{sep}{y[k]}".strip() for k in y if k not in x]
        lines += [f"{word} changed: {k} {x[k]} -> {y[k]}" for k in x if k in y and x[k] != y[k]]
    return lines


def snippet_diff(name: str, old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """What changed from the old revision's commands to the new one's, selection by selection;
    selections that changed alike are printed once with their count."""
    head = f"{name}: {old['commit'][:8] if old else '(none)'} -> {new['commit'][:8]}"
    if old is None:
        return [head, f"  first revision kept: {len(new['combinations'])} selections"]
    lines = [head]
    if old["default"] != new["default"]:
        lines.append(f"  default selection: {selection_key(old['default'])} -> {selection_key(new['default'])}")
    a = {selection_key(c["values"]): c["command"] for c in old["combinations"]}
    b = {selection_key(c["values"]): c["command"] for c in new["combinations"]}
    lines += [f"  - selection {k}" for k in a if k not in b]
    lines += [f"  + selection {k}" for k in b if k not in a]
    alike: dict[tuple[str, ...], list[str]] = {}
    for k in a:
        if k in b and a[k] != b[k]:
            alike.setdefault(tuple(_changes(a[k], b[k]) or ["text changed (same flags and env)"]), []).append(k)
    for changes, keys in alike.items():
        more = f" (and {len(keys) - 1} more selections alike)" if len(keys) > 1 else ""
        lines.append(f"  ~ selection {keys[0]}{more}")
        lines += [f"      {c}" for c in changes]
    return lines
