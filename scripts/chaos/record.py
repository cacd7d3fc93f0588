"""Record the scripted oracle's answers once, keyed by the exact request.

`python -m scripts.chaos.record <table.json> <sweep overrides ...>` runs the sweep with the
scripted backbone and writes {"replies": {request key: text}, "by_last": {...}, "conflicts": n}:
the request key is `scripts.chaos.server.request_key(messages)`, the messages exactly as an
OpenAI-compatible backbone would send them. The chaos server replays this table over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runners.api import Completion, Message, Protocol, Role
    from runners.backbones.scripted import ScriptedBackbone


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out, overrides = Path(argv[0]), argv[1:]
    from runners.backbones.scripted import ScriptedBackbone
    from scripts.chaos.server import request_key

    replies: dict[str, str] = {}
    by_last: dict[str, str] = {}
    conflicts = 0
    original = ScriptedBackbone.complete

    async def recording(
        self: ScriptedBackbone,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        nonlocal conflicts
        c = await original(self, messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        key = request_key(messages)
        if replies.setdefault(key, c.text) != c.text:
            conflicts += 1
        by_last.setdefault(request_key(messages[-1:]), c.text)
        return c

    ScriptedBackbone.complete = recording  # type: ignore[method-assign]  # records every reply the run gets
    from runners import sweep

    sys.argv = ["runners.sweep", *overrides]
    code = 0
    try:
        sweep.main()
    except SystemExit as e:
        code = int(e.code or 0)
    out.write_text(json.dumps({"replies": replies, "by_last": by_last, "conflicts": conflicts}))
    return code


if __name__ == "__main__":
    sys.exit(main())
