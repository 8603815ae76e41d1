"""Drives `codemode serve` with the official MCP Python SDK (mcp on PyPI).

Usage: python sdk_client.py CODEMODE_BINARY [ARGS...]
Prints what the Rust test asserts on.
"""
import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("tools:", [t.name for t in tools.tools])
            result = await session.call_tool(
                "run_python",
                {
                    "code": "print(await mcp_everything.echo(message='from the python sdk'))",
                    "servers": ["everything"],
                },
            )
            # mcp 2.x names fields in snake_case; 1.x used camelCase.
            is_error = getattr(result, "is_error", None)
            if is_error is None:
                is_error = getattr(result, "isError", None)
            print("isError:", is_error)
            for item in result.content:
                print(getattr(item, "text", item))
            print("structured:", getattr(result, "structured_content", None) or getattr(result, "structuredContent", None))


asyncio.run(main())
