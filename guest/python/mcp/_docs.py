"""Tool documentation from the metadata the guest already has (no RPC):
the ``_sync`` helpers of mcp.runtime, but search, which the host ranks."""

from typing import Any

from mcp import _state
from mcp._errors import MCPError

# The reference bridge capped search results to this range.
MIN_RESULTS = 1
MAX_RESULTS = 20


def normalize_detail(value: object) -> str:
    detail = str(value).lower() if value is not None else "summary"
    return detail if detail in ("summary", "full") else "summary"


def format_tool_doc(meta: _state.ServerMeta, tool: _state.ToolMeta, detail: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "server": meta["name"],
        "serverAlias": meta["alias"],
        "tool": tool["name"],
        "toolAlias": tool["alias"],
    }
    if tool.get("description"):
        doc["description"] = tool["description"]
    if detail == "full" and tool.get("input_schema") is not None:
        doc["inputSchema"] = tool["input_schema"]
    return doc


def require_server(name: str) -> _state.ServerMeta:
    meta = _state.find_server(name)
    if meta is None:
        loaded = ", ".join(_state.servers) or "none"
        raise MCPError(f"server {name!r} is not loaded (loaded: {loaded})", kind="not_found", server=name)
    return meta


def query(server: str, tool: object, detail: object) -> list[dict[str, Any]]:
    meta = require_server(server)
    detail = normalize_detail(detail)
    if tool is None:
        return [format_tool_doc(meta, info, detail) for info in meta["tools"]]
    if not isinstance(tool, str):
        raise MCPError("'tool' must be a string when provided", kind="invalid_arguments")
    info = _state.find_tool(meta, tool)
    if info is None:
        raise MCPError(f"tool {tool!r} not found for server {meta['name']}", kind="not_found", server=meta["name"])
    return [format_tool_doc(meta, info, detail)]


def clamp_limit(limit: Any) -> int:
    try:
        return max(MIN_RESULTS, min(MAX_RESULTS, int(limit)))
    except (TypeError, ValueError):
        return 5
