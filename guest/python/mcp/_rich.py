"""What ``runtime.show`` accepts, turned into (mime type, bytes)."""

import io
from typing import Any

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _sniff(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    head = data[:256].lstrip().lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data[:1024].lower()):
        return "image/svg+xml"
    return None


def to_rich(obj: Any, mime: str | None = None) -> tuple[str, bytes]:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        mime = mime or _sniff(data)
        if mime is None:
            raise ValueError("cannot tell the image type of these bytes; pass mime='image/png' (or the right type)")
        return mime, data
    if isinstance(obj, str):
        data = obj.encode("utf-8")
        mime = mime or _sniff(data)
        if mime is None:
            raise ValueError("show() of a str needs mime= (for example 'image/svg+xml')")
        return mime, data
    if hasattr(obj, "gcf") and callable(obj.gcf):
        # matplotlib.pyplot itself: show its current figure.
        obj = obj.gcf()
    if hasattr(obj, "savefig"):
        fmt = {"image/svg+xml": "svg", "image/jpeg": "jpeg"}.get(mime or "", "png")
        buffer = io.BytesIO()
        obj.savefig(buffer, format=fmt, bbox_inches="tight")
        return mime or "image/png", buffer.getvalue()
    if hasattr(obj, "save") and hasattr(obj, "mode"):
        # A PIL image.
        buffer = io.BytesIO()
        obj.save(buffer, format="JPEG" if mime == "image/jpeg" else "PNG")
        return mime or "image/png", buffer.getvalue()
    raise TypeError(f"show() takes image bytes, a matplotlib figure or a PIL image, not {type(obj).__name__}")
