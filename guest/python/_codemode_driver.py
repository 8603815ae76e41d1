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
from typing import Any, assert_never

import _codemode
import _codemode_stdio
from _codemode_cells import CellRunner

# What the host's messages become on the Python side (guest/src/records.rs).
InboxItem = _codemode.Init | _codemode.Execute | _codemode.AddServers | _codemode.RpcAnswer

_driver: "Driver | None" = None


class Driver:
    def __init__(self, wake_fd: int, namespace: dict[str, Any]) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.wake_fd = wake_fd
        self.namespace = namespace
        self.main_task: asyncio.Task[None] | None = None
        self.cells = CellRunner(self.loop, namespace)

    def run(self) -> None:
        main_task = self.main_task = self.loop.create_task(self._main())
        self.cells.main_task = main_task
        while True:
            try:
                self.loop.run_until_complete(main_task)
                return
            except (KeyboardInterrupt, SystemExit):
                # Raised out of a task or callback the user started: the
                # session goes on. The dispatcher may have been cut short.
                if main_task.done():
                    raise
                self.loop.call_soon(self._on_wake)

    async def _main(self) -> None:
        self.loop.add_reader(self.wake_fd, self._on_wake)
        self._on_wake()
        await self.loop.create_future()

    def _on_wake(self) -> None:
        try:
            while os.read(self.wake_fd, 4096):
                pass
        except BlockingIOError:
            pass
        for item in _codemode.take_inbox():
            try:
                self._dispatch(item)
            except Exception:  # a bug here must not stop the dispatcher
                _codemode.diag(f"internal error handling {type(item).__name__}:\n{traceback.format_exc()}")

    def _dispatch(self, item: InboxItem) -> None:
        match item:
            case _codemode.RpcAnswer():
                from mcp import _rpc

                _rpc.resolve(item)
            case _codemode.Execute(id=cell_id, code=code):
                try:
                    self.cells.start(cell_id, code)
                except Exception:  # the host must still get a Finished
                    failure = ("InternalError", "the guest could not start the cell", traceback.format_exc())
                    _codemode.finish(cell_id, "error", failure)
            case _codemode.Init():
                from mcp import _install

                _install.init(item, self.namespace)
            case _codemode.AddServers(servers=servers):
                from mcp import _install

                _install.add_servers(servers, self.namespace)
            case _:
                assert_never(item)


def _preimport() -> None:
    """Imports what nearly every cell needs, before Ready, so the first cell
    does not pay for them."""
    import ast  # noqa: F401
    import base64  # noqa: F401
    import inspect  # noqa: F401
    import json  # noqa: F401
    import linecache  # noqa: F401
    import typing  # noqa: F401

    import mcp.runtime  # noqa: F401


def _install_tzdata() -> None:
    """Puts the guest's time-zone database (the ``tzdata`` package, zipped
    into the binary) on sys.path through an in-memory file: no sandbox has
    /usr/share/zoneinfo, and zoneinfo falls back to this package."""
    data = _codemode.tzdata()
    if not data:
        return
    fd = os.memfd_create("codemode-tzdata")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    sys.path.append(f"/proc/self/fd/{fd}")


def run(wake_fd: int) -> None:
    """Loads the runtime and runs the event loop for the rest of the
    process's life (after Ready: see _codemode_start)."""
    global _driver
    _codemode_stdio.install()
    _install_tzdata()
    if _codemode.is_static():
        import _codemode_static

        _codemode_static.install()
    _preimport()
    import __main__

    driver = _driver = Driver(wake_fd, __main__.__dict__)
    signal.signal(signal.SIGINT, driver.cells.on_interrupt)
    driver.run()
