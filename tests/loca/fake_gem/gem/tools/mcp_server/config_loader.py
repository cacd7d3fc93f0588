"""Fake of gem.tools.mcp_server.config_loader: one stdio entry per server, params kept in env."""


class ServerConfigLoader:
    def build_stdio_config(self, server_type, params, server_name=None):
        return {server_name or server_type: {"command": "python", "args": [server_type], "env": dict(params)}}


def build_server_config(server_type, params, server_name=None):
    """Upstream's module-level builder (what the PoS adapter calls)."""
    return ServerConfigLoader().build_stdio_config(server_type, params, server_name)
