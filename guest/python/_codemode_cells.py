"""Running cells: compile, run under one task, report one Finished.

A cell is compiled with top-level await allowed and runs inside its own
task on the session's loop, so sync code and awaits behave the same and
globals persist in ``__main__``. Interrupts (Cancel or the guest's timeout)
arrive as SIGINT: the handler raises KeyboardInterrupt into the cell's own
code when that code is running, and cancels the cell task when the loop is
waiting; either way the cell reports CANCELLED or TIMEOUT, using the reason
the Rust side recorded, and the session survives. A cell that ends with an
expression shows its value (see _codemode_display), in the cell's task and
as interruptible as the rest of the cell.
"""

import asyncio
import ast
import inspect
import linecache
import signal
import sys
import traceback
from types import CodeType, FrameType
from typing import Any, Literal

import _codemode
import _codemode_display
import _codemode_tb

# How a cell ended, as `_codemode.finish` takes it.
Status = Literal["success", "error", "cancelled", "timeout"]
# What Finished reports of a failure: type name, message, traceback text.
Failure = tuple[str, str, str]

_INTERRUPT_ERRORS: dict[str, tuple[str, str]] = {
    "timeout": ("TimeoutError", "execution timed out"),
    "cancelled": ("CancelledError", "execution was cancelled"),
}


class Cell:
    __slots__ = ("id", "code", "task", "in_user", "finished")

    def __init__(self, cell_id: int, code: str) -> None:
        self.id = cell_id
        self.code = code
        self.task: asyncio.Task[None] | None = None
        self.in_user = False
        self.finished = False


_COMPILE_FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def _compile(code: str, filename: str) -> tuple[CodeType, CodeType | None]:
    """The cell's statements, and apart from them the expression whose
    value it shows, if any (compiled in "eval" mode, so its value is
    returned, awaited when it awaits)."""
    tree = compile(code, filename, "exec", flags=ast.PyCF_ONLY_AST | _COMPILE_FLAGS, dont_inherit=True)
    last = _codemode_display.last_expression(code, tree)
    if last is not None:
        tree.body.pop()
    body = compile(tree, filename, "exec", flags=_COMPILE_FLAGS, dont_inherit=True)
    if last is None:
        return body, None
    value = compile(ast.Expression(last.value), filename, "eval", flags=_COMPILE_FLAGS, dont_inherit=True)
    return body, value


async def _evaluate(code: CodeType, namespace: dict[str, Any]) -> Any:
    if code.co_flags & inspect.CO_COROUTINE:
        return await eval(code, namespace)
    return eval(code, namespace)


def _in_loop_machinery(frame: FrameType | None) -> bool:
    """Whether the interrupted frame is asyncio waiting or guest code, as
    opposed to a user callback that keeps the loop busy."""
    if frame is None:
        return True
    filename = frame.f_code.co_filename
    return filename.startswith("<codemode>/") or filename.endswith("selectors.py") or "/asyncio/" in filename


class CellRunner:
    def __init__(self, loop: asyncio.AbstractEventLoop, namespace: dict[str, Any]) -> None:
        self.loop = loop
        self.namespace = namespace
        self.current: Cell | None = None
        self.main_task: asyncio.Task[None] | None = None

    def start(self, cell_id: int, code: str) -> None:
        # A previous cell may have replaced the SIGINT handler; without it
        # no interrupt could reach this one.
        if signal.getsignal(signal.SIGINT) != self.on_interrupt:
            signal.signal(signal.SIGINT, self.on_interrupt)
        cell = Cell(cell_id, code)
        self.current = cell
        task = cell.task = self.loop.create_task(self._run(cell))
        task.add_done_callback(lambda task: self._task_done(cell, task))

    async def _run(self, cell: Cell) -> None:
        early = _codemode.start_cell(cell.id)
        if early is not None:
            name, message = _INTERRUPT_ERRORS[early]
            self._finish(cell, early, (name, message + " before it started", ""))
            return
        filename = f"<cell-{cell.id}>"
        linecache.cache[filename] = (len(cell.code), None, cell.code.splitlines(True), filename)
        error: BaseException | None = None
        shown: _codemode_display.Shown | None = None
        try:
            cell.in_user = True
            try:
                if _codemode.interrupt_reason(cell.id) is not None:
                    # The interrupt came while the cell was being set up,
                    # when the handler leaves the cell's own task alone.
                    raise KeyboardInterrupt
                body, last = _compile(cell.code, filename)
                await _evaluate(body, self.namespace)
                if last is not None:
                    shown = _codemode_display.show(await _evaluate(last, self.namespace))
            finally:
                cell.in_user = False
        except BaseException as exc:  # everything a cell raises is its result
            error = exc
        self._report(cell, error, shown)

    def _report(self, cell: Cell, error: BaseException | None, shown: _codemode_display.Shown | None) -> None:
        if error is None:
            self._finish(cell, "success", None, shown)
            return
        reason = _codemode.interrupt_reason(cell.id)
        described = _codemode_tb.describe(error)
        if reason is not None:
            name, message = _INTERRUPT_ERRORS[reason]
            # The traceback shows where the cell was when it was stopped.
            self._finish(cell, reason, (name, message, described[2]))
            return
        sys.last_type, sys.last_value, sys.last_traceback = type(error), error, error.__traceback__
        self._finish(cell, "error", described)

    def _finish(
        self, cell: Cell, status: Status, error: Failure | None, shown: _codemode_display.Shown | None = None
    ) -> None:
        cell.finished = True
        if self.current is cell:
            self.current = None
        try:
            _codemode.finish(cell.id, status, error, shown)
        except Exception as exc:  # the host is gone; the reader thread exits
            _codemode.diag(f"cannot finish cell {cell.id}: {exc}")

    def _task_done(self, cell: Cell, task: asyncio.Task[None]) -> None:
        """Makes sure every cell gets its Finished."""
        if cell.finished:
            return
        if task.cancelled():
            # A cancel that lands before the task's first step skips _run.
            reason = _codemode.interrupt_reason(cell.id) or "cancelled"
            name, message = _INTERRUPT_ERRORS[reason]
            self._finish(cell, reason, (name, message + " before it started", ""))
            return
        failure = task.exception()
        text = "".join(traceback.format_exception(failure))
        self._finish(cell, "error", ("InternalError", f"the guest failed to run the cell: {failure!r}", text))

    def on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler."""
        cell = self.current
        if cell is None or cell.task is None or cell.task.done():
            return
        if _codemode.interrupt_reason(cell.id) is None:
            # A stale signal, or one from outside: only the host stops cells.
            return
        running = asyncio.current_task(self.loop)
        if running is cell.task:
            if cell.in_user:
                raise KeyboardInterrupt
            return
        cell.task.cancel()
        _codemode.wake()
        if running is not None and running is not self.main_task:
            # A task the user spawned holds the loop: break it out.
            raise KeyboardInterrupt
        if running is None and not _in_loop_machinery(frame):
            # A user callback holds the loop.
            raise KeyboardInterrupt
