"""sys.stdout and sys.stderr for cells.

Writes go straight to the guest's output capture (no Python-side buffer, so
nothing is lost or reordered at the end of a cell). ``fileno()`` reports the
real fds 1 and 2, which are the capture pipes: code that writes there, or
hands them to a child process, is captured too.
"""

import io
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import _codemode

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

STDOUT = 1
STDERR = 2


class CaptureBuffer(io.RawIOBase):
    """The binary side of a capture stream (``sys.stdout.buffer``)."""

    def __init__(self, stream: int) -> None:
        super().__init__()
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data: "ReadableBuffer") -> int:
        if not isinstance(data, (bytes, bytearray)):
            data = bytes(memoryview(data))
        _codemode.write_output(self._stream, data)
        return len(data)

    def fileno(self) -> int:
        return self._stream

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        # Closing the process's stdout would only break later cells.
        pass


class CaptureStream(io.TextIOBase):
    """A text stream whose writes become Output frames of the running cell."""

    def __init__(self, stream: int, name: str) -> None:
        super().__init__()
        self._stream = stream
        self._name = name
        self._buffer = CaptureBuffer(stream)

    @property
    def buffer(self) -> CaptureBuffer:
        return self._buffer

    @property
    def name(self) -> str:
        return self._name

    # typeshed declares these two as plain attributes; here, as in
    # io.TextIOWrapper, they are read-only.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "strict"

    @property
    def line_buffering(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        _codemode.write_output(self._stream, text)
        return len(text)

    def reconfigure(self, **settings: object) -> None:
        # Output is always UTF-8 and unbuffered; accept the call so code
        # that asks for exactly that keeps working.
        pass

    # Text lines, as in io.TextIOBase, whose stub overrides io.IOBase's the same way.
    def writelines(self, lines: Iterable[str]) -> None:  # type: ignore[override]
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return self._stream

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        pass


def install() -> None:
    """Points sys.stdout/sys.stderr at the capture. sys.__stdout__ and
    sys.__stderr__ stay the interpreter's own streams on fds 1 and 2, which
    are the capture pipes as well."""
    sys.stdout = CaptureStream(STDOUT, "<stdout>")
    sys.stderr = CaptureStream(STDERR, "<stderr>")
