"""The StockAlertLite environment (docs/pos-benchmarks.md §1.7) behind the internal `LocaToolEnv`
interface: mock MCP tools over files in the task directory, named per the §1.4 contract.

reset() writes `local_db/woocommerce/products.json`, `groundtruth_workspace/alerts.json` and the
agent's `agent_workspace/stock_policy.md`. Tools (only those of enabled servers):
  woocommerce_list_products(page=1, per_page=10)  JSON array of products (per_page ≤ 100)
  email_send_email(to, subject, body)              appends to <email data_dir>/sent.jsonl
  filesystem_read_file(path)                       inside workspace_path only
  python_execute_python_execute(code)              `python -I -c code` in the workspace, timeout
  claim_done_claim_done()                          runs `synth.evaluate` → done, reward 1.0/0.0
Bad arguments give an "Error: ..." result (never an exception)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from benchmarks.loca import synth
from benchmarks.loca.interface import LocaSetupError, LocaToolEnv, ToolStep

_S, _I = {"type": "string"}, {"type": "integer"}
SCHEMAS: dict[str, tuple[str, str, dict[str, Any], list[str]]] = {  # tool → (server, description, properties, required)
    "woocommerce_list_products": (
        "woocommerce",
        "List store products as a JSON array (page ≥ 1, per_page 1-100).",
        {"page": _I, "per_page": _I},
        [],
    ),
    "email_send_email": (
        "email",
        "Send an email from the store account.",
        {"to": _S, "subject": _S, "body": _S},
        ["to", "subject", "body"],
    ),
    "filesystem_read_file": ("filesystem", "Read a text file inside the workspace.", {"path": _S}, ["path"]),
    "python_execute_python_execute": (
        "python_execute",
        "Run Python code in the workspace; returns stdout/stderr.",
        {"code": _S},
        ["code"],
    ),
    "claim_done_claim_done": ("claim_done", "Declare the task finished (ends the episode).", {}, []),
}
POLICY = """# Stock alert policy
A product is low on stock when stock_quantity < stock_threshold.
For every low-stock product send ONE email to its supplier's contact address with the subject
"Low stock alert: <SKU>" and a body naming the product, its stock_quantity and stock_threshold.
Do not email about products that are not low on stock. Call claim_done when all alerts are sent.
"""


class StockAlertLiteS2LEnv(LocaToolEnv):
    def __init__(
        self,
        *,
        env_params: dict[str, Any],
        mcp_servers: dict[str, dict[str, Any]],
        task_dir: Path,
        tool_timeout_s: float = 120.0,
    ) -> None:
        try:
            self.seed = int(env_params["seed"])
            self.sizes = {k: int(env_params[k]) for k in ("num_low_stock", "num_normal_stock")}
        except (KeyError, TypeError, ValueError) as e:
            raise LocaSetupError(
                f"{synth.FAMILY} env_params need integer seed, num_low_stock, num_normal_stock: {e}"
            ) from e
        self.servers, self.task_dir, self.timeout = mcp_servers, Path(task_dir), tool_timeout_s
        p = {name: cfg["params"] for name, cfg in mcp_servers.items()}
        self.db = Path(p.get("woocommerce", {}).get("data_dir", self.task_dir / "local_db" / "woocommerce"))
        self.mail_dir = Path(p.get("email", {}).get("data_dir", self.task_dir / "local_db" / "emails"))
        self.sender = p.get("email", {}).get("email", "store@example.com")
        self.fs_root = Path(p.get("filesystem", {}).get("workspace_path", self.task_dir / "agent_workspace")).resolve()
        self.py_dir = Path(p.get("python_execute", {}).get("workspace_dir", self.task_dir / "agent_workspace"))
        self.truth: dict[str, Any] = {}
        self.tools: dict[str, Callable[..., ToolStep]] = {
            "woocommerce_list_products": self._list_products,
            "email_send_email": self._send_email,
            "filesystem_read_file": self._read_file,
            "python_execute_python_execute": self._python,
            "claim_done_claim_done": self._claim_done,
        }
        self.tools = {n: f for n, f in self.tools.items() if SCHEMAS[n][0] in mcp_servers}

    # ------------------------------------------------------------------ interface
    def reset(self) -> tuple[str, list[dict[str, Any]]]:
        data = synth.generate(self.seed, **self.sizes)
        self.products, self.truth = data["products"], {k: data[k] for k in ("low_stock_skus", "alerts")}
        for d in (self.db, self.mail_dir, self.fs_root, self.py_dir, self.task_dir / "groundtruth_workspace"):
            d.mkdir(parents=True, exist_ok=True)
        (self.db / "products.json").write_text(json.dumps(self.products, indent=1))
        (self.task_dir / "groundtruth_workspace" / "alerts.json").write_text(json.dumps(self.truth, indent=1))
        (self.fs_root / "stock_policy.md").write_text(POLICY)
        (self.mail_dir / "sent.jsonl").write_text("")
        prompt = (
            "You manage inventory for our WooCommerce store. Read stock_policy.md in the workspace, find every "
            f"product that is low on stock ({len(self.products)} products in the store) and email the alerts the "
            "policy requires. When you are done, call claim_done."
        )
        functions = [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": f"[{SCHEMAS[n][0]}] {SCHEMAS[n][1]}",
                    "parameters": {"type": "object", "properties": SCHEMAS[n][2], "required": SCHEMAS[n][3]},
                },
            }
            for n in self.tools
        ]
        return prompt, functions

    def call_tool(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolStep:
        _server, _desc, props, required = SCHEMAS[name]
        missing = [k for k in required if k not in arguments]
        unknown = [k for k in arguments if k not in props]
        if missing or unknown:
            return ToolStep(f"Error: invalid arguments for {name}: missing {missing}, unexpected {unknown}")
        for key, value in arguments.items():
            want = props[key]["type"]
            if (want == "integer" and (not isinstance(value, int) or isinstance(value, bool))) or (
                want == "string" and not isinstance(value, str)
            ):
                return ToolStep(f"Error: argument '{key}' of {name} must be a {want}, got {json.dumps(value)}")
        return self.tools[name](**arguments)

    def agent_workspace(self) -> Path | None:
        return self.fs_root

    def reference_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """List every product page (100 per page), read the policy, one alert per low SKU, claim_done."""
        by_sku = {p["sku"]: p for p in self.products}
        pages = max(1, -(-len(self.products) // 100))
        calls: list[tuple[str, dict[str, Any]]] = [
            ("woocommerce_list_products", {"page": i + 1, "per_page": 100}) for i in range(pages)
        ]
        calls.append(("filesystem_read_file", {"path": "stock_policy.md"}))
        for a in self.truth["alerts"]:
            p = by_sku[a["sku"]]
            calls.append(
                (
                    "email_send_email",
                    {
                        "to": a["to"],
                        "subject": f"Low stock alert: {a['sku']}",
                        "body": (
                            f"{p['name']}: stock_quantity {p['stock_quantity']} < stock_threshold "
                            f"{p['stock_threshold']}."
                        ),
                    },
                )
            )
        calls.append(("claim_done_claim_done", {}))
        return calls

    # ------------------------------------------------------------------ tools
    def _list_products(self, page: int = 1, per_page: int = 10) -> ToolStep:
        if page < 1 or not 1 <= per_page <= 100:
            return ToolStep(f"Error: page must be >= 1 and per_page in 1..100 (got page={page}, per_page={per_page})")
        items = json.loads((self.db / "products.json").read_text())
        return ToolStep(json.dumps(items[(page - 1) * per_page : page * per_page], ensure_ascii=False))

    def _send_email(self, to: str, subject: str, body: str) -> ToolStep:
        if "@" not in to:
            return ToolStep(f"Error: invalid recipient address '{to}'")
        mail = {"from": self.sender, "to": to, "subject": subject, "body": body}
        with open(self.mail_dir / "sent.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(mail, ensure_ascii=False) + "\n")
        return ToolStep(f"Email sent to {to}.")

    def _read_file(self, path: str) -> ToolStep:
        target = (self.fs_root / path).resolve()
        if target != self.fs_root and self.fs_root not in target.parents:
            return ToolStep(f"Error: access denied - path outside allowed directories: {path}")
        if not target.is_file():
            return ToolStep(f"Error: ENOENT: no such file: {path}")
        return ToolStep(target.read_text(encoding="utf-8", errors="replace"))

    def _python(self, code: str) -> ToolStep:
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", code],
                cwd=self.py_dir,
                capture_output=True,
                text=True,
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            return ToolStep(f"Error: execution timed out after {self.timeout:g} s")
        out = f"=== STDOUT ===\n{proc.stdout}"
        if proc.stderr:
            out += f"\n=== STDERR ===\n{proc.stderr}"
        return ToolStep(out + f"\n=== EXIT CODE: {proc.returncode} ===")

    def _claim_done(self) -> ToolStep:
        lines = (self.mail_dir / "sent.jsonl").read_text(encoding="utf-8").splitlines()
        passed, feedback = synth.evaluate([json.loads(x) for x in lines if x.strip()], self.truth)
        self.feedback = feedback
        return ToolStep("Task completion claimed.", done=True, reward=1.0 if passed else 0.0)
