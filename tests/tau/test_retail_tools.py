"""Retail tools: schemas and every WRITE tool's checks and mutations (docs/tau-bench.md §6), above all
the quirks: unrounded item-change amounts, the last-variant price/options bug, no recorded refunds
for returns/exchanges, gift-card refunds rounded to cents."""

from __future__ import annotations

import json

import pytest

from benchmarks.tau.retail import RetailTools
from benchmarks.tau.toolkit import db_hash
from tests.tau.helpers import domain, run, upstream_error

PENDING = "#W6779827"  # ethan_lopez_6291, paid 4079.45 by gift_card_7219486 (balance 49.0)
GIFT, CARD = "gift_card_7219486", "credit_card_9789590"
DELIVERED = "#W6304490"  # omar_khan_2363, paid by credit_card_4420174


@pytest.fixture
def tools() -> RetailTools:
    return RetailTools(domain("retail").fresh_db())


def test_schemas():
    specs = RetailTools.specs()
    assert [s.name for s in specs] == list(RetailTools.ORDER) and len(specs) == 16
    kinds = [RetailTools.tool_type(s.name) for s in specs]
    assert (kinds.count("READ"), kinds.count("WRITE"), kinds.count("GENERIC")) == (7, 7, 2)
    items = next(s for s in specs if s.name == "modify_pending_order_items").parameters
    assert items["required"] == ["order_id", "item_ids", "new_item_ids", "payment_method_id"]
    assert items["properties"]["item_ids"]["type"] == "array"


def test_reads(tools):
    assert run(tools, "find_user_id_by_email", email="NOAH.BROWN7922@example.com") == "noah_brown_6181"
    assert tools.execute("find_user_id_by_email", {"email": "nobody@example.com"}) == (
        upstream_error("retail", "find_user_id_by_email"),
        True,
    )
    assert (
        run(tools, "find_user_id_by_name_zip", first_name="noah", last_name="BROWN", zip="80279") == "noah_brown_6181"
    )
    types = run(tools, "list_all_product_types")
    parsed = json.loads(types)
    assert len(parsed) == 50 and list(parsed) == sorted(parsed) and types == json.dumps(parsed, sort_keys=True)
    item = json.loads(run(tools, "get_item_details", item_id="4422467033"))
    assert list(item) == ["item_id", "options", "available", "price"] and item["price"] == 483.47
    assert tools.execute("get_item_details", {"item_id": "7233192239"}) == (upstream_error("retail", "_get_item"), True)
    order = json.loads(run(tools, "get_order_details", order_id=PENDING))
    assert list(order)[-7:] == [
        "cancel_reason",
        "exchange_items",
        "exchange_new_items",
        "exchange_payment_method_id",
        "exchange_price_difference",
        "return_items",
        "return_payment_method_id",
    ]
    assert order["cancel_reason"] is None


def test_modify_items_unrounded_amount_and_last_variant_bug(tools):
    db = tools.db
    args = dict(
        order_id=PENDING,
        item_ids=["7896397433", "3379843752"],
        new_item_ids=["4422467033", "3709608322"],
        payment_method_id=GIFT,
    )
    order = json.loads(run(tools, "modify_pending_order_items", **args))
    diff = 0 + (483.47 - 457.81) + (2744.7 - 3203.76)
    assert order["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": abs(diff),
        "payment_method_id": GIFT,
    }
    assert db["users"]["ethan_lopez_6291"]["payment_methods"][GIFT]["balance"] == round(49.0 - diff, 2)
    espresso = db["products"]["4354588079"]["variants"]["3709608322"]
    dumbbell = next(i for i in order["items"] if i["item_id"] == "4422467033")
    assert dumbbell["name"] == "Dumbbell Set" and dumbbell["product_id"] == "7233192239"
    assert dumbbell["price"] == espresso["price"] and dumbbell["options"] == espresso["options"]  # upstream bug
    assert order["status"] == "pending (item modified)"
    assert tools.execute("modify_pending_order_items", args) == (
        upstream_error("retail", "modify_pending_order_items"),
        True,
    )


def test_modify_items_checks(tools):
    before = db_hash(tools.db)
    base = dict(order_id=PENDING, payment_method_id=CARD)
    cases = [
        (
            dict(item_ids=["7896397433", "7896397433"], new_item_ids=["4422467033", "2444431651"]),
            upstream_error("retail", "modify_pending_order_items", 1, item_id="7896397433"),
        ),
        (dict(item_ids=["7896397433"], new_item_ids=[]), upstream_error("retail", "modify_pending_order_items", 2)),
        (
            dict(item_ids=["7896397433"], new_item_ids=["7896397433"]),
            upstream_error("retail", "modify_pending_order_items", 3),
        ),
        (dict(item_ids=["7896397433"], new_item_ids=["3709608322"]), upstream_error("retail", "_get_variant")),
        (
            dict(item_ids=["7896397433"], new_item_ids=["8140269513"]),
            upstream_error("retail", "modify_pending_order_items", 5, new_item_id="8140269513"),
        ),
        (
            dict(item_ids=["7896397433"], new_item_ids=["2444431651"], payment_method_id=GIFT),
            upstream_error("retail", "modify_pending_order_items", 6),
        ),
    ]
    for extra, msg in cases:
        assert tools.execute("modify_pending_order_items", {**base, **extra}) == (msg, True)
    assert db_hash(tools.db) == before


def test_cancel_pending_order_refunds_gift_card(tools):
    assert tools.execute("cancel_pending_order", {"order_id": PENDING, "reason": "too expensive"}) == (
        upstream_error("retail", "cancel_pending_order", 1),
        True,
    )
    order = json.loads(run(tools, "cancel_pending_order", order_id=PENDING, reason="no longer needed"))
    assert order["status"] == "cancelled" and order["cancel_reason"] == "no longer needed"
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": GIFT}
    assert tools.db["users"]["ethan_lopez_6291"]["payment_methods"][GIFT]["balance"] == round(49.0 + 4079.45, 2)
    assert tools.execute("cancel_pending_order", {"order_id": PENDING, "reason": "no longer needed"}) == (
        upstream_error("retail", "cancel_pending_order", 0),
        True,
    )


def test_modify_payment(tools):
    assert tools.execute("modify_pending_order_payment", {"order_id": PENDING, "payment_method_id": GIFT}) == (
        upstream_error("retail", "modify_pending_order_payment", 2),
        True,
    )
    order = json.loads(run(tools, "modify_pending_order_payment", order_id=PENDING, payment_method_id=CARD))
    assert order["payment_history"][1:] == [
        {"transaction_type": "payment", "amount": 4079.45, "payment_method_id": CARD},
        {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": GIFT},
    ]
    assert tools.db["users"]["ethan_lopez_6291"]["payment_methods"][GIFT]["balance"] == 4128.45
    assert tools.execute("modify_pending_order_payment", {"order_id": PENDING, "payment_method_id": GIFT}) == (
        upstream_error("retail", "modify_pending_order_payment", 1),
        True,
    )


def test_addresses(tools):
    addr = dict(address1="1 Main St", address2="", city="Austin", state="TX", country="USA", zip="78701")
    order = json.loads(run(tools, "modify_pending_order_address", order_id=PENDING, **addr))
    assert list(order["address"]) == ["address1", "address2", "city", "country", "state", "zip"]
    content, error = tools.execute("modify_pending_order_address", {"order_id": PENDING, **addr, "zip": 78701})
    assert error and content.startswith("Error: 1 validation error for UserAddress")
    assert tools.db["orders"][PENDING]["address"]["zip"] == "78701"
    user = json.loads(run(tools, "modify_user_address", user_id="ethan_lopez_6291", **addr))
    assert user["address"]["city"] == "Austin" and tools.db["orders"]["#W6779827"]["address"]["city"] == "Austin"
    assert tools.execute("modify_pending_order_address", {"order_id": DELIVERED, **addr}) == (
        upstream_error("retail", "modify_pending_order_items"),
        True,
    )


def test_exchange_and_return_delivered(tools):
    db = tools.db
    order = db["orders"][DELIVERED]
    ids = [i["item_id"] for i in order["items"]]
    history = json.dumps(order["payment_history"])
    assert tools.execute(
        "exchange_delivered_order_items",
        {
            "order_id": DELIVERED,
            "item_ids": [ids[0], ids[0]],
            "new_item_ids": [ids[0], ids[0]],
            "payment_method_id": "credit_card_4420174",
        },
    ) == (upstream_error("retail", "exchange_delivered_order_items", 1, item_id=ids[0]), True)
    assert tools.execute(
        "return_delivered_order_items", {"order_id": DELIVERED, "item_ids": ids[:1], "payment_method_id": GIFT}
    ) == (upstream_error("retail", "_get_payment_method"), True)
    out = json.loads(
        run(
            tools,
            "exchange_delivered_order_items",
            order_id=DELIVERED,
            item_ids=[ids[1], ids[0]],
            new_item_ids=[ids[1], ids[0]],
            payment_method_id="credit_card_4420174",
        )
    )
    assert out["status"] == "exchange requested" and out["exchange_items"] == sorted([ids[1], ids[0]])
    assert out["exchange_price_difference"] == 0.0 and json.dumps(out["payment_history"]) == history
    assert tools.execute(
        "return_delivered_order_items",
        {"order_id": DELIVERED, "item_ids": ids[:1], "payment_method_id": "credit_card_4420174"},
    ) == (upstream_error("retail", "return_delivered_order_items", 0), True)


def test_return_delivered():
    tools = RetailTools(domain("retail").fresh_db())
    ids = [i["item_id"] for i in tools.db["orders"][DELIVERED]["items"]]
    out = json.loads(
        run(
            tools,
            "return_delivered_order_items",
            order_id=DELIVERED,
            item_ids=[ids[2], ids[0]],
            payment_method_id="credit_card_4420174",
        )
    )
    assert out["status"] == "return requested" and out["return_items"] == sorted([ids[2], ids[0]])
    assert out["return_payment_method_id"] == "credit_card_4420174" and len(out["payment_history"]) == 1


def test_cancel_reason_is_a_plain_string_in_the_schema():
    # Upstream signature `reason: str` (not a Literal): the schema has no enum (§4 "enums for the literal types").
    reason = next(s for s in RetailTools.specs() if s.name == "cancel_pending_order").parameters["properties"]["reason"]
    assert reason["type"] == "string" and "enum" not in reason


def test_pending_like_versus_exactly_pending(tools):
    # §6: items/cancel need status == "pending"; address/payment accept any status containing "pending".
    assert tools.execute("cancel_pending_order", {"order_id": "#W8935389", "reason": "no longer needed"}) == (
        upstream_error("retail", "cancel_pending_order", 0),
        True,
    )  # processed
    run(
        tools,
        "modify_pending_order_items",
        order_id=PENDING,
        item_ids=["7896397433"],
        new_item_ids=["4422467033"],
        payment_method_id=CARD,
    )
    assert tools.db["orders"][PENDING]["status"] == "pending (item modified)"
    for name, args in (
        ("cancel_pending_order", {"reason": "no longer needed"}),
        (
            "modify_pending_order_items",
            {"item_ids": ["4422467033"], "new_item_ids": ["7896397433"], "payment_method_id": CARD},
        ),
    ):
        assert tools.execute(name, {"order_id": PENDING, **args}) == (upstream_error("retail", name, 0), True)
    addr = dict(address1="1 Main St", address2="", city="Austin", state="TX", country="USA", zip="78701")
    assert (
        json.loads(run(tools, "modify_pending_order_address", order_id=PENDING, **addr))["status"]
        == "pending (item modified)"
    )
    # Two payment_history entries now: the payment change is refused by the one-payment rule, not the status.
    assert tools.execute("modify_pending_order_payment", {"order_id": PENDING, "payment_method_id": CARD}) == (
        upstream_error("retail", "modify_pending_order_payment", 1),
        True,
    )


def test_cancel_by_card_and_payment_change_checks(tools):
    card_order = "#W5918442"  # sofia_rossi_8776, one credit-card payment of 1463.7
    methods = json.dumps(tools.db["users"]["sofia_rossi_8776"]["payment_methods"])
    order = json.loads(run(tools, "cancel_pending_order", order_id=card_order, reason="ordered by mistake"))
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 1463.7, "payment_method_id": "credit_card_5051208"},
        {"transaction_type": "refund", "amount": 1463.7, "payment_method_id": "credit_card_5051208"},
    ]
    assert json.dumps(tools.db["users"]["sofia_rossi_8776"]["payment_methods"]) == methods  # refunded outside the DB
    assert tools.execute("modify_pending_order_payment", {"order_id": PENDING, "payment_method_id": "paypal_1"}) == (
        upstream_error("retail", "_get_payment_method"),
        True,
    )


def test_exchange_checks_and_rounding(tools):
    order_id, card, gift = "#W4250821", "credit_card_8041020", "gift_card_6052478"  # gift card balance 10.0
    base = {"order_id": order_id, "item_ids": ["5222576926"], "new_item_ids": ["7706410293"]}
    assert tools.execute("exchange_delivered_order_items", {**base, "payment_method_id": gift}) == (
        upstream_error("retail", "exchange_delivered_order_items", 5),
        True,
    )
    assert tools.execute("exchange_delivered_order_items", {**base, "new_item_ids": [], "payment_method_id": card}) == (
        upstream_error("retail", "exchange_delivered_order_items", 2),
        True,
    )
    assert tools.execute(
        "exchange_delivered_order_items", {**base, "new_item_ids": ["9690244451"], "payment_method_id": card}
    ) == (upstream_error("retail", "exchange_delivered_order_items", 4, new_item_id="9690244451"), True)
    # Any method of the user may pay the difference (not only the original); diff rounded to cents.
    out = json.loads(
        run(
            tools,
            "exchange_delivered_order_items",
            order_id=order_id,
            item_ids=["9970989750", "5222576926"],
            new_item_ids=["4602305039", "7706410293"],
            payment_method_id="credit_card_6547060",
        )
    )
    assert out["exchange_price_difference"] == round(0 + (561.05 - 569.43) + (269.16 - 249.95), 2)
    assert out["exchange_new_items"] == ["4602305039", "7706410293"] and out["items"][0]["item_id"] == "5222576926"


def test_return_refund_method_rules():
    order_id = "#W4250821"
    tools = RetailTools(domain("retail").fresh_db())
    assert tools.execute(
        "return_delivered_order_items",
        {"order_id": order_id, "item_ids": ["5222576926"], "payment_method_id": "credit_card_6547060"},
    ) == (upstream_error("retail", "return_delivered_order_items", 1), True)
    assert tools.execute(
        "return_delivered_order_items",
        {"order_id": order_id, "item_ids": ["5222576926", "5222576926"], "payment_method_id": "gift_card_6052478"},
    ) == (upstream_error("retail", "return_delivered_order_items", 2), True)
    out = json.loads(
        run(
            tools,
            "return_delivered_order_items",
            order_id=order_id,
            item_ids=["5222576926"],
            payment_method_id="gift_card_6052478",
        )
    )  # any gift card of the user is accepted
    assert out["return_payment_method_id"] == "gift_card_6052478"
    assert tools.db["users"]["sophia_jackson_6355"]["payment_methods"]["gift_card_6052478"]["balance"] == 10.0
