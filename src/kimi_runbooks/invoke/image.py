"""The receipt image the image probes send: drawn here with Pillow, so no download is needed.

The text is large and high-contrast so a vision model can read it; the known item name is what
the image check expects the answer to mention (`RECEIPT_ITEM`, overridable by `image_expect`).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

RECEIPT_ITEM = "MATCHA LATTE"


@dataclass(frozen=True)
class ReceiptLine:
    label: str
    amount: str


RECEIPT_SHOP = "HARBOUR LIGHT CAFE"
RECEIPT_LINES = (
    ReceiptLine(f"2 x {RECEIPT_ITEM}", "9.00"),
    ReceiptLine("1 x BLUEBERRY SCONE", "3.25"),
    ReceiptLine("SUBTOTAL", "12.25"),
    ReceiptLine("TOTAL", "12.25"),
    ReceiptLine("CASH", "20.00"),
    ReceiptLine("CHANGE", "7.75"),
)


def receipt_png(width: int = 560, font_size: int = 26) -> bytes:
    """PNG bytes of a white receipt with a shop name, two items and totals."""
    font = ImageFont.load_default(size=font_size)
    title = ImageFont.load_default(size=font_size + 8)
    pad, step = 28, int(font_size * 1.6)
    height = pad * 2 + step * (len(RECEIPT_LINES) + 4)
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    y = pad
    draw.text((width // 2, y), RECEIPT_SHOP, fill="black", font=title, anchor="ma")
    y += step + 8
    draw.text((width // 2, y), "RECEIPT  #0417", fill="black", font=font, anchor="ma")
    y += step
    draw.line((pad, y, width - pad, y), fill="black", width=2)
    y += step // 2
    for line in RECEIPT_LINES:
        if line.label == "SUBTOTAL":
            draw.line((pad, y, width - pad, y), fill="black", width=1)
            y += step // 3
        draw.text((pad, y), line.label, fill="black", font=font)
        draw.text((width - pad, y), line.amount, fill="black", font=font, anchor="ra")
        y += step
    draw.text((width // 2, y + step // 3), "THANK YOU", fill="black", font=font, anchor="ma")
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def data_url(png: bytes) -> str:
    """An OpenAI-style image_url value carrying the PNG inline (base64)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
