"""Synthetic LOCA fixture (docs/pos-benchmarks.md §1.7): a pure-Python `StockAlertLite` family modelled
on WoocommerceStockAlertS2LEnv. Invented products only; no Node, no MCP servers.

- `generate(seed, num_low_stock, num_normal_stock)`: WooCommerce seed products (`id, sku, name,
  category, price, stock_quantity, stock_threshold, supplier{name, supplier_id, contact}`); low
  stock ⇔ `stock_quantity < stock_threshold` [inferred].
- `LENGTH_TABLE`: the §1.2 scaling (num_low_stock / num_normal_stock per length) with small values.
- `evaluate(...)`: pass iff the sent emails alert exactly the low-stock SKUs, each to its supplier.
- `write_configs(root)`: the fixture's task-configs in the §1.3 schema (both placeholders)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

FAMILY = "StockAlertLiteS2LEnv"
ENV_CLASS = "benchmarks.loca.synth_env.StockAlertLiteS2LEnv"
SEEDS = (42,)  # upstream uses {42, 123, 456, 789, 2024}; one keeps the scripted sweep fast
# §1.2 WoocommerceStockAlert scales 16/24 → 288/800; the fixture mirrors the shape with small values.
# 256k is sized so one product page exceeds the 8000-char artifact threshold.
LENGTH_TABLE: dict[str, dict[str, int]] = {
    "8k": {"num_low_stock": 2, "num_normal_stock": 4},
    "16k": {"num_low_stock": 2, "num_normal_stock": 6},
    "32k": {"num_low_stock": 3, "num_normal_stock": 8},
    "64k": {"num_low_stock": 3, "num_normal_stock": 12},
    "96k": {"num_low_stock": 4, "num_normal_stock": 16},
    "128k": {"num_low_stock": 4, "num_normal_stock": 20},
    "256k": {"num_low_stock": 5, "num_normal_stock": 40},
}
SKU_RE = re.compile(r"SKU-\d{3}-\d{4}")
_ADJ = ("Compact", "Heavy-Duty", "Ergonomic", "Wireless", "Modular", "Stainless", "Foldable", "Smart")
_NOUN = ("Desk Lamp", "Drill", "Kettle", "Router", "Backpack", "Monitor Arm", "Blender", "Tent")
_CATS = ("Home", "Tools", "Kitchen", "Electronics", "Outdoor")
_SUPPLIERS = (("Northwind Supply", "SUP-01"), ("Acme Wholesale", "SUP-02"), ("Blue River Trading", "SUP-03"))


def generate(seed: int, num_low_stock: int, num_normal_stock: int) -> dict[str, Any]:
    """Products (shuffled) and the ground truth {low_stock_skus, alerts: [{sku, to}]}."""
    if num_low_stock < 0 or num_normal_stock < 0:
        raise ValueError("num_low_stock and num_normal_stock must be >= 0")
    rng = random.Random(seed)
    products: list[dict[str, Any]] = []
    for i in range(num_low_stock + num_normal_stock):
        low = i < num_low_stock
        threshold = rng.randint(10, 40)
        qty = rng.randint(0, threshold - 1) if low else rng.randint(threshold, threshold + 200)
        sup_name, sup_id = _SUPPLIERS[rng.randrange(len(_SUPPLIERS))]
        products.append(
            {
                "sku": f"SKU-{seed % 1000:03d}-{i + 1:04d}",
                "name": f"{rng.choice(_ADJ)} {rng.choice(_NOUN)}",
                "category": rng.choice(_CATS),
                "price": round(rng.uniform(5, 400), 2),
                "stock_quantity": qty,
                "stock_threshold": threshold,
                "supplier": {
                    "name": sup_name,
                    "supplier_id": sup_id,
                    "contact": f"orders@{sup_name.split()[0].lower()}.example.com",
                },
            }
        )
    rng.shuffle(products)
    for n, p in enumerate(products, start=1):
        p["id"] = 1000 + n
    products = [{"id": p.pop("id"), **p} for p in products]
    low_items = [p for p in products if p["stock_quantity"] < p["stock_threshold"]]
    return {
        "products": products,
        "low_stock_skus": sorted(p["sku"] for p in low_items),
        "alerts": [
            {"sku": p["sku"], "to": p["supplier"]["contact"]} for p in sorted(low_items, key=lambda p: p["sku"])
        ],
    }


def evaluate(sent: list[dict[str, Any]], truth: dict[str, Any]) -> tuple[bool, str]:
    """Pass iff every low-stock SKU was alerted to its supplier contact and no email names any
    other SKU or goes to the wrong address. Returns (passed, feedback)."""
    want = {a["sku"]: a["to"] for a in truth["alerts"]}
    got: dict[str, set[str]] = {}
    for mail in sent:
        to = str(mail.get("to", "")).strip().lower()
        for sku in set(SKU_RE.findall(f"{mail.get('subject', '')}\n{mail.get('body', '')}")):
            got.setdefault(sku, set()).add(to)
    extra = sorted(set(got) - set(want))
    missing = sorted(set(want) - set(got))
    wrong_to = sorted(s for s in set(got) & set(want) if got[s] != {want[s].lower()})
    if extra or missing or wrong_to:
        return False, f"missing={missing} extra={extra} wrong_recipient={wrong_to}"
    return True, f"all {len(want)} low-stock SKUs alerted to their suppliers"


def fixture_config(seed: int, length: str) -> dict[str, Any]:
    """One §1.3 configuration entry of the fixture (both placeholders used)."""
    return {
        "name": FAMILY,
        "env_class": ENV_CLASS,
        "env_params": {"seed": seed, **LENGTH_TABLE[length]},
        "mcp_servers": {
            "woocommerce": {
                "enabled": True,
                "type": "woocommerce",
                "params": {"data_dir": "{task_workspace}/local_db/woocommerce"},
            },
            "email": {
                "enabled": True,
                "type": "email",
                "params": {
                    "data_dir": "{task_workspace}/local_db/emails",
                    "email": "inventory@shop.example.com",
                    "password": "fixture-only",
                },
            },
            "filesystem": {"enabled": True, "type": "filesystem", "params": {"workspace_path": "{agent_workspace}"}},
            "python_execute": {
                "enabled": True,
                "type": "python_execute",
                "params": {"workspace_dir": "{agent_workspace}"},
            },
            "memory": {
                "enabled": False,
                "type": "memory",
                "params": {"memory_file_path": "{agent_workspace}/memory.json"},
            },
            "claim_done": {"enabled": True, "type": "claim_done", "params": {}},
        },
    }


def write_configs(root: Path) -> list[Path]:
    """Write task-configs/final_<length>_set_config.json for every length under `root`."""
    from benchmarks.loca.configs import LENGTHS, config_path

    paths = []
    for length in LENGTHS:
        path = config_path(root, length)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"configurations": [fixture_config(s, length) for s in SEEDS]}, indent=1) + "\n")
        paths.append(path)
    return paths


if __name__ == "__main__":  # regenerate the checked-in fixture configs
    from benchmarks.loca.configs import FIXTURE_ROOT

    print(*write_configs(FIXTURE_ROOT), sep="\n")
