"""The guest's main loop.

One asyncio event loop lives for the whole session. Its dispatcher wakes on
the guest's wake-up pipe, takes the host's messages from the Rust inbox and
acts on them: Init installs the ``mcp`` package, Execute starts a cell task,
RpcResponse resolves the awaiting future, AddServers installs more servers.
Cancel, Shutdown and protocol errors never reach Python; the Rust side
handles them (an interrupt arrives here as SIGINT, see _codemode_cells).
"""

import asyncio
import os
import signal
import sys
import traceback

import _codemode
import _codemode_stdio
from _codemode_cells import CellRunner

# Debian's interpreter, for code that starts a Python child process; the
# guest binary itself must never be run as "python".
SYSTEM_PYTHON = "/usr/bin/python3.11"

_driver = None


class Driver:
    def __init__(self, wake_fd, namespace):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.wake_fd = wake_fd
        self.namespace = namespace
        self.main_task = None
        self.cells = CellRunner(self.loop, namespace)

    def run(self):
        self.main_task = self.loop.create_task(self._main())
        self.cells.main_task = self.main_task
        while True:
            try:
                self.loop.run_until_complete(self.main_task)
                return
            except (KeyboardInterrupt, SystemExit):
                # Raised out of a task or callback the user started: the
                # session goes on. The dispatcher may have been cut short.
                if self.main_task.done():
                    raise
                self.loop.call_soon(self._on_wake)

    async def _main(self):
        self.loop.add_reader(self.wake_fd, self._on_wake)
        self._on_wake()
        await self.loop.create_future()

    def _on_wake(self):
        try:
            while os.read(self.wake_fd, 4096):
                pass
        except BlockingIOError:
            pass
        for item in _codemode.take_inbox():
            try:
                self._dispatch(item)
            except Exception:  # a bug here must not stop the dispatcher
                _codemode.diag(f"internal error handling {item[0]}:\n{traceback.format_exc()}")

    def _dispatch(self, item):
        kind = item[0]
        if kind == "rpc":
            from mcp import _rpc

            _rpc.resolve(item[1], item[2], item[3], item[4])
        elif kind == "execute":
            try:
                self.cells.start(item[1], item[2])
            except Exception:  # the host must still get a Finished
                _codemode.finish(
                    item[1], "error", ("InternalError", "the guest could not start the cell", traceback.format_exc())
                )
        elif kind == "init":
            from mcp import _install

            _install.init(item[1], self.namespace)
        elif kind == "add_servers":
            from mcp import _install

            _install.add_servers(item[1], self.namespace)
        else:
            _codemode.diag(f"internal error: unknown inbox item {kind!r}")


def _preimport():
    """Imports what nearly every cell needs, before Ready, so the first cell
    does not pay for them."""
    import ast  # noqa: F401
    import base64  # noqa: F401
    import inspect  # noqa: F401
    import json  # noqa: F401
    import linecache  # noqa: F401
    import typing  # noqa: F401

    import mcp.runtime  # noqa: F401


def prepare(wake_fd):
    """Sets up the interpreter before Ready; returns the Python version."""
    global _driver
    sys.dont_write_bytecode = True
    sys.executable = SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else ""
    _codemode_stdio.install(sys)
    _preimport()
    import __main__

    _driver = Driver(wake_fd, __main__.__dict__)
    signal.signal(signal.SIGINT, _driver.cells.on_interrupt)
    return "{}.{}.{}".format(*sys.version_info[:3])


def run():
    """Runs the event loop for the rest of the process's life."""
    _driver.run()
