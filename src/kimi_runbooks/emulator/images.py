"""Image inputs: check data-URL images really are images, and describe them.

A runbook's image probe must fail loudly when it sends a broken image, as SGLang
does, so ``data:`` URLs are base64-decoded and opened with Pillow; anything that is
not an image is a 400.  http(s) URLs are accepted without fetching (the emulator
has no internet and a runbook only needs the request shape to be right).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import warnings
from dataclasses import dataclass

from PIL import Image, ImageColor

_URL_IMAGE_TOKENS = 256  # charge for images the emulator does not fetch
_MAX_IMAGE_TOKENS = 16384
_PATCH = 28  # MoonViT patch 14 with 2x2 merge: one token per 28x28 pixels
_MAX_PIXELS = 64_000_000

_COLOURS = ("black", "white", "gray", "red", "green", "blue", "yellow", "orange", "purple", "pink", "brown", "cyan")
_PALETTE = {name: ImageColor.getrgb(name) for name in _COLOURS}
"""The names an image's mean pixel is described by, at the RGB of Pillow's (CSS) colour table."""


class ImageError(ValueError):
    """The image part cannot be used; the message is safe to show to the client."""


@dataclass(frozen=True)
class ImageInfo:
    """What the emulator knows about one input image."""

    source: str  # "data" or "url"
    width: int | None = None
    height: int | None = None
    colour: str | None = None  # name of the nearest palette colour to the mean pixel

    @property
    def tokens(self) -> int:
        if self.width is None or self.height is None:
            return _URL_IMAGE_TOKENS
        patches = math.ceil(self.width / _PATCH) * math.ceil(self.height / _PATCH)
        return max(1, min(patches, _MAX_IMAGE_TOKENS))

    def describe(self) -> str:
        if self.width is None:
            return "an image given by URL (not fetched by the emulator)"
        return f"a {self.width}x{self.height} image that is mostly {self.colour}"


def inspect_image_url(url: str) -> ImageInfo:
    """Validate an image_url value and return what can be said about it."""
    if not isinstance(url, str) or not url:
        raise ImageError("image_url.url must be a non-empty string")
    lowered = url[:16].lower()
    if lowered.startswith(("http://", "https://")):
        return ImageInfo(source="url")
    if lowered.startswith("data:"):
        return _inspect_data_url(url)
    raise ImageError("image_url.url must be an http(s) URL or a data: URL with base64 image bytes")


def _inspect_data_url(url: str) -> ImageInfo:
    header, sep, payload = url.partition(",")
    if not sep or ";base64" not in header.lower():
        raise ImageError("data URL must look like data:image/<type>;base64,<data>")
    try:
        raw = base64.b64decode(payload.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("Invalid image: the data URL is not valid base64") from None
    if not raw:
        raise ImageError("Invalid image: the data URL holds no bytes")
    return _describe_bytes(raw)


def _describe_bytes(raw: bytes) -> ImageInfo:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(raw)) as probe:
                probe.verify()
            with Image.open(io.BytesIO(raw)) as img:
                width, height = img.size
                if width * height > _MAX_PIXELS:
                    raise ImageError("Invalid image: too many pixels")
                img.draft("RGB", (64, 64))
                mean = img.convert("RGB").resize((1, 1), Image.Resampling.BOX).getpixel((0, 0))
    except ImageError:
        raise
    except Exception as exc:  # Pillow raises many types for bad bytes
        raise ImageError(f"Invalid image: cannot identify image data ({type(exc).__name__})") from None
    rgb = tuple(mean)[:3] if isinstance(mean, tuple) else (0, 0, 0)
    return ImageInfo(source="data", width=width, height=height, colour=_nearest_colour((rgb[0], rgb[1], rgb[2])))


def _nearest_colour(mean: tuple[int, int, int]) -> str:
    return min(_PALETTE, key=lambda name: sum((a - b) ** 2 for a, b in zip(_PALETTE[name], mean)))
