"""Group Travel Planning tools as pandas queries over the TravelPlanner database (docs/memoryarena.md
§3.2; upstream `tool_schemas.py` + `ToolExecutor`, tables from OSU-NLP-Group/TravelPlanner).

Upstream conventions kept: six tools, all arguments required strings, exact-match filters, tables
read with `read_csv(...).dropna()` then a column subset, output `DataFrame.to_string(index=False)`,
errors as `Error executing <tool>: <msg>`, the accommodation empty-result message that says
"attraction" (upstream bug). [harness choice] Tables load lazily and are cached per path, so a
missing flights table fails only FlightSearch, with a message naming the path."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runners.api import ToolSpec

if TYPE_CHECKING:
    import pandas as pd

FLIGHTS_FILE = "flights/clean_Flights_2022.csv"
TABLES = {
    "restaurants": (
        "restaurants/clean_restaurant_2022.csv",
        ["Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"],
    ),
    "accommodations": (
        "accommodations/clean_accommodations_2022.csv",
        [
            "NAME",
            "price",
            "room type",
            "house_rules",
            "minimum nights",
            "maximum occupancy",
            "review rate number",
            "city",
        ],
    ),
    "attractions": (
        "attractions/attractions.csv",
        ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"],
    ),
}
FLIGHT_COLUMNS = [
    "Flight Number",
    "Price",
    "DepTime",
    "ArrTime",
    "ActualElapsedTime",
    "FlightDate",
    "OriginCityName",
    "DestCityName",
    "Distance",
]
DISTANCE_FILE = "googleDistanceMatrix/distance.csv"
CITY_FILE = "background/citySet_with_states.txt"


def _spec(name: str, description: str, **args: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in args.items()},
            "required": list(args),
        },
    )


TOOL_SPECS = [
    _spec(
        "FlightSearch",
        "Find flights between two cities on a date.",
        origin="departure city",
        destination="arrival city",
        date="travel date, YYYY-MM-DD",
    ),
    _spec("RestaurantSearch", "List the restaurants of a city.", city="city name"),
    _spec("AccommodationSearch", "List the accommodations of a city.", city="city name"),
    _spec("AttractionSearch", "List the attractions of a city.", city="city name"),
    _spec(
        "DistanceMatrix",
        "Distance, duration and cost of a drive between two cities.",
        origin="departure city",
        destination="arrival city",
        mode="'driving' (self-driving) or 'taxi'",
    ),
    _spec("CitySearch", "List the cities of a US state.", state="state name"),
]
TOOL_NAMES = [t.name for t in TOOL_SPECS]


class ToolFailure(Exception):
    """A tool could not run (bad argument, missing table); shown as `Error executing <tool>: ...`."""


@functools.lru_cache(maxsize=16)
def _read(path: str, columns: tuple[str, ...] | None, dropna: bool) -> pd.DataFrame:
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise ToolFailure(f"table not found at {p}")
    df = pd.read_csv(p)
    if dropna:
        df = df.dropna()
    return df[list(columns)] if columns else df


@functools.lru_cache(maxsize=4)
def _cities(path: str) -> dict[str, list[str]]:
    p = Path(path)
    if not p.is_file():
        raise ToolFailure(f"city list not found at {p}")
    out: dict[str, list[str]] = {}
    for line in p.read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            city, state = line.split("\t", 1)
            out.setdefault(state.strip(), []).append(city.strip())
    return out


def strip_parenthesis(name: str) -> str:
    """Upstream `extract_before_parenthesis`: the text before a `(…)` part (we also trim spaces)."""
    m = re.search(r"^(.*?)\([^)]*\)", name)
    return (m.group(1) if m else name).strip()


class TravelDB:
    """The six tools over one database directory. `flights_path` defaults to the upstream layout."""

    def __init__(self, db_dir: str | Path, flights_path: str | Path | None = None, *, day_routes: bool = True) -> None:
        self.day_routes = day_routes  # DistanceMatrix answers routes longer than a day (upstream run_for_evaluation)
        self.db_dir = Path(db_dir).expanduser()
        if not self.db_dir.is_dir():
            raise FileNotFoundError(
                f"TravelPlanner database directory not found: {self.db_dir}. Set benchmark.params.db_dir to a copy of "
                "upstream env/env_systems/travel_planner_env/database/ (e.g. ../shared/data/memoryarena-travel-db)."
            )
        self.flights_path = Path(flights_path).expanduser() if flights_path else self.db_dir / FLIGHTS_FILE

    def table(self, name: str) -> pd.DataFrame:
        rel, cols = TABLES[name]
        return _read(str(self.db_dir / rel), tuple(cols), True)

    def execute(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """(output text, is_error). Never raises."""
        spec = next((t for t in TOOL_SPECS if t.name == name), None)
        if spec is None:
            return f"Error executing {name}: unknown tool; available: {', '.join(TOOL_NAMES)}", True
        args = args if isinstance(args, dict) else {}
        try:
            missing = [k for k in spec.parameters["required"] if not isinstance(args.get(k), str)]
            if missing:
                raise ToolFailure(
                    f"missing or non-string argument(s): {', '.join(missing)} (all arguments are strings)"
                )
            return getattr(self, name.lower())(**{k: args[k] for k in spec.parameters["required"]}), False
        except ToolFailure as e:
            return f"Error executing {name}: {e}", True
        except Exception as e:  # upstream ToolExecutor catches everything the same way
            return f"Error executing {name}: {type(e).__name__}: {e}", True

    # --------------------------------------------------------------------------- the tools
    def flightsearch(self, origin: str, destination: str, date: str) -> str:
        try:
            df = _read(str(self.flights_path), tuple(FLIGHT_COLUMNS), True)
        except ToolFailure:
            raise ToolFailure(
                f"flights table not found at {self.flights_path}; download TravelPlanner's clean_Flights_2022.csv "
                "(link in upstream setup_travel.md) and set benchmark.flights_path"
            ) from None
        res = df[(df["OriginCityName"] == origin) & (df["DestCityName"] == destination) & (df["FlightDate"] == date)]
        if len(res) == 0:
            return f"There is no flight from {origin} to {destination} on {date}."
        return res.to_string(index=False)

    def _by_city(self, table: str, column: str, city: str, empty: str) -> str:
        df = self.table(table)
        res = df[df[column] == city]
        return empty if len(res) == 0 else res.to_string(index=False)

    def restaurantsearch(self, city: str) -> str:
        return self._by_city("restaurants", "City", city, "There is no restaurant in this city.")

    def accommodationsearch(self, city: str) -> str:
        # Upstream bug kept: the empty message says "attraction".
        return self._by_city("accommodations", "city", city, "There is no attraction in this city.")

    def attractionsearch(self, city: str) -> str:
        return self._by_city("attractions", "City", city, "There is no attraction in this city.")

    def distancematrix(self, origin: str, destination: str, mode: str) -> str:
        origin, destination = strip_parenthesis(origin), strip_parenthesis(destination)
        df = _read(str(self.db_dir / DISTANCE_FILE), None, False)
        info: dict[str, Any] = {
            "origin": origin,
            "destination": destination,
            "cost": None,
            "duration": None,
            "distance": None,
        }
        row = df[(df["origin"] == origin) & (df["destination"] == destination)]
        if len(row):
            duration, distance = row["duration"].values[0], row["distance"].values[0]
            # As TravelPlanner's run_for_evaluation: a route of more than a day ("1 day 2 hours") still
            # reports duration and distance, only its cost stays None; `distance_day_routes: none`
            # answers None for all three.
            if isinstance(duration, str) and isinstance(distance, str) and (self.day_routes or "day" not in duration):
                info.update(duration=duration, distance=distance)
                if "day" not in duration:
                    km = float(distance.replace("km", "").replace(",", "").strip())
                    if "driving" in mode:
                        info["cost"] = int(km * 0.05)
                    elif mode == "taxi":
                        info["cost"] = int(km)
        return "\n".join(f"{k}: {v}" for k, v in info.items())

    def citysearch(self, state: str) -> str:
        cities = _cities(str(self.db_dir / CITY_FILE)).get(state)
        return ", ".join(cities) if cities else "Invalid State"
