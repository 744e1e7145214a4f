"""The text of a span's messages and structured values: what a question or an answer reads.

Two shapes carry messages:

- OpenInference attributes, `<prefix>.N.message.role` and `.message.content`, or, for a
  message in parts, `.message.contents.M.message_content.type` / `.text`. Only `text` parts
  (and untyped ones) are the message's text: a `reasoning` part is the model's thinking
  (an OpenAI Responses reasoning summary, a reasoning model's trace), not what it said.
- A JSON input or output (`input.value` / `output.value` with the mime type
  `application/json`): a string; an object with a configured key holding a string; an
  object with `messages` (LangGraph's state) or a list of messages, read as LangChain
  serializes them (`{"type": "human", "data": {...}}`, `{"lc": 1, "type": "constructor",
  "id": [..., "AIMessage"], "kwargs": {...}}`), as chat APIs write them (`{"role",
  "content"}`) or as `[role, content]` pairs. Content given as blocks keeps its `text`
  blocks only. Any other structure (a dict per Haystack component, a list of documents)
  has no readable text here: None, and the trace's fallbacks answer instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

__all__ = [
    "AI_ROLES",
    "USER_ROLES",
    "Messages",
    "json_text",
    "last_message",
    "messages_of",
    "prompt_text",
]

USER_ROLES = frozenset({"user", "human", "HumanMessage", "HumanMessageChunk"})
"""Roles (and LangChain class names) of the person's messages."""
AI_ROLES = frozenset({"assistant", "ai", "AIMessage", "AIMessageChunk"})
"""Roles (and LangChain class names) of the model's messages."""

_TEXT_TYPES = (None, "text")


Messages = dict[int, dict[str, Any]]
"""A span's messages under one prefix: N -> {attribute name after `<prefix>.N.`: value}."""


def messages_of(attributes: Mapping[str, Any], prefix: str) -> Messages:
    """`<prefix>.N.<name>` attributes grouped by N (one pass over the attributes)."""
    head = prefix + "."
    out: Messages = {}
    for key, value in attributes.items():
        if not key.startswith(head):
            continue
        number, _, name = key[len(head) :].partition(".")
        if number.isdigit():
            out.setdefault(int(number), {})[name] = value
    return out


def _message_text(message: Mapping[str, Any]) -> str | None:
    """A message's text: `message.content`, else its text parts in the order of M."""
    content = message.get("message.content")
    if isinstance(content, str) and content:
        return content
    parts = messages_of(message, "message.contents")
    texts = [
        part["message_content.text"]
        for _, part in sorted(parts.items())
        if part.get("message_content.type") in _TEXT_TYPES
        and isinstance(part.get("message_content.text"), str)
    ]
    return "".join(texts) or None


def last_message(messages: Messages, roles: frozenset[str] | None) -> str | None:
    """The text of the last message (of one of `roles`, when given) that has text."""
    for index in sorted(messages, reverse=True):
        message = messages[index]
        if roles is not None and str(message.get("message.role")) not in roles:
            continue
        text = _message_text(message)
        if text is not None:
            return text
    return None


def prompt_text(messages: Messages) -> str:
    """Every message's text, in order: what the model was given."""
    texts = (_message_text(messages[i]) for i in sorted(messages))
    return "\n".join(text for text in texts if text is not None)


def json_text(
    attributes: Mapping[str, Any],
    key: str,
    mime_key: str,
    keys: Sequence[str],
    roles: frozenset[str],
) -> str | None:
    """A span's input or output (`key`) as text (see the module docstring); None when it
    is absent or a structure without text of its own."""
    value = attributes.get(key)
    if not isinstance(value, str):
        return None
    if attributes.get(mime_key) != "application/json":
        return value
    try:
        data = msgspec.json.decode(value)
    except msgspec.DecodeError:
        return value
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for name in keys:
            found = data.get(name)
            if isinstance(found, str):
                return found
        messages = data.get("messages")
        return _last_of(messages, roles) if isinstance(messages, list) else None
    if isinstance(data, list):
        return _last_of(data, roles)
    return None if data is None else value


def _last_of(messages: list[Any], roles: frozenset[str]) -> str | None:
    """The text of the last message of `roles` in a JSON list of messages."""
    for item in reversed(messages):
        if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
            role, content = item
        elif isinstance(item, dict):
            role, content = _role_content(item)
        else:
            continue
        if not isinstance(role, str) or role not in roles:
            continue
        text = _content_text(content)
        if text:
            return text
    return None


def _role_content(item: Mapping[str, Any]) -> tuple[Any, Any]:
    """(role, content) of one JSON message, in the shapes of the module docstring."""
    kwargs, data = item.get("kwargs"), item.get("data")
    if item.get("type") == "constructor" and isinstance(kwargs, dict):
        names = item.get("id")
        role = names[-1] if isinstance(names, list) and names else kwargs.get("type")
        return role, kwargs.get("content")
    if isinstance(data, dict):
        return item.get("type") or data.get("type"), data.get("content")
    return item.get("role") or item.get("type"), item.get("content")


def _content_text(content: Any) -> str | None:
    """A message's content: a string, or the text of its `text` blocks (reasoning and
    other blocks left out)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts) or None
