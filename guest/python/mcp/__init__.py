"""MCP servers as Python, inside the codemode sandbox.

``mcp.runtime`` holds the helpers (discovery, docs, ``call_tool``,
``save_tool``, ``list_saved_tools``, ``show``); ``mcp.servers.<alias>`` has
one async function per tool of each loaded server. The same functions are
reachable through the ``mcp_<alias>`` globals of every cell.
``from mcp.saved import name`` loads a saved tool.
"""

__all__ = ["runtime", "saved", "servers"]

from mcp import runtime, saved, servers  # noqa: E402
