"""Requests to the host: each one is a frame sent by the Rust side, and a
future here that the dispatcher resolves when the RpcResponse with the same
id arrives. Any number may be outstanding at once (``asyncio.gather`` over
many tool calls), answered in any order. ``request_blocking`` is the
exception, for the few requests made where nothing can await."""

import asyncio
import json

from mcp._errors import MCPError

# request id -> (future, server, tool)
_pending = {}


async def request(send, *args, server=None, tool=None):
    """Sends ``send(*args)`` (a ``_codemode`` request function) and returns
    the decoded JSON answer; an error answer raises MCPError."""
    loop = asyncio.get_running_loop()
    try:
        request_id = send(*args)
    except RuntimeError as exc:
        raise MCPError(str(exc), kind="internal", server=server, tool=tool) from None
    future = loop.create_future()
    _pending[request_id] = (future, server, tool)
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


def request_blocking(send, *args):
    """Sends ``send(*args)`` (a blocking ``_codemode`` request function that
    returns ``(ok_json, kind, message)``) and returns the decoded answer; an
    error answer raises MCPError. For callers that cannot await."""
    try:
        ok_json, kind, message = send(*args)
    except RuntimeError as exc:
        raise MCPError(str(exc), kind="internal") from None
    if ok_json is None:
        raise MCPError(message or f"request failed ({kind})", kind=kind)
    try:
        return json.loads(ok_json)
    except ValueError as exc:
        raise MCPError(f"the host's answer is not valid JSON: {exc}", kind="internal") from None


def resolve(request_id, ok_json, kind, message):
    """Called by the dispatcher for every RpcResponse."""
    entry = _pending.pop(request_id, None)
    if entry is None:
        # The caller was cancelled while the request was in flight.
        return
    future, server, tool = entry
    if future.done():
        return
    if ok_json is not None:
        future.set_result(ok_json)
        return
    what = f"{server}.{tool}" if server and tool else (server or "request")
    text = message or f"{what} failed ({kind})"
    future.set_exception(MCPError(text, kind=kind, server=server, tool=tool))
