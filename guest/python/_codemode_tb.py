"""A cell's exception as Finished reports it: type name, message, and a
traceback trimmed to the user's code.

Frames of the guest's own modules (``<codemode>/...``) before the first user
frame (the cell runner) and after the last one (the ``mcp`` package raising
an MCPError) are noise to the model reading the result, so they are cut;
chained exceptions are trimmed the same way. A stack of guest frames only
(compiling a cell that has a syntax error) is cut entirely: the error's own
location lines say where it is.
"""

import traceback
from collections.abc import Iterable

INTERNAL_PREFIX = "<codemode>/"


def _is_internal(frame: traceback.FrameSummary) -> bool:
    return frame.filename.startswith(INTERNAL_PREFIX)


def _trim(stack: Iterable[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    frames = list(stack)
    start = 0
    while start < len(frames) and _is_internal(frames[start]):
        start += 1
    end = len(frames)
    while end > start and _is_internal(frames[end - 1]):
        end -= 1
    return frames[start:end]


def _trim_all(root: traceback.TracebackException) -> None:
    seen: set[int] = set()
    todo: list[traceback.TracebackException | None] = [root]
    while todo:
        te = todo.pop()
        if te is None or id(te) in seen:
            continue
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list(_trim(te.stack))
        todo.append(te.__cause__)
        todo.append(te.__context__)
        todo.extend(getattr(te, "exceptions", None) or ())


def message_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # a broken __str__ must not hide the error itself
        return f"<unprintable {type(exc).__name__} object>"


def describe(exc: BaseException) -> tuple[str, str, str]:
    """(type name, message, trimmed traceback text) for ``exc``."""
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
        _trim_all(te)
        text = "".join(te.format())
    except BaseException as fmt_error:  # formatting user objects can fail in any way
        text = f"{type(exc).__name__}: {message_of(exc)}\n(traceback unavailable: {fmt_error!r})\n"
    return type(exc).__name__, message_of(exc), text
