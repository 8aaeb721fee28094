"""A small MCP server written with the official Python SDK (`mcp` on PyPI),
run over stdio by the tests: annotated tools for the `hints` approval mode,
structured output, an exception as a tool error, image results (a real
GIF and bytes that only claim to be a PNG), and a tool taking nested models
(its schema uses `$defs` and `$ref`, as pydantic writes them). Every call is
appended to $CALL_LOG."""

import os

from pydantic import BaseModel

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("python-test-server")


def log(line: str) -> None:
    path = os.environ.get("CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(key: str) -> str:
    """Looks a key up (read-only)."""
    log(f"call lookup {key}")
    return f"{key} = 42"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def delete(key: str) -> str:
    """Deletes a key."""
    log(f"call delete {key}")
    return f"deleted {key}"


@server.tool()
def add(a: int, b: int) -> dict:
    """Adds two numbers (structured output)."""
    log(f"call add {a} {b}")
    return {"sum": a + b}


# The smallest GIF: one white pixel.
PIXEL_GIF = (
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00"
    b"!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def pixel(fake: bool = False) -> Image:
    """Returns a one-pixel GIF, or (fake) text claiming to be a PNG."""
    log(f"call pixel {fake}")
    if fake:
        return Image(data=b"not really a png", format="png")
    return Image(data=PIXEL_GIF, format="gif")


class Address(BaseModel):
    city: str
    street: str | None = None


class Order(BaseModel):
    to: Address
    items: list[str]
    note: str | None = None


@server.tool()
def ship(order: Order) -> str:
    """Ships an order to an address."""
    log(f"call ship {order.to.city}")
    return f"shipping {len(order.items)} items to {order.to.city}"


@server.tool()
def boom() -> str:
    """Always fails."""
    log("call boom")
    raise ToolError("the python tool failed on purpose")


if __name__ == "__main__":
    log("started")
    server.run("stdio")
