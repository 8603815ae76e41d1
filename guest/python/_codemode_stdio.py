"""sys.stdout and sys.stderr for cells.

Writes go straight to the guest's output capture (no Python-side buffer, so
nothing is lost or reordered at the end of a cell). ``fileno()`` reports the
real fds 1 and 2, which are the capture pipes: code that writes there, or
hands them to a child process, is captured too.
"""

import io

import _codemode

STDOUT = 1
STDERR = 2


class CaptureBuffer(io.RawIOBase):
    """The binary side of a capture stream (``sys.stdout.buffer``)."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    def writable(self):
        return True

    def write(self, data):
        if not isinstance(data, (bytes, bytearray)):
            data = bytes(memoryview(data))
        _codemode.write_output(self._stream, data)
        return len(data)

    def fileno(self):
        return self._stream

    def isatty(self):
        return False

    def close(self):
        # Closing the process's stdout would only break later cells.
        pass


class CaptureStream(io.TextIOBase):
    """A text stream whose writes become Output frames of the running cell."""

    def __init__(self, stream, name):
        super().__init__()
        self._stream = stream
        self._name = name
        self._buffer = CaptureBuffer(stream)

    @property
    def buffer(self):
        return self._buffer

    @property
    def name(self):
        return self._name

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "strict"

    @property
    def line_buffering(self):
        return False

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        _codemode.write_output(self._stream, text)
        return len(text)

    def reconfigure(self, **settings):
        # Output is always UTF-8 and unbuffered; accept the call so code
        # that asks for exactly that keeps working.
        pass

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def fileno(self):
        return self._stream

    def isatty(self):
        return False

    def close(self):
        pass


def install(sys_module):
    """Points sys.stdout/sys.stderr at the capture. sys.__stdout__ and
    sys.__stderr__ stay the interpreter's own streams on fds 1 and 2, which
    are the capture pipes as well."""
    sys_module.stdout = CaptureStream(STDOUT, "<stdout>")
    sys_module.stderr = CaptureStream(STDERR, "<stderr>")
