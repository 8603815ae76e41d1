"""Requests to the host: each one is a frame sent by the Rust side, and a
future here that the dispatcher resolves when the RpcResponse with the same
id arrives. Any number may be outstanding at once (``asyncio.gather`` over
many tool calls), answered in any order. ``request_blocking`` is the
exception, for the few requests made where nothing can await."""

import asyncio
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from _codemode import RpcAnswer
from mcp._errors import MCPError


class _Pending(NamedTuple):
    future: asyncio.Future[str]
    server: str | None
    tool: str | None


# request id -> the caller waiting for its answer
_pending: dict[int, _Pending] = {}


async def request(send: Callable[[], int], *, server: str | None = None, tool: str | None = None) -> Any:
    """Sends the request ``send()`` makes (a call of a ``_codemode`` request
    function, which returns the request's id) and returns the decoded JSON
    answer; an error answer raises MCPError."""
    loop = asyncio.get_running_loop()
    try:
        request_id = send()
    except RuntimeError as exc:
        raise MCPError(str(exc), kind="internal", server=server, tool=tool) from None
    future: asyncio.Future[str] = loop.create_future()
    _pending[request_id] = _Pending(future, server, tool)
    try:
        answer = await future
    finally:
        _pending.pop(request_id, None)
    try:
        return json.loads(answer)
    except ValueError as exc:
        raise MCPError(
            f"the host's answer is not valid JSON: {exc}", kind="internal", server=server, tool=tool
        ) from None


def request_blocking(send: Callable[[], RpcAnswer]) -> Any:
    """Sends the request ``send()`` makes (a call of a blocking ``_codemode``
    request function) and returns the decoded answer; an error answer raises
    MCPError. For callers that cannot await."""
    try:
        answer = send()
    except RuntimeError as exc:
        raise MCPError(str(exc), kind="internal") from None
    if answer.ok_json is None:
        raise MCPError(answer.error_message or f"request failed ({answer.error_kind})", kind=answer.error_kind)
    try:
        return json.loads(answer.ok_json)
    except ValueError as exc:
        raise MCPError(f"the host's answer is not valid JSON: {exc}", kind="internal") from None


def resolve(answer: RpcAnswer) -> None:
    """Called by the dispatcher for every RpcResponse."""
    entry = _pending.pop(answer.id, None)
    if entry is None:
        # The caller was cancelled while the request was in flight.
        return
    future, server, tool = entry
    if future.done():
        return
    if answer.ok_json is not None:
        future.set_result(answer.ok_json)
        return
    what = f"{server}.{tool}" if server and tool else (server or "request")
    text = answer.error_message or f"{what} failed ({answer.error_kind})"
    future.set_exception(MCPError(text, kind=answer.error_kind, server=server, tool=tool))
