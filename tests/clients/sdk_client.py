"""Drives `codemode serve` with the official MCP Python SDK (mcp on PyPI).

Usage: python sdk_client.py CODEMODE_BINARY [ARGS...]
Prints what the Rust test asserts on. Validates every result's
structuredContent against run_python's outputSchema with `jsonschema`
(and the SDK validates it too, as it does for any tool with one).
"""
import asyncio
import json
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def field(obj, snake, camel):
    """mcp 2.x names fields in snake_case; 1.x used camelCase."""
    value = getattr(obj, snake, None)
    return getattr(obj, camel, None) if value is None else value


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            info = field(init, "server_info", "serverInfo")
            print("server:", info.name, info.version)
            instructions = init.instructions or ""
            names = [n for n in ("everything", "time") if f"\n- {n}" in instructions]
            print("servers in instructions:", names)
            tools = await session.list_tools()
            print("tools:", [t.name for t in tools.tools])
            schema = field(tools.tools[0], "output_schema", "outputSchema")
            print("output schema:", schema is not None)
            cases = [
                ("success", {"code": "print(await mcp_everything.echo(message='from the python sdk'))", "servers": ["everything"]}),
                ("error", {"code": "1/0"}),
                ("timeout", {"code": "while True: pass", "timeout": 1}),
                ("validation_error", {"code": "print(1)", "unknown": 1}),
                ("shown", {"code": "{'n': 41 + 1, 'tags': ['a']}"}),
            ]
            for expected, arguments in cases:
                result = await session.call_tool("run_python", arguments)
                structured = field(result, "structured_content", "structuredContent")
                jsonschema.validate(structured, schema)
                print(f"{expected}: status={structured['status']} isError={field(result, 'is_error', 'isError')} valid")
                if "result" in structured:
                    print(f"{expected}: result={json.dumps(structured['result'], sort_keys=True)}")
                for item in result.content:
                    print(getattr(item, "text", item))


asyncio.run(main())
