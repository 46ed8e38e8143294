"""What is known of the SGLang an image carries when its tag names no release.

A release tag (lmsysorg/sglang:v0.5.9-rocm700-mi35x) names its version (server_rules.image_version).
The cookbook's current images do not: the Kimi-K3 page recommends `lmsysorg/sglang:kimi-k3` for every
NVIDIA cell and `lmsysorg/sglang:dev-rocm720-mi35x` for MI350X/MI355X (sgl-project/sglang
docs_new/src/snippets/configs/moonshotai/kimi-k3.jsx at f795573d, dockerImages). The rules are then
judged at the plan's --sglang-version, and the plan says so with what the tag does tell.
"""

from __future__ import annotations

import re

_IMAGE_TAG_VERSION = re.compile(r":v?(\d+\.\d+\.\d+(?:(?:rc|\.post|\.dev)\d+)?)")


def image_version(image: str | None) -> str:
    """The SGLang version in a docker image tag (lmsysorg/sglang:v0.5.9-rocm700-mi35x -> 0.5.9), or ""."""
    match = _IMAGE_TAG_VERSION.search(image or "")
    return match.group(1) if match else ""


_NO_RELEASE_TAGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r":kimi-k3(?:$|-)"),
        "a model-specific build the SGLang cookbook Kimi-K3 page recommends for every NVIDIA cell ('the published "
        "CUDA 13 image'); the page says K3 is 'served today from the DarkSharpness/sglang-kimi fork', so the image "
        "carries that fork's SGLang, whose release number the tag does not give (SGLang 0.5.23, the release this "
        "project reads, serves Kimi-K3; earlier releases are unverified)",
    ),
    (
        re.compile(r":dev(?:$|-)"),
        "a nightly build of SGLang's main branch (lmsysorg/sglang dev tags follow main; -rocmNNN-mi35x / -cuNNN "
        "name the ROCm or CUDA build): newer than the last release on the day it was pulled, with no fixed version",
    ),
    (
        re.compile(r":latest$"),
        "the newest release when pulled: the version changes with the day it is pulled",
    ),
)


def image_release_note(image: str | None) -> str:
    """What the tag says of the SGLang inside when it names no release; "" for a release tag or no image."""
    if not image or image_version(image):
        return ""
    for pattern, note in _NO_RELEASE_TAGS:
        if pattern.search(image):
            return note
    return "the tag names no SGLang release and this project knows nothing more of it"
