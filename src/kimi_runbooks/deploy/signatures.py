"""The diagnosis catalogue: params/diagnosis/*.yaml, validated into `Signature`s.

Each signature is a regex over SGLang's server log with what it means, the fix and the public
issues or PRs it comes from; deploy/diagnose.py matches them, the report shows what they say.
A typo in the file fails at load time naming the file and the field, like the rest of params/.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..catalog import SAFE_LOADER, ParamsError, default_params_dir

Severity = Literal["error", "warning", "info"]
Phase = Literal["startup", "serving", "any"]
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Source(BaseModel):
    """A public GitHub issue or pull request: repo plus exactly one of issue / pr."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str
    issue: int | None = None
    pr: int | None = None

    @field_validator("repo")
    @classmethod
    def _owner_and_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", value):
            raise ValueError(f"repo must be 'owner/name' of a public GitHub repository, got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_number(self) -> Source:
        if (self.issue is None) == (self.pr is None):
            raise ValueError("give exactly one of issue: N or pr: N")
        if (self.issue or self.pr or 0) <= 0:
            raise ValueError("issue/pr numbers are positive")
        return self

    @property
    def label(self) -> str:
        return f"{self.repo} issue {self.issue}" if self.issue else f"{self.repo} PR {self.pr}"

    @property
    def url(self) -> str:
        kind, number = ("issues", self.issue) if self.issue else ("pull", self.pr)
        return f"https://github.com/{self.repo}/{kind}/{number}"


class Signature(BaseModel):
    """One known log signature; `pattern` is its compiled regex (case-insensitive, multi-line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    severity: Severity
    phase: Phase
    regex: str
    meaning: str
    detail: str = ""
    fix: str
    sources: list[Source]

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regex: {exc}") from None
        return value

    @model_validator(mode="after")
    def _sourced_and_fillable(self) -> Signature:
        if not self.sources:
            raise ValueError(f"signature {self.id}: needs at least one public source (repo + issue or pr)")
        groups = {name.rstrip("0123456789") for name in re.compile(self.regex).groupindex}
        known = groups | {"detail", "version", "port"}
        missing = {p for p in _PLACEHOLDER.findall(self.meaning + self.detail) if p not in known}
        if missing:
            raise ValueError(f"signature {self.id}: placeholders {sorted(missing)} are not regex groups")
        return self

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.regex)


@lru_cache(maxsize=64)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.IGNORECASE | re.MULTILINE)


class SignatureFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    signatures: list[Signature]


def load_signatures(root: Path | str | None = None) -> tuple[Signature, ...]:
    """Every signature under params/diagnosis/, in file order (files sorted by name)."""
    return _load(Path(root) if root else default_params_dir())


@lru_cache(maxsize=8)
def _load(root: Path) -> tuple[Signature, ...]:
    folder = root / "diagnosis"
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise ParamsError(f"{folder}: no diagnosis catalogue (*.yaml). Fix: restore params/diagnosis/.")
    found: list[Signature] = []
    for path in files:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
            found += SignatureFile.model_validate(data).signatures
        except yaml.YAMLError as exc:
            raise ParamsError(f"{path}: not valid YAML: {exc}") from None
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ParamsError(f"{path}: {problems}") from None
    ids = [s.id for s in found]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ParamsError(f"{folder}: signature id(s) {twice} defined twice")
    return tuple(found)
