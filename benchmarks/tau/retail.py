"""Retail tools (docs/tau-bench.md §6; upstream `src/tau2/domains/retail/tools.py`): names,
signatures, checks, error texts (read at run time from upstream, benchmarks/tau/errors.py), DB mutations and quirks
as upstream (unrounded item-change amounts, the multi-item price/options bug of `modify_pending_order_items`,
no refunds recorded for returns/exchanges)."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.tau import retail_models
from benchmarks.tau.errors import error
from benchmarks.tau.toolkit import STR_LIST, Toolkit, s, tool


def E(method: str, n: int, fallback: str, **fields: Any) -> str:
    """Upstream's error text (benchmarks/tau/errors.py), our `fallback` offline."""
    return error("retail", method, n, fallback, **fields)


ORDER_ID = s("Order code including its leading '#' (e.g. '#W0000000').")
USER_ID = s("Customer account id (e.g. 'sara_doe_496').")
PM_ID = s(
    "Payment method that pays or receives the price difference (e.g. 'gift_card_0000000', "
    "'credit_card_0000000'); the user or order details list them."
)
# Harness hint (not upstream), off by default: `benchmark.params.tool_hints: true` appends it to every WRITE tool.
CONFIRM = " Before calling it, list the action details to the user and obtain an explicit confirmation (yes)."
NEW_ITEM_IDS = s(
    "The new item ids, each such as '1008292230', in the same order as item_ids; each new item must "
    "be of the same product as the item it replaces.",
    STR_LIST,
)


def item_ids(verb: str) -> dict:
    return s(f"Ids of the items being {verb} (e.g. '1008292230'); an id may repeat.", STR_LIST)


ADDR = dict(
    address1=s("Street line (e.g. '123 Main St')."),
    address2=s("Extra address line, may be empty (e.g. 'Apt 1')."),
    city=s("City name (e.g. 'San Francisco')."),
    state=s("State or region code (e.g. 'CA')."),
    country=s("Country name (e.g. 'USA')."),
    zip=s("Postal code (e.g. '12345')."),
)


class RetailTools(Toolkit):
    DOMAIN = "retail"
    ORDER = (
        "calculate",
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "find_user_id_by_name_zip",
        "find_user_id_by_email",
        "get_order_details",
        "get_product_details",
        "get_item_details",
        "get_user_details",
        "list_all_product_types",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
        "transfer_to_human_agents",
    )
    HINTS = {
        name: (None, CONFIRM)
        for name in (
            "cancel_pending_order",
            "exchange_delivered_order_items",
            "modify_pending_order_address",
            "modify_pending_order_items",
            "modify_pending_order_payment",
            "modify_user_address",
            "return_delivered_order_items",
        )
    }

    # -- lookups
    def _order(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.db["orders"]:
            raise ValueError(E("_get_order", 0, "No order with this id"))
        return self.db["orders"][order_id]

    def _user(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.db["users"]:
            raise ValueError(E("_get_user", 0, "No user with this id"))
        return self.db["users"][user_id]

    def _product(self, product_id: str) -> dict[str, Any]:
        if product_id not in self.db["products"]:
            raise ValueError(E("_get_product", 0, "No product with this id"))
        return self.db["products"][product_id]

    def _variant(self, product_id: str, item_id: str) -> dict[str, Any]:
        product = self._product(product_id)
        if item_id not in product["variants"]:
            raise ValueError(E("_get_variant", 0, "No such variant of this product"))
        return product["variants"][item_id]

    def _method(self, user_id: str, method_id: str) -> dict[str, Any]:
        user = self._user(user_id)
        if method_id not in user["payment_methods"]:
            raise ValueError(E("_get_payment_method", 0, "The user has no such payment method"))
        return user["payment_methods"][method_id]

    @staticmethod
    def _check_counts(order: dict[str, Any], item_ids: list, error: tuple[str, int, str]) -> None:
        """Each id may occur in `item_ids` at most as often as in the order (`error`: the upstream
        method, position and our fallback of the message, `{item_id}` filled)."""
        held = [i["item_id"] for i in order["items"]]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                raise ValueError(E(*error, item_id=item_id))

    def _price_diff(
        self, order: dict[str, Any], item_ids: list, new_item_ids: list, *, distinct: bool
    ) -> tuple[Any, dict[str, Any] | None]:
        """Σ (new variant price − old item price) from int 0, unrounded, and the last new variant;
        each new id must be an available variant of its old item's product."""
        diff, variant = 0, None
        for item_id, new_id in zip(item_ids, new_item_ids):
            if distinct and item_id == new_id:
                raise ValueError(
                    E("modify_pending_order_items", 3, "Each new item id must differ from the item it replaces")
                )
            item = self._first_item(order, item_id)
            variant = self._variant(item["product_id"], new_id)
            if not variant["available"]:
                raise ValueError(
                    E(
                        "modify_pending_order_items",
                        5,
                        "New item {new_item_id} does not exist or is unavailable",
                        new_item_id=new_id,
                    )
                )
            diff += variant["price"] - item["price"]
        return diff, variant

    @staticmethod
    def _first_item(order: dict[str, Any], item_id: str) -> dict[str, Any]:
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise ValueError(E("modify_pending_order_items", 4, "No item {item_id} in this order", item_id=item_id))
        return item

    # -- READ
    @tool(
        "READ",
        "Look up a customer's account id from their email address; an unknown email gives an error.",
        email=s("Customer email address (e.g. 'someone@example.com')."),
    )
    def find_user_id_by_email(self, email: str) -> str:
        for uid, user in self.db["users"].items():
            if user["email"].lower() == email.lower():
                return uid
        raise ValueError(E("find_user_id_by_email", 0, "No user with this email"))

    @tool(
        "READ",
        "Look up a customer's account id from their name and postal code; an unknown customer gives an "
        "error. Prefer the email lookup; use this one when the email is unknown or finds nobody.",
        first_name=s("Customer given name (e.g. 'John')."),
        last_name=s("Customer family name (e.g. 'Doe')."),
        zip=s("Customer postal code (e.g. '12345')."),
    )
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for uid, user in self.db["users"].items():
            if (
                user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip
            ):
                return uid
        raise ValueError(E("find_user_id_by_name_zip", 0, "No user with this name and postal code"))

    @tool("READ", "Look up one order: status, items, address, payments and fulfilments.", order_id=ORDER_ID)
    def get_order_details(self, order_id: str) -> dict[str, Any]:
        return retail_models.order_view(self._order(order_id))

    @tool(
        "READ",
        "Look up a product and all of its item variants with price and availability.",
        product_id=s("Product id (e.g. '6086499569'), not to be confused with an item id."),
    )
    def get_product_details(self, product_id: str) -> dict[str, Any]:
        return retail_models.product_view(self._product(product_id))

    @tool(
        "READ",
        "Get the inventory details of an item (one variant of a product).",
        item_id=s("Item id (e.g. '6086499569'), not to be confused with a product id."),
    )
    def get_item_details(self, item_id: str) -> dict[str, Any]:
        for product in self.db["products"].values():
            if item_id in product["variants"]:
                return retail_models.variant_view(product["variants"][item_id])
        raise ValueError(E("_get_item", 0, "No item with this id"))

    @tool("READ", "Look up a customer profile: name, address, email, payment methods and order codes.", user_id=USER_ID)
    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return retail_models.user_view(self._user(user_id))

    @tool(
        "READ",
        "Map every product type of the store (50 in all) to its product id; each product has several "
        "item variants with their own ids and options.",
    )
    def list_all_product_types(self) -> str:
        return json.dumps({p["name"]: p["product_id"] for p in self.db["products"].values()}, sort_keys=True)

    # -- WRITE
    @tool(
        "WRITE",
        "Cancel an order that is still pending (processed or delivered orders cannot be cancelled). The "
        "money goes back to the original payment method, at once for gift cards and within 5-7 business days "
        "otherwise.",
        order_id=ORDER_ID,  # `reason: str` upstream (not a Literal): no enum in the schema (§4)
        reason=s("Why the order is cancelled: 'no longer needed' or 'ordered by mistake'."),
    )
    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ValueError(E("cancel_pending_order", 0, "Only a pending order can be cancelled"))
        if reason not in retail_models.CANCEL_REASONS:
            raise ValueError(
                E("cancel_pending_order", 1, "The reason must be 'no longer needed' or 'ordered by mistake'")
            )
        refunds = []
        for p in order["payment_history"]:
            refunds.append(retail_models.payment("refund", p["amount"], p["payment_method_id"]))
            method = self._method(order["user_id"], p["payment_method_id"])
            if method["source"] == "gift_card":  # gift cards are refunded at once
                method["balance"] = round(method["balance"] + p["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return retail_models.order_view(order)

    @tool(
        "WRITE",
        "Swap items of a delivered order for other variants of the same products; a delivered order "
        "allows one return or exchange only.",
        order_id=ORDER_ID,
        item_ids=item_ids("exchanged"),
        new_item_ids=NEW_ITEM_IDS,
        payment_method_id=PM_ID,
    )
    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list, new_item_ids: list, payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError(E("exchange_delivered_order_items", 0, "Only a delivered order can be exchanged"))
        self._check_counts(
            order,
            item_ids,
            ("exchange_delivered_order_items", 1, "Item {item_id} is listed more often than the order holds it."),
        )
        if len(item_ids) != len(new_item_ids):
            raise ValueError(
                E("exchange_delivered_order_items", 2, "item_ids and new_item_ids must have the same length.")
            )
        diff = round(self._price_diff(order, item_ids, new_item_ids, distinct=False)[0], 2)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise ValueError(
                E("exchange_delivered_order_items", 5, "The gift card balance does not cover the price difference")
            )
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff
        return retail_models.order_view(order)

    @tool("WRITE", "Change where a pending order will be shipped.", order_id=ORDER_ID, **ADDR)
    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict[str, Any]:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ValueError(E("modify_pending_order_address", 0, "Only a pending order can be modified"))
        order["address"] = retail_models.address(
            retail_models.UserAddress,
            address1=address1,
            address2=address2,
            city=city,
            state=state,
            country=country,
            zip=zip,
        )
        return retail_models.order_view(order)

    @tool(
        "WRITE",
        "Switch items of a pending order to other variants of the same products; allowed once per order.",
        order_id=ORDER_ID,
        item_ids=item_ids("modified"),
        new_item_ids=NEW_ITEM_IDS,
        payment_method_id=PM_ID,
    )
    def modify_pending_order_items(
        self, order_id: str, item_ids: list, new_item_ids: list, payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise ValueError(E("modify_pending_order_items", 0, "Only a pending order can be modified"))
        self._check_counts(
            order,
            item_ids,
            ("modify_pending_order_items", 1, "Item {item_id} is listed more often than the order holds it"),
        )
        if len(item_ids) != len(new_item_ids):
            raise ValueError(E("modify_pending_order_items", 2, "item_ids and new_item_ids must have the same length"))
        diff, variant = self._price_diff(order, item_ids, new_item_ids, distinct=True)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise ValueError(E("modify_pending_order_items", 6, "The gift card balance does not cover the new items"))
        order["payment_history"].append(
            retail_models.payment("payment" if diff > 0 else "refund", abs(diff), payment_method_id)
        )
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - diff, 2)
        for item_id, new_id in zip(item_ids, new_item_ids):
            item = self._first_item(order, item_id)
            item["item_id"] = new_id
            # Upstream bug (reproduced, docs/tau-bench.md §6): every modified item takes the price and options of the
            # LAST validated new variant; the gold DBs of retail tasks 20, 21, 36, 37, 100 depend on it.
            assert variant is not None  # the last validated new variant (item_ids is not empty here)
            item["price"] = variant["price"]
            item["options"] = variant["options"]
        order["status"] = "pending (item modified)"
        return retail_models.order_view(order)

    @tool(
        "WRITE",
        "Pay a pending order with a different payment method.",
        order_id=ORDER_ID,
        payment_method_id=s(
            "Payment method that pays the order instead (e.g. 'gift_card_0000000'); it must differ "
            "from the current one."
        ),
    )
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict[str, Any]:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise ValueError(E("modify_pending_order_payment", 0, "Only a pending order can be modified"))
        method = self._method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ValueError(E("modify_pending_order_payment", 1, "A pending order must have exactly one payment"))
        old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
        if old_id == payment_method_id:
            raise ValueError(
                E("modify_pending_order_payment", 2, "The new payment method must differ from the current one")
            )
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise ValueError(E("modify_pending_order_payment", 3, "The gift card balance does not cover the order"))
        history.append(retail_models.payment("payment", amount, payment_method_id))
        history.append(retail_models.payment("refund", amount, old_id))
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - amount, 2)
        old = self._method(order["user_id"], old_id)
        if old["source"] == "gift_card":
            old["balance"] = round(old["balance"] + amount, 2)
        return retail_models.order_view(order)

    @tool("WRITE", "Change the default address stored in a customer profile.", user_id=USER_ID, **ADDR)
    def modify_user_address(
        self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict[str, Any]:
        user = self._user(user_id)
        user["address"] = retail_models.address(
            retail_models.UserAddress,
            address1=address1,
            address2=address2,
            city=city,
            state=state,
            country=country,
            zip=zip,
        )
        return retail_models.user_view(user)

    @tool(
        "WRITE",
        "Start a return of items from a delivered order. The refund goes to the original payment "
        "method or an existing gift card; the order becomes 'return requested' and the customer is emailed return "
        "instructions.",
        order_id=ORDER_ID,
        item_ids=item_ids("returned"),
        payment_method_id=s(
            "Payment method that receives the refund: the original one or a gift card (e.g. 'gift_card_0000000')."
        ),
    )
    def return_delivered_order_items(self, order_id: str, item_ids: list, payment_method_id: str) -> dict[str, Any]:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError(E("return_delivered_order_items", 0, "Only a delivered order can be returned"))
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            raise ValueError(E("return_delivered_order_items", 1, "The refund must go to the original payment method"))
        self._check_counts(
            order, item_ids, ("return_delivered_order_items", 2, "An item is listed more often than the order holds it")
        )
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return retail_models.order_view(order)
