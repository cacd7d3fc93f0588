"""kit.prompting.tools_text: the text kept per tool-schema content is exactly what json.dumps writes."""

import json
import math

from kit.prompting import tools_text
from runners.api import ToolSpec


def _dumps(tools, indent=1):
    return json.dumps([t.openai_schema() for t in tools], indent=indent, ensure_ascii=False)


def test_tools_text_is_json_dumps_of_the_current_schemas():
    tools = [
        ToolSpec(
            name="search", description="Find ü", parameters={"type": "object", "properties": {"q": {"type": "string"}}}
        ),
        ToolSpec(name="buy", description="Buy one"),
    ]
    first = tools_text(tools)
    assert first == _dumps(tools)
    assert tools_text(tools) == first  # asked again: the same text
    assert tools_text(tools, None) == _dumps(tools, None)  # PoS's one-line form is kept apart
    tools[1].description = "Buy two"  # a changed schema is never served the old text
    assert tools_text(tools) == _dumps(tools) != first
    assert tools_text([]) == "No tools are available in this task. Answer with an assistant message."


def test_values_json_writes_differently_never_share_a_text():
    """NaN and None, 1 and 1.0 and True, key order: each its own text, as json.dumps writes it."""
    variants = [
        {"type": "number", "minimum": math.nan},
        {"type": "number", "minimum": None},
        {"type": "number", "minimum": 1},
        {"type": "number", "minimum": 1.0},
        {"type": "number", "minimum": True},
        {"minimum": 1, "type": "number"},
    ]
    texts = []
    for v in variants:
        tools = [ToolSpec(name="t", description="d", parameters={"type": "object", "properties": {"x": v}})]
        text = tools_text(tools)
        assert text == _dumps(tools)
        texts.append(text)
    assert len(set(texts)) == len(variants)


def test_a_subclass_that_builds_its_schema_otherwise_gets_its_own_text():
    """A `ToolSpec` subclass may build its schema from more than its fields: its text is keyed by
    the schema it builds, never by fields a plain tool shares with it."""

    class Strict(ToolSpec):
        def openai_schema(self):
            return {**super().openai_schema(), "strict": True}

    plain = [ToolSpec(name="t", description="d")]
    strict = [Strict(name="t", description="d")]
    assert tools_text(plain) == _dumps(plain)
    assert tools_text(strict) == _dumps(strict) != tools_text(plain)
    plain[0].parameters["properties"]["x"] = {"type": "string"}  # changed in place: never the old text
    assert tools_text(plain) == _dumps(plain)
