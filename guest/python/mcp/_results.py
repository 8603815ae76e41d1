"""Turns an MCP CallToolResult into the value a tool function returns.

- ``isError`` set: raise MCPError with the server's text (kind "tool_error").
- ``structuredContent`` present: return it.
- only text items: the text, parsed when it is a JSON object or array (so a
  tool answering ``{"a": 1}`` gives a dict, while "42" stays a string);
  several text items give a list.
- otherwise (images, resources, mixed): the content list itself.
- no content at all: None.

``runtime.call_tool(..., raw=True)`` skips all of this.
"""

import json
from typing import Any

from mcp._errors import MCPError


def _maybe_json(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def _error_text(result: dict[str, Any]) -> str:
    parts = []
    for item in result.get("content") or ():
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
    return "\n".join(parts)


def decode(result: Any, server: str, tool: str) -> Any:
    if not isinstance(result, dict):
        return result
    if result.get("isError"):
        text = _error_text(result) or f"tool {tool!r} of server {server!r} reported an error"
        raise MCPError(text, kind="tool_error", server=server, tool=tool, result=result)
    structured = result.get("structuredContent")
    if structured is not None:
        return structured
    content = result.get("content") or []
    if not content:
        return None
    if all(isinstance(item, dict) and item.get("type") == "text" for item in content):
        values = [_maybe_json(str(item.get("text", ""))) for item in content]
        return values[0] if len(values) == 1 else values
    return content
