"""Tool functions with real signatures, built from each tool's JSON Schema.

For a tool whose schema has properties ``message`` (required) and ``count``
(optional, default 3) this makes::

    async def echo(*, message: str, count: int = 3): ...

with a docstring listing the parameters, so ``help()``,
``inspect.signature`` and tab completion are useful, and Python itself
raises TypeError for unknown or missing arguments before any request is
sent. Optional parameters left at their default are not sent (the server
applies its own default). Property names that are not identifiers get an
identifier alias and are sent under their real name. A schema without
``properties`` gives ``(**arguments)``.
"""

import keyword
import re
import types
import typing
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import _state

# Sends a call's arguments (by the schema's property names) and returns the result.
Caller = Callable[[dict[str, Any]], Awaitable[Any]]

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}
_CALL = "_codemode_call_"
_DEFAULTS = "_codemode_defaults_"


class Param:
    __slots__ = ("name", "key", "required", "default", "schema")

    def __init__(self, name: str, key: str, required: bool, default: Any, schema: dict[str, Any]) -> None:
        self.name = name
        self.key = key
        self.required = required
        self.default = default
        self.schema = schema


def _param_name(key: str, used: set[str]) -> str:
    if _state.is_alias(key):
        base = key
    else:
        base = re.sub(r"\W+", "_", str(key)) or "arg"
        if base[0].isdigit():
            base = f"_{base}"
        if keyword.iskeyword(base):
            base = f"{base}_"
    return _state.unique(base, used)


def _annotation(schema: object, depth: int = 0) -> Any:
    if not isinstance(schema, dict) or depth > 4:
        return typing.Any
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
        return typing.Literal[tuple(enum)]
    kind = schema.get("type")
    if isinstance(kind, str):
        return _JSON_TYPES.get(kind, typing.Any)
    choices = kind if isinstance(kind, list) else None
    if choices is None:
        variants = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(variants, list) and variants:
            types = tuple(_annotation(v, depth + 1) for v in variants)
            return _union(types)
        return typing.Any
    types = tuple(_JSON_TYPES.get(k, typing.Any) for k in choices if isinstance(k, str))
    if not types:
        return typing.Any
    return _union(types)


def _union(types: tuple[Any, ...]) -> Any:
    # The members are only known at run time, so `X | Y` syntax cannot spell it.
    return typing.Union[types] if len(types) > 1 else types[0]  # noqa: UP007


def _type_text(schema: object) -> str:
    if not isinstance(schema, dict):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "one of " + ", ".join(repr(v) for v in enum)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_type_text(schema['items'])}"
    if isinstance(kind, str):
        return kind
    variants = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(variants, list) and variants:
        return " | ".join(_type_text(v) for v in variants)
    return "any"


def _params(schema: object) -> list[Param] | None:
    """The parameters, or None when the schema names no properties."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    used = {_CALL, _DEFAULTS}
    params = []
    for key, prop in schema["properties"].items():
        prop = prop if isinstance(prop, dict) else {}
        is_required = key in required
        default = None if is_required else prop.get("default")
        params.append(Param(_param_name(key, used), key, is_required, default, prop))
    # Required first: they are what a reader of the signature needs.
    params.sort(key=lambda p: not p.required)
    return params


def _docstring(server: str, tool: _state.ToolMeta, params: list[Param] | None) -> str:
    lines = [(tool.get("description") or "").strip() or f"MCP tool {tool['name']!r}."]
    if params:
        lines += ["", "Parameters:"]
        for p in params:
            facts = [_type_text(p.schema), "required" if p.required else "optional"]
            if not p.required and p.default is not None:
                facts.append(f"default {p.default!r}")
            if p.name != p.key:
                facts.append(f"sent as {p.key!r}")
            text = f"  {p.name} ({', '.join(facts)})"
            description = str(p.schema.get("description") or "").strip()
            lines.append(f"{text}: {description}" if description else text)
    elif params is None:
        lines += ["", "Parameters: any keyword arguments (the tool's schema names none)."]
    lines += [
        "",
        f"MCP tool {tool['name']!r} of server {server!r}. Await it. Returns the decoded result",
        "(structuredContent, else the text parsed as JSON when it is JSON, else the content",
        "list); raises mcp.runtime.MCPError when the call fails or the tool reports an error.",
    ]
    return "\n".join(lines)


def build(server: str, module_name: str, tool: _state.ToolMeta, call: Caller) -> Callable[..., Any]:
    """An async function for ``tool`` of ``server``; ``call(arguments)``
    performs the request."""
    alias = tool["alias"]
    params = _params(tool.get("input_schema"))
    parts: list[str] = []
    if params:
        parts.append("*")
        for index, p in enumerate(params):
            parts.append(p.name if p.required else f"{p.name}={_DEFAULTS}[{index}]")
    if params is None:
        parts.append("**arguments")
    source = f"async def {alias}({', '.join(parts)}):\n    return await {_CALL}(locals())\n"

    async def invoke(values: dict[str, Any]) -> Any:
        arguments: dict[str, Any] = {}
        for p in params or ():
            value = values[p.name]
            if p.required or value is not p.default:
                arguments[p.key] = value
        if params is None:
            arguments.update(values["arguments"])
        return await call(arguments)

    namespace: dict[str, Any] = {_CALL: invoke, _DEFAULTS: [p.default for p in params or ()], "__name__": module_name}
    filename = f"<codemode>/mcp/servers/{alias}.py"
    exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    func: types.FunctionType = namespace[alias]
    func.__module__ = module_name
    func.__qualname__ = alias
    func.__doc__ = _docstring(server, tool, params)
    annotations: dict[str, Any] = {}
    for p in params or ():
        try:
            annotation = _annotation(p.schema)
        except TypeError:  # an enum typing cannot express
            continue
        # "Any" says nothing a reader of the signature could use.
        if annotation is not typing.Any:
            annotations[p.name] = annotation
    func.__annotations__ = annotations
    # The tool behind the function, for user code that wants its schema.
    func.__dict__["__mcp_tool__"] = {"server": server, "tool": tool["name"], "inputSchema": tool.get("input_schema")}
    return func
