"""The `_meta` a modern-era MCP request carries, as the scripts' clients send
it (one protocol version for all of them)."""

MODERN = "2026-07-28"


def modern_meta(client, level=None):
    """Protocol version, no client capabilities, `client` as the client's
    name; with `level`, the log level asked for."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
    }
    if level:
        meta["io.modelcontextprotocol/logLevel"] = level
    return meta
