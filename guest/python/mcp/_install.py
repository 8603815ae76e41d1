"""Installs loaded servers into the session: their metadata, one module
``mcp.servers.<alias>`` each, and the cell globals ``mcp_<alias>``,
``mcp_servers``, ``LOADED_MCP_SERVERS``, ``mcp``, ``runtime`` and
``save_tool``."""

import json
import sys
import types

import _codemode
import mcp
from mcp import _signature, _state, runtime
from mcp._proxy import ServerProxy

# The dict published as the `mcp_servers` global: updated in place, so a
# reference kept by user code sees servers added later.
_published = {}


def _normalize(raw):
    """Server metadata from an Init/AddServers entry, with parsed schemas
    and valid, unique aliases (the host's when they are valid)."""
    name = raw["name"]
    old = _state.servers.get(name)
    used_aliases = {meta["alias"] for meta in _state.servers.values() if meta["name"] != name}
    alias = raw.get("alias") if _state.is_alias(raw.get("alias")) else _state.sanitize(name, "server")
    if old is not None and old["alias"] not in used_aliases:
        alias = old["alias"]
    alias = _state.unique(alias, used_aliases)
    tools, used = [], set()
    for t in raw.get("tools") or ():
        try:
            schema = json.loads(t.get("input_schema_json") or "null")
        except (ValueError, RecursionError):
            # The tool stays callable, with `**arguments`.
            schema = None
        tool_alias = t.get("alias") if _state.is_alias(t.get("alias")) else _state.sanitize(t["name"], "tool")
        tools.append(
            {
                "name": t["name"],
                "alias": _state.unique(tool_alias, used),
                "description": t.get("description") or "",
                "input_schema": schema,
            }
        )
    return {
        "name": name,
        "alias": alias,
        "description": raw.get("description") or "",
        "cwd": raw.get("cwd") or None,
        "tools": tools,
    }


def _tool_caller(server, tool):
    async def call(arguments):
        return await runtime.call_tool(server, tool, arguments)

    return call


def _install_server(meta):
    module_name = f"mcp.servers.{meta['alias']}"
    functions = {}
    for tool in meta["tools"]:
        call = _tool_caller(meta["name"], tool["name"])
        try:
            functions[tool["alias"]] = _signature.build(meta["name"], module_name, tool, call)
        except Exception as exc:  # a schema this code cannot express; keep the tool callable
            _codemode.diag(f"tool {tool['name']!r} of {meta['name']!r}: schema not usable ({exc!r})")
            functions[tool["alias"]] = _signature.build(meta["name"], module_name, {**tool, "input_schema": None}, call)
    module = types.ModuleType(module_name, f"Tools of MCP server {meta['name']!r}: one async function per tool.")
    module.__dict__.update(functions)
    module.__all__ = list(functions)
    module.SERVER = meta["name"]
    module.TOOLS = meta["tools"]
    module.TOOL_MAP = {tool["alias"]: tool for tool in meta["tools"]}
    sys.modules[module_name] = module
    setattr(mcp.servers, meta["alias"], module)
    if meta["alias"] not in mcp.servers.__all__:
        mcp.servers.__all__.append(meta["alias"])
    return ServerProxy(meta, functions)


def _add(raws, namespace):
    for raw in raws:
        try:
            meta = _normalize(raw)
        except Exception as exc:  # one malformed entry must not cost the others
            _codemode.diag(f"server entry {raw.get('name')!r} not installed: {exc!r}")
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


def _remove_module(meta):
    sys.modules.pop(f"mcp.servers.{meta['alias']}", None)
    if hasattr(mcp.servers, meta["alias"]):
        delattr(mcp.servers, meta["alias"])
    if meta["alias"] in mcp.servers.__all__:
        mcp.servers.__all__.remove(meta["alias"])


def init(payload, namespace):
    """Applies Init: discovered servers, the session's servers, and the
    helper globals."""
    _state.discovered[:] = [dict(d) for d in payload.get("discovered") or ()]
    namespace["mcp"] = mcp
    namespace["runtime"] = runtime
    namespace["save_tool"] = runtime.save_tool
    _add(payload.get("servers") or (), namespace)


def add_servers(raws, namespace):
    """Applies AddServers (a server already loaded is replaced)."""
    _add(raws, namespace)
