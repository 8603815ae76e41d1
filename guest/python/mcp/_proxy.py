"""The ``mcp_<alias>`` globals: one object per loaded server whose
attributes are its tool functions (the same ones as in
``mcp.servers.<alias>``)."""

from collections.abc import Callable
from typing import Any

from mcp import _state, runtime

# A tool function: ``await tool(**arguments)``.
ToolFunction = Callable[..., Any]


class ServerProxy:
    """An MCP server's tools as attributes: ``await mcp_x.tool(...)``."""

    def __init__(self, meta: _state.ServerMeta, functions: dict[str, ToolFunction]) -> None:
        self._mcp_name = meta["name"]
        self._mcp_alias = meta["alias"]
        self._mcp_functions = dict(functions)
        self._mcp_by_name = {tool["name"]: functions[tool["alias"]] for tool in meta["tools"]}
        for alias, func in functions.items():
            # Helper methods keep their meaning; such tools stay reachable
            # through mcp.servers.<alias> and runtime.call_tool.
            if not hasattr(type(self), alias):
                self.__dict__[alias] = func

    async def list_tools(self) -> Any:
        """The server's tools as the host reports them now (an RPC)."""
        return await runtime.list_tools(self._mcp_name)

    def __getattr__(self, name: str) -> ToolFunction:
        if name.startswith("_"):
            raise AttributeError(name)
        func = self._mcp_by_name.get(name)
        if func is not None:
            return func
        server = self._mcp_name

        # A tool the server did not list (reference behaviour): call it by name.
        async def call(**arguments: Any) -> Any:
            return await runtime.call_tool(server, name, arguments)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = f"Calls tool {name!r} of server {server!r}, which is not in its tool list."
        return call

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | set(self._mcp_functions))

    def __repr__(self) -> str:
        names = ", ".join(self._mcp_functions)
        return f"<MCP server {self._mcp_name!r} as mcp_{self._mcp_alias}: {names}>"
