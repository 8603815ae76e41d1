"""Installs loaded servers into the session: their metadata, one module
``mcp.servers.<alias>`` each, and the cell globals ``mcp_<alias>``,
``mcp_servers``, ``LOADED_MCP_SERVERS``, ``mcp``, ``runtime`` and
``save_tool``."""

import json
import sys
import types
from collections.abc import Iterable
from typing import Any

import _codemode
import mcp
from mcp import _signature, _state, runtime
from mcp._proxy import ServerProxy, ToolFunction

# The dict published as the `mcp_servers` global: updated in place, so a
# reference kept by user code sees servers added later.
_published: dict[str, ServerProxy] = {}


def _normalize(raw: _codemode.ServerInfo) -> _state.ServerMeta:
    """Server metadata from an Init/AddServers entry, with parsed schemas
    and valid, unique aliases (the host's when they are valid)."""
    name = raw.name
    old = _state.servers.get(name)
    used_aliases = {meta["alias"] for meta in _state.servers.values() if meta["name"] != name}
    alias = raw.alias if _state.is_alias(raw.alias) else _state.sanitize(name, "server")
    if old is not None and old["alias"] not in used_aliases:
        alias = old["alias"]
    alias = _state.unique(alias, used_aliases)
    tools: list[_state.ToolMeta] = []
    used: set[str] = set()
    for t in raw.tools:
        try:
            schema = json.loads(t.input_schema_json or "null")
        except (ValueError, RecursionError):
            # The tool stays callable, with `**arguments`.
            schema = None
        tool_alias = t.alias if _state.is_alias(t.alias) else _state.sanitize(t.name, "tool")
        tools.append(
            {
                "name": t.name,
                "alias": _state.unique(tool_alias, used),
                "description": t.description,
                "input_schema": schema,
            }
        )
    return {
        "name": name,
        "alias": alias,
        "description": raw.description,
        "cwd": raw.cwd or None,
        "tools": tools,
    }


def _tool_caller(server: str, tool: str) -> _signature.Caller:
    async def call(arguments: dict[str, Any]) -> Any:
        return await runtime.call_tool(server, tool, arguments)

    return call


def _install_server(meta: _state.ServerMeta) -> ServerProxy:
    module_name = f"mcp.servers.{meta['alias']}"
    functions: dict[str, ToolFunction] = {}
    for tool in meta["tools"]:
        call = _tool_caller(meta["name"], tool["name"])
        try:
            functions[tool["alias"]] = _signature.build(meta["name"], module_name, tool, call)
        except Exception as exc:  # a schema this code cannot express; keep the tool callable
            _codemode.diag(f"tool {tool['name']!r} of {meta['name']!r}: schema not usable ({exc!r})")
            functions[tool["alias"]] = _signature.build(meta["name"], module_name, {**tool, "input_schema": None}, call)
    module = types.ModuleType(module_name, f"Tools of MCP server {meta['name']!r}: one async function per tool.")
    module.__dict__.update(functions)
    # Names a ModuleType does not declare, so set through its dict.
    module.__dict__.update(
        __all__=list(functions),
        SERVER=meta["name"],
        TOOLS=meta["tools"],
        TOOL_MAP={tool["alias"]: tool for tool in meta["tools"]},
    )
    sys.modules[module_name] = module
    setattr(mcp.servers, meta["alias"], module)
    if meta["alias"] not in mcp.servers.__all__:
        mcp.servers.__all__.append(meta["alias"])
    return ServerProxy(meta, functions)


def _add(raws: Iterable[_codemode.ServerInfo], namespace: dict[str, Any]) -> None:
    for raw in raws:
        try:
            meta = _normalize(raw)
        except Exception as exc:  # one malformed entry must not cost the others
            _codemode.diag(f"server entry {raw.name!r} not installed: {exc!r}")
            continue
        old = _state.servers.pop(meta["name"], None)
        if old is not None:
            _remove_module(old)
            namespace.pop(f"mcp_{old['alias']}", None)
        _state.servers[meta["name"]] = meta
        proxy = _install_server(meta)
        _published[meta["name"]] = proxy
        namespace[f"mcp_{meta['alias']}"] = proxy
    namespace["mcp_servers"] = _published
    namespace["LOADED_MCP_SERVERS"] = tuple(_state.servers)


def _remove_module(meta: _state.ServerMeta) -> None:
    sys.modules.pop(f"mcp.servers.{meta['alias']}", None)
    if hasattr(mcp.servers, meta["alias"]):
        delattr(mcp.servers, meta["alias"])
    if meta["alias"] in mcp.servers.__all__:
        mcp.servers.__all__.remove(meta["alias"])


def init(message: _codemode.Init, namespace: dict[str, Any]) -> None:
    """Applies Init: discovered servers, the session's servers, and the
    helper globals."""
    _state.discovered[:] = [{"name": d.name, "description": d.description} for d in message.discovered]
    namespace["mcp"] = mcp
    namespace["runtime"] = runtime
    namespace["save_tool"] = runtime.save_tool
    _add(message.servers, namespace)


def add_servers(raws: Iterable[_codemode.ServerInfo], namespace: dict[str, Any]) -> None:
    """Applies AddServers (a server already loaded is replaced)."""
    _add(raws, namespace)
