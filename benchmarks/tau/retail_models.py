"""Retail record shapes: pydantic models for constructed objects (coercion and validation as
upstream) and model-ordered views for tool output (docs/tau-bench.md §4, §6; upstream
`src/tau2/domains/retail/data_model.py`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from benchmarks.tau.toolkit import ADDRESS, identity_view, methods_view, pick

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
ITEM = ("name", "product_id", "item_id", "price", "options")
PAYMENT = ("transaction_type", "amount", "payment_method_id")
ORDER_TAIL = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)
METHOD = {
    "credit_card": ("source", "id", "brand", "last_four"),
    "paypal": ("source", "id"),
    "gift_card": ("source", "id", "balance"),
}


class UserAddress(BaseModel):
    """An address built from tool arguments (all fields str; pydantic does not coerce int → str).
    Upstream builds `UserAddress` for both order and user addresses (the name shows in errors)."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


def address(model: type[UserAddress], **fields: Any) -> dict[str, Any]:
    return pick(model(**fields).model_dump(), ADDRESS)


def payment(transaction_type: str, amount: Any, payment_method_id: str) -> dict[str, Any]:
    """A new `OrderPayment` (amount: float, coerced on construction)."""
    return {"transaction_type": transaction_type, "amount": float(amount), "payment_method_id": payment_method_id}


def variant_view(v: dict[str, Any]) -> dict[str, Any]:
    return pick(v, ("item_id", "options", "available", "price"))


def product_view(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": p["name"],
        "product_id": p["product_id"],
        "variants": {k: variant_view(v) for k, v in p["variants"].items()},
    }


def order_view(o: dict[str, Any]) -> dict[str, Any]:
    out = pick(o, ("order_id", "user_id"))
    out["address"] = pick(o["address"], ADDRESS)
    out["items"] = [pick(i, ITEM) for i in o["items"]]
    out["status"] = o["status"]
    out["fulfillments"] = [pick(f, ("tracking_id", "item_ids")) for f in o["fulfillments"]]
    out["payment_history"] = [pick(p, PAYMENT) for p in o["payment_history"]]
    out.update(pick(o, ORDER_TAIL))
    return out


def user_view(u: dict[str, Any]) -> dict[str, Any]:
    return {**identity_view(u), "payment_methods": methods_view(u, METHOD), "orders": list(u["orders"])}
