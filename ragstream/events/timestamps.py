"""Event and document timestamps: RFC 3339 strings or Unix seconds, normalised to float seconds.

Numbers are validated by the schema's bounds (msgspec for decoding, pydantic for the
models); only strings reach the RFC 3339 parser. Bounds reject absurd values, notably Unix
*milliseconds*: any time after 1971-01-12 in milliseconds is past the upper bound (year
3000) and fails loudly.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

__all__ = [
    "MAX_TS",
    "MAX_TS_TEXT",
    "MIN_DOC_TS",
    "MIN_EVENT_TS",
    "RFC3339_PATTERN",
    "DocTime",
    "EventTime",
    "format_rfc3339",
    "parse_rfc3339",
    "rfc3339_seconds",
]

MIN_EVENT_TS = 0.0
"""Earliest event time `ts`: 1970-01-01T00:00:00Z."""
MIN_DOC_TS = -62_135_596_800.0
"""Earliest document time `t_doc`: 0001-01-01T00:00:00Z (documents may predate 1970)."""
MAX_TS = 32_503_680_000.0
"""Upper bound (exclusive) of every timestamp: 3000-01-01T00:00:00Z."""

RFC3339_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
"""RFC 3339 `date-time` (section 5.6): the UTC offset is required; fractions of any length."""
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
MAX_TS_TEXT = 64
"""Longest accepted RFC 3339 string (characters)."""


def parse_rfc3339(text: str) -> float:
    """Unix seconds of an RFC 3339 date-time; `ValueError` when malformed or out of range.

    Fractions are kept to the microsecond (truncated). A leap second (`:60`) is read as the
    first instant of the next minute, as POSIX time does.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError("not an RFC 3339 date-time with a UTC offset (e.g. 2024-05-01T12:00:00Z)")
    return _matched_seconds(text, match)


def rfc3339_seconds(text: str) -> float | None:
    """Unix seconds of an RFC 3339 string of at most `MAX_TS_TEXT` characters, else None.

    The decoder's form of `parse_rfc3339` (no range check, no exception). The usual shapes
    (`YYYY-MM-DDTHH:MM:SS[.f+](Z|+HH:MM)`) are recognised by their separators and parsed by
    `datetime.fromisoformat` alone, which checks every digit; anything else takes the regex.
    """
    size = len(text)
    if size > MAX_TS_TEXT:
        return None
    if (
        size >= 20
        and text[4] == "-" == text[7]
        and text[10] in "Tt "
        and text[13] == ":" == text[16]
        and (text[-1] == "Z" or (text[-6] in "+-" and text[-3] == ":"))
    ):
        fraction = text[19 : size - 1 if text[-1] == "Z" else size - 6]
        if not fraction or (fraction[0] == "." and len(fraction) > 1):
            try:
                return datetime.fromisoformat(text).timestamp()
            except (ValueError, OverflowError):
                pass
    try:
        return parse_rfc3339(text)
    except (ValueError, OverflowError):
        return None


def _matched_seconds(text: str, match: re.Match[str] | None = None) -> float:
    """Seconds of a string already known to match `RFC3339_PATTERN`.

    The C parser (`datetime.fromisoformat`) handles the common forms; lowercase `t`/`z`,
    leap seconds and invalid dates take the slow path.
    """
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        pass
    match = match or _RFC3339.fullmatch(text)
    if match is None:  # pragma: no cover - callers guarantee the pattern
        raise ValueError("not an RFC 3339 date-time")
    year, month, day, hour, minute, second = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    fraction, zulu, sign, off_h, off_m = match.group(7, 8, 9, 10, 11)
    if second > 60 or hour > 23 or minute > 59:
        raise ValueError("time of day out of range")
    try:
        moment = datetime(year, month, day, hour, minute, min(second, 59), tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"invalid date: {exc}") from None
    offset = 0
    if zulu is None:
        if int(off_h) > 23 or int(off_m) > 59:
            raise ValueError("UTC offset out of range")
        offset = (int(off_h) * 60 + int(off_m)) * 60 * (1 if sign == "+" else -1)
    whole = (moment - _EPOCH) // timedelta(seconds=1) + (second == 60) - offset
    return whole + (int(fraction[1:7].ljust(6, "0")) / 1e6 if fraction else 0.0)


def format_rfc3339(seconds: float) -> str:
    """RFC 3339 UTC form of Unix seconds, to the microsecond (e.g. `2024-05-01T12:00:00.5Z`)."""
    text = datetime.fromtimestamp(seconds, UTC).isoformat().removesuffix("+00:00")
    if "." in text:
        text = text.rstrip("0")
    return text + "Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Timestamp:
    """Pydantic marker: a number in `[low, MAX_TS)` or an RFC 3339 string, validated to float."""

    def __init__(self, low: float, what: str) -> None:
        self._low = low
        self._what = what

    def _from_text(self, text: str) -> float:
        try:
            value = _matched_seconds(text)
        except (ValueError, OverflowError) as exc:
            raise PydanticCustomError("rfc3339", "{error}", {"error": str(exc)}) from None
        if not self._low <= value < MAX_TS:
            raise PydanticCustomError(
                "rfc3339",
                "{what} out of range [{low}, {high})",
                {
                    "what": self._what,
                    "low": format_rfc3339(self._low),
                    "high": "3000-01-01T00:00:00Z",
                },
            )
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        number = core_schema.float_schema(ge=self._low, lt=MAX_TS, allow_inf_nan=False, strict=True)
        text = core_schema.no_info_after_validator_function(
            self._from_text,
            core_schema.str_schema(max_length=MAX_TS_TEXT, pattern=RFC3339_PATTERN, strict=True),
        )
        return core_schema.union_schema([(number, "unix_seconds"), (text, "rfc3339")])

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {
            "anyOf": [
                {
                    "type": "number",
                    "minimum": self._low,
                    "exclusiveMaximum": MAX_TS,
                    "description": "Unix seconds (fractions allowed)",
                },
                {
                    "type": "string",
                    "format": "date-time",
                    "pattern": RFC3339_PATTERN,
                    "maxLength": MAX_TS_TEXT,
                    "description": "RFC 3339 date-time with a UTC offset",
                },
            ]
        }


EventTime = Annotated[float, _Timestamp(MIN_EVENT_TS, "event time")]
"""Event time: Unix seconds in [1970, 3000) or an RFC 3339 string; stored as float seconds."""
DocTime = Annotated[float, _Timestamp(MIN_DOC_TS, "document time")]
"""Document time: Unix seconds in [year 1, 3000) or an RFC 3339 string; stored as float seconds."""
