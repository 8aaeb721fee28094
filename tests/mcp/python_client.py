"""An independent MCP client (the official Python SDK, `mcp` on PyPI) for
`switchboard mcp`: it starts the server over stdio ($SWITCHBOARD_BIN mcp, with
this process's environment) — or, with $MCP_URL set, connects to it over
Streamable HTTP sending `Authorization: Bearer $MCP_TOKEN` — prints the tools
it lists, then reads one JSON command per stdin line ({"call": name, "args":
{...}}) and prints each result as one JSON line on stdout, in order."""

import asyncio
import contextlib
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


@contextlib.asynccontextmanager
async def connect():
    """The (read, write) streams of the transport the environment asks for."""
    url = os.environ.get("MCP_URL")
    if url:
        headers = {"Authorization": f"Bearer {os.environ['MCP_TOKEN']}"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                yield read, write
    else:
        params = StdioServerParameters(
            command=os.environ["SWITCHBOARD_BIN"], args=["mcp"], env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write):
            yield read, write


async def main() -> None:
    async with connect() as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            emit({
                "server": init.server_info.name,
                "tools": sorted(t.name for t in tools.tools),
            })
            loop = asyncio.get_running_loop()
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    break
                command = json.loads(line)
                result = await session.call_tool(command["call"], command.get("args", {}))
                emit({
                    "call": command["call"],
                    "isError": bool(result.is_error),
                    "structured": result.structured_content,
                    "text": [c.text for c in result.content if getattr(c, "type", "") == "text"],
                })


asyncio.run(main())
