"""Saved tools, loaded when asked for: ``from mcp.saved import name`` fetches
the tool saved as ``name`` from the host, runs its source in a fresh module
``mcp.saved.<name>`` and gives its function. Nothing is loaded unless a cell
imports it. ``mcp.runtime.list_saved_tools()`` lists them;
``save_tool(func)`` adds one."""

from collections.abc import Callable
from typing import Any

from mcp import _saved

__all__: list[str] = []


def __getattr__(name: str) -> Callable[..., Any]:
    return _saved.load(name, globals())
