"""What msgspec may read: a message that is UTF-8 throughout and not nested too deeply.

msgspec validates what it decodes, but it skips the values of keys the schema does not
know without looking inside them: invalid UTF-8 there goes unnoticed, and nesting makes it
recurse on the C stack until Python's recursion limit raises `RecursionError`. Both are
`bad_json`: invalid UTF-8 anywhere, and any value nested in more than `MAX_DEPTH` arrays or
objects.

`readable(data)` is True when neither is the case, so msgspec's typed pass reads the
message; False sends it to `decode_event`'s second pass, whose parser (jiter) refuses it and
names the reason. It is one pass over the bytes in C (`ragstream.events._event_scanner`, when
built): 8 bytes at a time, checking that all are ASCII and counting the opening brackets; only a
message with non-ASCII bytes is validated as UTF-8, and only one with more than `MAX_DEPTH`
opening brackets is walked to measure its depth. `readable_reference` is the same rule in
Python (the fallback without the compiled module, and what the tests hold the compiled one
to).
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "readable", "readable_reference"]

MAX_DEPTH = 200
"""The deepest a value may be: the number of arrays and objects around it (the top-level
object's members are at depth 1). The limit of jiter, the parser of `decode_event`'s
second pass, so that both passes agree."""

# JSON tokens as far as depth goes: an opening or closing bracket, a string (possibly
# unterminated), or a run of anything else but JSON's blanks and separators (a number, a
# literal, or garbage). Commas, colons and blanks are not values.
_TOKEN = re.compile(rb'[\[{]|[\]}]|"[^"\\]*(?:\\.[^"\\]*)*"?|[^ \t\n\r\[\]{}",:]+', re.DOTALL)
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")


def readable_reference(data: object) -> bool:
    """True when `data` is bytes of strict UTF-8 in which no value is nested deeper than
    `MAX_DEPTH`, read as JSON's grammar reads it (brackets in strings do not count)."""
    if not isinstance(data, bytes | bytearray):
        return False  # the reference decides
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return True
    depth = 0
    for token in _TOKEN.finditer(data):
        first = data[token.start()]
        if first in _CLOSE:
            depth = max(depth - 1, 0)
        elif depth > MAX_DEPTH:
            return False  # a value inside the container at depth MAX_DEPTH + 1
        elif first in _OPEN:
            depth += 1
    return True


try:
    from ragstream.events._event_scanner import readable
except ImportError:  # pragma: no cover - built by every install with a C compiler
    readable = readable_reference
