"""What runs before the guest says Ready: as little as possible, so that
Ready comes as soon as the interpreter is up. Everything else (stdio
capture, the static guest's guards, the event loop and its imports; asyncio
is most of a start's cost) loads in ``_codemode_driver.run``, after Ready,
while the host prepares and sends Init: no user code can run before the
loop takes its first Execute, so nothing is exposed in between."""

import sys


def prepare() -> str:
    """Sets up the interpreter before Ready; returns the Python version."""
    sys.dont_write_bytecode = True
    # No Python executable exists in the sandbox; the guest binary itself
    # must never be started as "python".
    sys.executable = ""
    return "{}.{}.{}".format(*sys.version_info[:3])
