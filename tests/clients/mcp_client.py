#!/usr/bin/env python3
"""A real MCP client (the official Python SDK) for the tests of `uffs mcp` and `uffs serve`'s /mcp.

    mcp_client.py CALLS.json --stdio UFFS ARG...     starts `UFFS ARG...` (e.g. `uffs mcp --index F`) on stdio
    mcp_client.py CALLS.json --http URL             the streamable HTTP endpoint of `uffs serve` (URL as it
                                                    printed it, with ?token=...)

CALLS.json is a list of [tool, arguments]. Prints one JSON line with the server's name and tools (name,
description, input schema), then one per call: {"tool", "is_error", "structured", "text"} or {"tool",
"exception"} when the call failed at the protocol level. The test that runs it checks the answers.
"""
import asyncio
import json
import os
import re
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def session_calls(session, calls):
    init = await session.initialize()
    tools = await session.list_tools()
    print(json.dumps({
        "server": init.server_info.name,
        "instructions": init.instructions,
        "tools": [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                  for t in tools.tools],
    }), flush=True)
    for tool, args in calls:
        try:
            r = await session.call_tool(tool, args)
            text = "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")
            out = {"tool": tool, "is_error": bool(r.is_error), "structured": r.structured_content, "text": text}
        except Exception as e:  # a protocol-level error: the test decides whether it is right
            out = {"tool": tool, "exception": f"{type(e).__name__}: {e}"}
        print(json.dumps(out), flush=True)


async def main():
    calls = json.load(open(sys.argv[1]))
    mode = sys.argv[2]
    if mode == "--stdio":
        # The SDK gives a server only a few variables unless told: pass ours (the tests' UFFS_* directories).
        params = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:], env=dict(os.environ))
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await session_calls(s, calls)
    elif mode == "--http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        base, token = re.match(r"(http://[^/]+)/\?token=(.*)", sys.argv[3]).groups()
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as hc:
            async with streamable_http_client(base + "/mcp", http_client=hc) as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    await session_calls(s, calls)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    asyncio.run(main())
