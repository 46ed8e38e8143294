"""Is a server ready for the stages? A chain of checks that stops at the first real cause.

url -> key -> connect -> auth -> model -> health, each step with what it found and, when it
fails, the fix. A server someone else runs (llama.cpp, vLLM, a proxy) may have no `/health` and
answer any `model` value, so the chain does not assume SGLang: health is `/health_generate` or
`/health` when the server has them, else `/v1/models` plus a one-token generation (a prompt of
several tokens: a broken CPU build can answer a one-token prompt and crash on the next), and
the served name is checked against `/v1/models`, the one place a server says what it serves.

A failure is *permanent* (a bad URL, an unknown host, TLS, a refused key, the wrong model name:
waiting cannot fix it, so callers stop at once) or *transient* (refused connection, 5xx, a
loading server: callers retry until their timeout). deploy (all launchers) and the speed stage
use the same chain, so they agree on what "ready" means.
"""

from __future__ import annotations

import os
import socket
import ssl
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from .address import url_host_problem
from .tls import verified_tls

PROBE_PROMPT = "Reply with one word: is this server ready to answer questions?"
"""The one-token generation's prompt: several tokens long on purpose (see the module doc)."""


class BaseUrlError(ValueError):
    """base_url cannot be used as given; the message names the fix."""


@dataclass
class Step:
    name: str  # url, key, connect, auth, model, health
    ok: bool
    detail: str
    fix: str = ""


@dataclass
class Readiness:
    """One pass of the chain: every step it ran, and how the server proved healthy."""

    base_url: str
    steps: list[Step] = field(default_factory=list)
    health_method: str | None = None
    model_ids: list[str] = field(default_factory=list)
    model: str | None = None
    permanent: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps) and self.health_method is not None

    @property
    def failure(self) -> Step | None:
        return next((s for s in self.steps if not s.ok), None)

    def cause(self) -> str:
        """'<step>: <cause>' of the first failed step, without the fix ('' when ready)."""
        bad = self.failure
        return f"{bad.name}: {bad.detail}" if bad else ""

    def message(self) -> str:
        """'<step>: <cause>. Fix: <fix>' for the first failed step ('' when ready)."""
        bad = self.failure
        if bad is None:
            return ""
        return f"{bad.name}: {bad.detail}" + (f". Fix: {bad.fix}" if bad.fix else "")

    def add(self, name: str, ok: bool, detail: str, fix: str = "", permanent: bool = False) -> bool:
        self.steps.append(Step(name, ok, detail, fix))
        if not ok:
            self.permanent = permanent
        return ok

    def as_dict(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "ok": self.ok,
            "health_method": self.health_method,
            "model": self.model,
            "model_ids": self.model_ids,
            "steps": [asdict(s) for s in self.steps],
        }


# ------------------------------------------------------------------------------------ URL


def normalize_base_url(url: str) -> tuple[str, list[str]]:
    """The server root (scheme://host[:port][/prefix], no trailing / or /v1) and notes on what was
    changed; BaseUrlError naming the fix when the URL cannot be used."""
    raw = (url or "").strip()
    example = "base_url='http://127.0.0.1:30000'"
    if not raw:
        raise BaseUrlError(f"base_url is empty. Fix: pass the server's root URL, e.g. {example}.")
    notes: list[str] = []
    if "://" not in raw:
        if raw.startswith(("/", ":")) or raw.isdigit():
            raise BaseUrlError(f"base_url {raw!r} has no host. Fix: pass scheme, host and port, e.g. {example}.")
        notes.append(f"base_url {raw!r} has no scheme: using http://{raw} (pass https://... for TLS)")
        raw = "http://" + raw
    problem = url_host_problem(raw)  # the rule of plan --host and --node-ip, before httpx's own
    if problem:
        raise BaseUrlError(problem)
    try:
        parsed = httpx.URL(raw)
    except (httpx.InvalidURL, ValueError) as exc:
        raise BaseUrlError(f"base_url {raw!r} is not a URL ({exc}). Fix: e.g. {example}.") from None
    if parsed.scheme not in ("http", "https"):
        raise BaseUrlError(
            f"base_url {raw!r} uses the scheme {parsed.scheme!r}; OpenAI-compatible servers speak HTTP. "
            f"Fix: http://host:port (or https://), e.g. {example}."
        )
    if not parsed.host:
        raise BaseUrlError(f"base_url {raw!r} has no host. Fix: e.g. {example}.")
    if parsed.userinfo:
        raise BaseUrlError(
            "base_url carries a user name or password, which would be written to the run folder. "
            "Fix: drop it from the URL and pass the key through api_key_env."
        )
    if parsed.query or parsed.fragment:
        raise BaseUrlError(f"base_url {raw!r} has a query or fragment. Fix: pass the server root only, e.g. {example}.")
    path = parsed.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
        notes.append("base_url ended in /v1: the stages add /v1 themselves, so the server root is used")
    elif "/v1/" in path + "/" and path:
        root = str(parsed.copy_with(path=path.split("/v1/")[0] or "/")).rstrip("/")
        raise BaseUrlError(
            f"base_url {raw!r} points at an endpoint ({path}), not at the server. Fix: base_url={root!r}."
        )
    root = str(parsed.copy_with(path=path or "/")).rstrip("/")
    return root, notes


# ------------------------------------------------------------------------------ transport


def _causes(exc: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def transport_failure(exc: httpx.HTTPError, url: str, timeout: float) -> tuple[str, str, bool]:
    """(cause, fix, permanent) for an exception raised before any HTTP answer came back."""
    target = httpx.URL(url)
    where = f"{target.host}:{target.port or (443 if target.scheme == 'https' else 80)}"
    chain = _causes(exc)
    messages = list(dict.fromkeys(str(c) for c in chain if str(c)))  # the same text is often re-raised
    text = "; ".join(messages) or type(exc).__name__
    if any(isinstance(c, socket.gaierror) for c in chain) or any(
        s in text for s in ("Name or service not known", "nodename nor servname", "name resolution", "No address")
    ):
        return (
            f"DNS: the host name {target.host!r} does not resolve ({text[:200]})",
            "check the host name in base_url (or use the server's IP address)",
            True,
        )
    if any(isinstance(c, ssl.SSLError) for c in chain) or "SSL" in text or "CERTIFICATE" in text:
        if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
            return (
                f"TLS: {where} does not speak TLS ({text[:200]})",
                f"use http:// instead of https:// in base_url ({url.replace('https://', 'http://', 1)})",
                True,
            )
        return (
            f"TLS: the handshake with {where} failed ({text[:200]})",
            "check the server's certificate (SSL_CERT_FILE / REQUESTS_CA_BUNDLE), or use http:// for a plain server",
            True,
        )
    if isinstance(exc, httpx.ConnectTimeout):
        return (
            f"no answer from {where} within {timeout:g}s",
            "check the host and port in base_url, and any firewall in between",
            False,
        )
    if any(isinstance(c, ConnectionRefusedError) for c in chain) or "Connection refused" in text:
        return (
            f"connection refused at {where}: nothing is listening there",
            "start the server, or correct the port in base_url",
            False,
        )
    if isinstance(exc, httpx.RemoteProtocolError) and target.scheme == "http":
        return (
            f"{where} did not answer with HTTP ({text[:200]})",
            f"if the server uses TLS, use https:// ({url.replace('http://', 'https://', 1)})",
            False,
        )
    if isinstance(exc, httpx.TimeoutException):
        return (
            f"no answer from {where} within {timeout:g}s ({type(exc).__name__})",
            "is the server overloaded?",
            False,
        )
    return (f"{type(exc).__name__}: {text[:300]}", "check base_url and that the server is running", False)


def _body(resp: httpx.Response, limit: int = 200) -> str:
    text = resp.text.strip().replace("\n", " ")
    return text[:limit] + ("..." if len(text) > limit else "")


def key_value(api_key_env: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The key from the environment (None without a key variable); KeyError when the variable is unset."""
    if not api_key_env:
        return None
    value = (environ if environ is not None else os.environ).get(api_key_env)
    if not value:
        raise KeyError(api_key_env)
    return value


def _auth_fix(api_key_env: str | None) -> str:
    if api_key_env:
        return f"export {api_key_env}=<the key the server was started with (--api-key)>"
    return "export MY_KEY=<the server's key> and pass api_key_env='MY_KEY' (the variable's NAME, never the key)"


# ---------------------------------------------------------------------------------- chain


def check_server(
    base_url: str,
    model: str | None,
    *,
    api_key_env: str | None = None,
    environ: dict[str, str] | None = None,
    api_key: str | None = None,
    timeout: float = 10.0,
    health_paths: tuple[str, ...] = ("/health_generate", "/health"),
    client: httpx.Client | None = None,
    model_source: str = "the plan's served model name",
    health: bool = True,
) -> Readiness:
    """One pass of the chain (see the module doc). `model` None: the single listed model is taken.
    `health=False` stops after the model step (enough to name the server's model). The key is read
    from $api_key_env (an unset variable fails the chain), or given as `api_key`."""
    result = Readiness(base_url=base_url)
    try:
        base, notes = normalize_base_url(base_url)
    except BaseUrlError as exc:
        result.add("url", False, str(exc).split(". Fix: ")[0], str(exc).partition(". Fix: ")[2], permanent=True)
        return result
    result.base_url = base
    result.add("url", True, "; ".join(notes) or base)
    try:
        key = api_key or key_value(api_key_env, environ)
    except KeyError:
        result.add(
            "key",
            False,
            f"api_key_env={api_key_env} but ${api_key_env} is not set",
            f"export {api_key_env}=<key> before running",
            permanent=True,
        )
        return result
    if api_key_env and not api_key:
        result.add("key", True, f"key read from ${api_key_env}")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    own = client is None
    http = client or httpx.Client(timeout=timeout, verify=verified_tls())
    try:
        server = _Server(http, base, headers, timeout)
        _chain(result, server, model, api_key_env, health_paths if health else None, model_source)
    finally:
        if own:
            http.close()
    return result


@dataclass(frozen=True)
class _Server:
    """What each step of the chain asks through: one client, the server's root, the auth header, the timeout."""

    http: httpx.Client
    base: str
    headers: dict[str, str]
    timeout: float

    def get(self, path: str) -> httpx.Response:
        return self.http.get(self.base + path, headers=self.headers, timeout=self.timeout)

    def post(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        """A generation may take longer than a GET: at least 30 s."""
        return self.http.post(self.base + path, json=payload, headers=self.headers, timeout=max(self.timeout, 30.0))

    def failure(self, exc: httpx.HTTPError) -> tuple[str, str, bool]:
        """(cause, fix, permanent) of a request that never got an answer."""
        return transport_failure(exc, self.base, self.timeout)


def _chain(
    result: Readiness,
    server: _Server,
    model: str | None,
    api_key_env: str | None,
    health_paths: tuple[str, ...] | None,
    model_source: str,
) -> None:
    try:
        resp = server.get("/v1/models")
    except httpx.HTTPError as exc:
        cause, fix, permanent = server.failure(exc)
        result.add("connect", False, cause, fix, permanent=permanent)
        return
    result.add("connect", True, f"{server.base} answers HTTP")
    if resp.status_code in (401, 403):
        sent = f"the key in ${api_key_env} was refused" if api_key_env else "no API key was sent"
        result.add(
            "auth",
            False,
            f"HTTP {resp.status_code} from GET /v1/models: {sent} ({_body(resp)})",
            _auth_fix(api_key_env),
            permanent=True,
        )
        return
    if resp.status_code != 200:
        transient = resp.status_code >= 500 or resp.status_code == 429
        result.add(
            "auth",
            False,
            f"GET /v1/models answered HTTP {resp.status_code} ({_body(resp)})",
            "is this an OpenAI-compatible server? base_url must be its root (the stages add /v1)",
            permanent=not transient,
        )
        return
    keyed = " with the key" if server.headers else " (no key needed)"
    result.add("auth", True, f"GET /v1/models answered 200{keyed}")
    if not _check_model(result, resp, model, model_source):
        return
    if health_paths is None:
        result.health_method = "not checked"
        return
    _check_health(result, server, health_paths)


def _check_model(result: Readiness, resp: httpx.Response, model: str | None, model_source: str) -> bool:
    try:
        data = resp.json().get("data") or []
        ids = [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        ids = []
    result.model_ids = ids
    if not ids:
        return result.add(
            "model",
            False,
            f"GET /v1/models lists no model ({_body(resp)})",
            "wait until the server has loaded its model, or check that base_url is an OpenAI-compatible server",
        )
    if model:
        if model not in ids:
            return result.add(
                "model",
                False,
                f"the server serves {ids}, not {model!r} ({model_source}); the name is never replaced silently",
                f"pass served_model_name={ids[0]!r} (the name the server lists), or start the server with "
                f"--served-model-name {model}",
                permanent=True,
            )
        result.model = model
        return result.add("model", True, f"/v1/models lists {model!r}")
    if len(ids) > 1:
        return result.add(
            "model",
            False,
            f"the server lists several models {ids} and none was named",
            f"pass served_model_name (model) = one of {ids}",
            permanent=True,
        )
    result.model = ids[0]
    return result.add("model", True, f"/v1/models lists {ids[0]!r} (the only model; taken as the served name)")


def _check_health(result: Readiness, server: _Server, health_paths: tuple[str, ...]) -> None:
    for path in health_paths:
        try:
            resp = server.get(path)
        except httpx.HTTPError as exc:
            cause, fix, permanent = server.failure(exc)
            result.add("health", False, f"GET {path}: {cause}", fix, permanent=permanent)
            return
        if resp.status_code == 200:
            result.health_method = path
            result.add("health", True, f"GET {path} answered 200")
            return
        if resp.status_code != 404:
            result.add("health", False, f"GET {path} answered HTTP {resp.status_code} ({_body(resp)}): not ready yet")
            return
    _generate_one_token(result, server, tried=health_paths)


def _generate_one_token(result: Readiness, server: _Server, tried: tuple[str, ...]) -> None:
    """No health endpoint: a one-token chat completion (a completion when chat is absent)."""
    absent = " and ".join(tried) + (" are" if len(tried) > 1 else " is")
    bodies = (
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": PROBE_PROMPT}]}),
        ("/v1/completions", {"prompt": PROBE_PROMPT}),
    )
    for path, body in bodies:
        payload = {"model": result.model, "max_tokens": 1, "temperature": 0.0, "stream": False, **body}
        try:
            resp = server.post(path, payload)
        except httpx.HTTPError as exc:
            cause, fix, permanent = server.failure(exc)
            result.add(
                "health",
                False,
                f"{absent} absent; a one-token generation on {path} failed: {cause} (did the server crash?)",
                fix,
                permanent=permanent,
            )
            return
        if resp.status_code == 404 and path.endswith("chat/completions"):
            continue
        if resp.status_code != 200:
            result.add(
                "health",
                False,
                f"{absent} absent; a one-token generation on {path} answered HTTP {resp.status_code} ({_body(resp)})",
                "read the server's log for this request",
                permanent=400 <= resp.status_code < 500,
            )
            return
        result.health_method = f"/v1/models + one-token generation ({path}; {absent} absent)"
        result.add("health", True, f"{absent} absent: /v1/models answered and {path} generated a token")
        return
