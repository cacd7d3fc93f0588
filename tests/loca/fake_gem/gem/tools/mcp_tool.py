"""Fake of gem.tools.mcp_tool.MCPTool: in-process tools named <server>_<tool>, descriptions
prefixed "[server]" as upstream's multi-server get_tool_function() does."""

import json
from pathlib import Path


class MCPTool:
    tool_type = "mcp"

    created = []  # every instance, so tests can read the arguments the adapter passed

    def __init__(self, config, validate_on_init=True, execution_timeout=30.0, fix_schema_for_openai=True, **kwargs):
        self.servers = config["mcpServers"]
        self.closed = False
        self.args = {
            "validate_on_init": validate_on_init,
            "execution_timeout": execution_timeout,
            "fix_schema_for_openai": fix_schema_for_openai,
            **kwargs,
        }
        MCPTool.created.append(self)

    def get_tool_function(self):
        out = []
        if "filesystem" in self.servers:
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": "filesystem_write_file",
                        "description": "[filesystem] Write a file.",
                        "parameters": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                        },
                    },
                }
            )
        if "claim_done" in self.servers:
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": "claim_done_claim_done",
                        "description": "[claim_done] Claim the task is done.",
                        "parameters": {"type": "object", "properties": {}},
                    },
                }
            )
        return out

    def instruction_string(self):
        return json.dumps(self.get_tool_function())

    def execute_tool(self, name, args, call_id):
        if name == "filesystem_write_file":
            root = Path(self.servers["filesystem"]["env"]["workspace_path"])
            if "path" not in args:
                return True, True, "Error: path is required", name, call_id
            (root / args["path"]).write_text(args.get("content", ""))
            return True, False, f"Successfully wrote to {args['path']}", name, call_id
        if name == "claim_done_claim_done":
            return True, False, "Task completion claimed.", name, call_id
        return False, True, "", name, call_id

    def close(self):
        self.closed = True
