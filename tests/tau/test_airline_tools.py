"""Airline tools: schemas, dispatch errors and the quirks of docs/tau-bench.md §4–§5 not covered by
the gold replay (send_certificate, search_onestop_flight, get_flight_status, list_all_airports,
certificate removal, cabin-change repricing, no refund on cancel, assignment without coercion)."""

from __future__ import annotations

import json

import pytest

from benchmarks.tau.airline import AirlineTools
from benchmarks.tau.toolkit import GUARD_TEXT, db_hash
from tests.tau.helpers import domain, run, upstream_error

USER = "mei_hernandez_8984"  # gold member with a gift card (98.0) and two certificates (250.0)


@pytest.fixture
def tools() -> AirlineTools:
    return AirlineTools(domain("airline").fresh_db())


def test_schemas_follow_official_names_order_and_types():
    specs = AirlineTools.specs()
    assert [s.name for s in specs] == list(AirlineTools.ORDER) and len(specs) == 14
    kinds = [AirlineTools.tool_type(s.name) for s in specs]
    assert (kinds.count("READ"), kinds.count("WRITE"), kinds.count("GENERIC")) == (6, 6, 2)
    book = next(s for s in specs if s.name == "book_reservation").parameters
    assert (
        book["required"]
        == list(book["properties"])
        == [
            "user_id",
            "origin",
            "destination",
            "flight_type",
            "cabin",
            "flights",
            "passengers",
            "payment_methods",
            "total_baggages",
            "nonfree_baggages",
            "insurance",
        ]
    )
    assert book["properties"]["cabin"]["enum"] == ["business", "economy", "basic_economy"]
    assert book["properties"]["payment_methods"]["items"]["properties"]["amount"]["type"] == "integer"
    assert specs[0].openai_schema()["type"] == "function"


def test_dispatch_errors_are_observations(tools):
    assert tools.execute("fly_me", {}) == ("Error: Tool 'fly_me' not found.", True)
    content, error = tools.execute("get_user_details", {})
    assert error and "missing 1 required positional argument: 'user_id'" in content
    content, error = tools.execute("get_user_details", {"user_id": USER, "extra": 1})
    assert error and "unexpected keyword argument 'extra'" in content
    content, error = tools.execute("get_user_details", {"user_id": 42})
    assert (content, error) == (upstream_error("airline", "_get_user", user_id=42), True)
    content, error = tools.execute(
        "update_reservation_passengers",
        {"reservation_id": "R9QDGB", "passengers": [{"first_name": "A", "last_name": "B", "dob": 1999}] * 3},
    )
    assert error and content.startswith("Error: 1 validation error for Passenger")


def test_calculate_and_transfer(tools):
    assert run(tools, "calculate", expression="10/4") == "2.5"
    assert run(tools, "calculate", expression="2**3") == "8.0"
    assert run(tools, "calculate", expression="(1200 + 0.004) * 1") == "1200.0"
    assert tools.execute("calculate", {"expression": "1/0"}) == ("Error: division by zero", True)
    assert tools.execute("calculate", {"expression": "__import__('os')"}) == (
        upstream_error("airline", "calculate"),
        True,
    )
    assert run(tools, "calculate", expression="2 ** -1 + 7 // 2") == "3.5"
    assert tools.execute("calculate", {"expression": "9**9**9"}) == ("Error: " + GUARD_TEXT, True)
    assert tools.execute("calculate", {"expression": "2 +"})[0].startswith("Error: invalid syntax")
    assert run(tools, "transfer_to_human_agents", summary="x") == "Transfer successful"


def test_reads(tools):
    airports = json.loads(run(tools, "list_all_airports"))
    assert (
        len(airports) == 20
        and airports[0] == {"iata": "SFO", "city": "San Francisco"}
        and airports[-1]["iata"] == "LGA"
    )
    assert run(tools, "get_flight_status", flight_number="HAT002", date="2024-05-20") == "available"
    assert tools.execute("get_flight_status", {"flight_number": "HAT999", "date": "2024-05-20"}) == (
        upstream_error("airline", "_get_flight", flight_number="HAT999"),
        True,
    )
    assert tools.execute("get_flight_status", {"flight_number": "HAT002", "date": "2024-06-01"})[0] == upstream_error(
        "airline", "_get_flight_instance", flight_number="HAT002", date="2024-06-01"
    )
    res = run(tools, "get_reservation_details", reservation_id="R9QDGB")
    assert res.endswith('"insurance": "yes", "status": null}')  # model order, status materialised
    assert res.index('"flight_number"') < res.index('"origin": "LAX", "destination": "SFO"')


def test_search_onestop_next_day_leg(tools):
    pairs = json.loads(run(tools, "search_onestop_flight", origin="LGA", destination="SFO", date="2024-05-20"))
    leg1, leg2 = next(p for p in pairs if p[0]["flight_number"] == "HAT002")
    assert leg1["scheduled_arrival_time_est"] == "01:30:00+1" and leg1["date"] == "2024-05-20"
    assert leg2["date"] == "2024-05-21" and leg2["origin"] == "PHX" and leg2["status"] == "available"
    assert all(p[1]["scheduled_departure_time_est"] >= p[0]["scheduled_arrival_time_est"] for p in pairs)
    direct = json.loads(run(tools, "search_direct_flight", origin="LGA", destination="PHX", date="2024-05-20"))
    assert direct and all(f["date"] is None for f in direct)
    assert list(direct[0]) == [
        "flight_number",
        "origin",
        "destination",
        "status",
        "scheduled_departure_time_est",
        "scheduled_arrival_time_est",
        "date",
        "available_seats",
        "prices",
    ]


def test_book_with_certificate_and_gift_card(tools):
    db = tools.db
    before = db_hash(db)
    args = dict(
        user_id=USER,
        origin="LGA",
        destination="PHX",
        flight_type="one_way",
        cabin="economy",
        flights=[{"flight_number": "HAT002", "date": "2024-05-20"}],
        passengers=[{"first_name": "Mei", "last_name": "Hernandez", "dob": "1981-01-11"}],
        payment_methods=[
            {"payment_id": "certificate_7502997", "amount": 100.0},
            {"payment_id": "gift_card_5309492", "amount": 70},
        ],
        total_baggages=1,
        nonfree_baggages=0,
        insurance="no",
    )
    assert tools.execute("book_reservation", args) == (
        upstream_error("airline", "book_reservation", 4, total_price=175, total_payment=170),
        True,
    )
    assert db_hash(db) == before  # first failure aborts with the DB untouched
    args["payment_methods"][1]["amount"] = 75
    res = json.loads(run(tools, "book_reservation", **args))
    assert res["reservation_id"] == "HATHAT" and res["created_at"] == "2024-05-15T15:00:00"
    assert res["payment_history"] == [
        {"payment_id": "certificate_7502997", "amount": 100},
        {"payment_id": "gift_card_5309492", "amount": 75},
    ]
    assert isinstance(db["reservations"]["HATHAT"]["payment_history"][0]["amount"], int)  # 100.0 coerced to int
    user = db["users"][USER]
    assert "certificate_7502997" not in user["payment_methods"]  # removed, unused 150 lost
    assert user["payment_methods"]["gift_card_5309492"]["amount"] == 23.0
    assert db["flights"]["HAT002"]["dates"]["2024-05-20"]["available_seats"]["economy"] == 11
    assert user["reservations"][-1] == "HATHAT"
    args["payment_methods"] = [{"payment_id": "gift_card_5309492", "amount": 175}]
    assert tools.execute("book_reservation", args) == (
        upstream_error("airline", "book_reservation", 3, payment_id="gift_card_5309492"),
        True,
    )


def test_cancel_reservation_records_refunds_only(tools):
    seats = json.dumps(tools.db["flights"]["HAT034"]["dates"]["2024-05-28"])
    res = json.loads(run(tools, "cancel_reservation", reservation_id="R9QDGB"))
    assert res["status"] == "cancelled" and res["payment_history"][-1] == {
        "payment_id": "credit_card_6082923",
        "amount": -1911,
    }
    assert json.dumps(tools.db["flights"]["HAT034"]["dates"]["2024-05-28"]) == seats  # no seat release
    res = json.loads(run(tools, "cancel_reservation", reservation_id="R9QDGB"))  # no already-cancelled check
    assert [p["amount"] for p in res["payment_history"]] == [1911, -1911, -1911, 1911]


def test_update_flights_cabin_change_reprices_every_segment(tools):
    db = tools.db
    old = db["reservations"]["R9QDGB"]
    segs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in old["flights"]]
    same = json.loads(
        run(
            tools,
            "update_reservation_flights",
            reservation_id="R9QDGB",
            cabin="economy",
            flights=segs,
            payment_id="credit_card_6082923",
        )
    )
    assert len(same["payment_history"]) == 1  # price 0: no entry
    new_prices = [db["flights"][s["flight_number"]]["dates"][s["date"]]["prices"]["business"] for s in segs]
    diff = (sum(new_prices) - sum(f["price"] for f in old["flights"])) * 3
    res = json.loads(
        run(
            tools,
            "update_reservation_flights",
            reservation_id="R9QDGB",
            cabin="business",
            flights=segs,
            payment_id="credit_card_6082923",
        )
    )
    assert res["cabin"] == "business" and [f["price"] for f in res["flights"]] == new_prices
    assert res["payment_history"][-1] == {"payment_id": "credit_card_6082923", "amount": diff}
    assert tools.execute(
        "update_reservation_flights",
        {"reservation_id": "R9QDGB", "cabin": "economy", "flights": segs, "payment_id": "certificate_7502997"},
    ) == (upstream_error("airline", "_payment_for_update", 1), True)


def test_update_baggages_assigns_as_passed_and_charges_gift_card(tools):
    res = json.loads(
        run(
            tools,
            "update_reservation_baggages",
            reservation_id="R9QDGB",
            total_baggages=2,
            nonfree_baggages=1,
            payment_id="gift_card_5309492",
        )
    )
    assert res["payment_history"][-1] == {"payment_id": "gift_card_5309492", "amount": 50}
    assert tools.db["users"][USER]["payment_methods"]["gift_card_5309492"]["amount"] == 48.0
    res = json.loads(
        run(
            tools,
            "update_reservation_baggages",
            reservation_id="R9QDGB",
            total_baggages=2.0,
            nonfree_baggages=1,
            payment_id="credit_card_6082923",
        )
    )
    assert res["total_baggages"] == 2.0 and isinstance(tools.db["reservations"]["R9QDGB"]["total_baggages"], float)
    assert len(res["payment_history"]) == 2  # price 0: nothing appended


def test_send_certificate(tools):
    assert (
        run(tools, "send_certificate", user_id=USER, amount=100)
        == f"Certificate certificate_3221322 added to user {USER} with amount 100."
    )
    methods = tools.db["users"][USER]["payment_methods"]
    assert list(methods)[-1] == "certificate_3221322" and methods["certificate_3221322"]["amount"] == 100.0
    assert isinstance(methods["certificate_3221322"]["amount"], float)
    assert run(tools, "send_certificate", user_id=USER, amount=50.0).endswith("with amount 50.0.")
    run(tools, "send_certificate", user_id=USER, amount=1)
    assert tools.execute("send_certificate", {"user_id": USER, "amount": 1}) == (
        upstream_error("airline", "send_certificate"),
        True,
    )
