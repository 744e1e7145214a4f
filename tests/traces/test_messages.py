"""Reading text out of messages and JSON values (`ragstream.traces.messages`): the shapes
instrumentations write, one by one, and any JSON at all without an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstream.traces.messages import AI_ROLES, USER_ROLES, json_text, last_message, messages_of

KEYS = ("question", "query", "input")


def _read(value: Any, roles: frozenset[str] = AI_ROLES, keys: tuple[str, ...] = ()) -> str | None:
    attributes = {"v": json.dumps(value), "m": "application/json"}
    return json_text(attributes, "v", "m", keys, roles)


@pytest.mark.parametrize(
    ("value", "roles", "expected"),
    [
        ("plain", AI_ROLES, "plain"),
        ({"question": "q?", "messages": []}, USER_ROLES, "q?"),
        (  # LangGraph state, message_to_dict
            {
                "messages": [
                    {"type": "human", "data": {"content": "q?"}},
                    {"type": "ai", "data": {"content": "a."}},
                    {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "t"}]}},
                ]
            },
            AI_ROLES,
            "a.",
        ),
        (  # dumpd, content blocks with reasoning
            {
                "messages": [
                    {
                        "lc": 1,
                        "type": "constructor",
                        "id": ["langchain", "schema", "messages", "AIMessage"],
                        "kwargs": {
                            "content": [
                                {"type": "reasoning", "reasoning": "think"},
                                {"type": "text", "text": "a"},
                                {"type": "text", "text": "b"},
                            ]
                        },
                    }
                ]
            },
            AI_ROLES,
            "ab",
        ),
        ([{"role": "user", "content": "x"}, {"role": "user", "content": "y"}], USER_ROLES, "y"),
        ({"messages": [["user", "pair"], ["assistant", "reply"]]}, USER_ROLES, "pair"),
        ({"llm": {"replies": ["ChatMessage(...)"]}}, AI_ROLES, None),  # Haystack's root
        ({"messages": [{"role": ["odd"], "content": "x"}, {"role": {}}]}, AI_ROLES, None),
        (None, AI_ROLES, None),
        (42, AI_ROLES, "42"),
    ],
)
def test_json_values(value: Any, roles: frozenset[str], expected: str | None) -> None:
    assert _read(value, roles, KEYS) == expected


def test_a_value_that_is_not_json_is_itself() -> None:
    attributes = {"v": "{not json", "m": "application/json"}
    assert json_text(attributes, "v", "m", KEYS, USER_ROLES) == "{not json"
    assert json_text({"v": '{"a": 1}'}, "v", "m", KEYS, USER_ROLES) == '{"a": 1}'  # text/plain


def test_messages_in_parts_keep_their_text_parts() -> None:
    p = "llm.output_messages"
    attributes = {
        f"{p}.0.message.role": "assistant",
        f"{p}.0.message.content": "first",
        f"{p}.1.message.role": "assistant",
        f"{p}.1.message.contents.0.message_content.type": "text",
        f"{p}.1.message.contents.0.message_content.text": "second",
        f"{p}.1.message.contents.1.message_content.type": "image",
        f"{p}.2.message.role": "assistant",
        f"{p}.2.message.contents.0.message_content.type": "reasoning",
        f"{p}.2.message.contents.0.message_content.text": "thinking",
    }
    messages = messages_of(attributes, p)
    assert last_message(messages, None) == "second"
    assert last_message(messages, USER_ROLES) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["messages", "type", "data", "kwargs", "id", "role", "content", "text"]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@given(json_values, st.sampled_from([AI_ROLES, USER_ROLES]))
def test_any_json_reads_without_an_exception(value: Any, roles: frozenset[str]) -> None:
    found = _read(value, roles, KEYS)
    assert found is None or isinstance(found, str)
