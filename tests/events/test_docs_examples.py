"""The examples in docs/events.md are the ones the tests use, and they decode."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ragstream.events import decode_event

from ._examples import VALID, to_bytes

_DOC = Path(__file__).parents[2] / "docs" / "events.md"


def test_every_json_example_in_the_docs_is_a_tested_example() -> None:
    blocks = re.findall(r"```json\n(.*?)```", _DOC.read_text(encoding="utf-8"), flags=re.S)
    documented = [json.loads(block) for block in blocks]
    assert documented == list(VALID.values())
    for message in documented:
        decode_event(to_bytes(message))
