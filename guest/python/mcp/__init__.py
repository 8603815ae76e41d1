"""MCP servers as Python, inside the codemode sandbox.

``mcp.runtime`` holds the helpers (discovery, docs, ``call_tool``,
``save_tool``, ``show``); ``mcp.servers.<alias>`` has one async function per
tool of each loaded server. The same functions are reachable through the
``mcp_<alias>`` globals of every cell.
"""

__all__ = ["runtime", "servers"]

from mcp import runtime, servers  # noqa: E402
