"""An MCP server for the tests, written with the ``mcp`` SDK and served over streamable HTTP.

``python mcp_http_server.py PORT [LIFETIME_S]`` serves on 127.0.0.1:PORT at ``/mcp`` and exits by
itself after LIFETIME_S seconds (120 by default), so that a test run that dies cannot leave it
running. Its tools: ``add`` (text), ``pixel`` (a text and a PNG image), ``fail`` (an error result),
``wait`` (sleeps; a cancelled call is counted) and ``cancelled_calls`` (that count).
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import threading

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ContentBlock, ImageContent, TextContent

# A 1x1 red PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)

server = MCPServer("nbagent-test-server", log_level="WARNING")
cancelled: list[str] = []


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def pixel() -> list[ContentBlock]:
    """A one-pixel red image, with its caption."""
    return [
        TextContent(type="text", text="a red pixel"),
        ImageContent(type="image", data=base64.b64encode(PIXEL_PNG).decode("ascii"), mime_type="image/png"),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def wait(seconds: float, label: str = "") -> str:
    """Sleep for `seconds`, then say so."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        cancelled.append(label)
        raise
    return f"waited {seconds} s"


@server.tool()
def cancelled_calls() -> str:
    """The labels of the wait calls that were cancelled, comma-separated."""
    return ",".join(cancelled)


def main() -> None:
    port = int(sys.argv[1])
    lifetime = float(sys.argv[2]) if len(sys.argv) > 2 else 120.0
    timer = threading.Timer(lifetime, lambda: os._exit(3))
    timer.daemon = True
    timer.start()
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
