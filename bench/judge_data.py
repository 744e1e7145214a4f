"""A labelled set for judge agreement: answers built from contexts, some with claims that
no context supports, with the truth known per sentence.

Deterministic for a seed. Each example has a question about one service, three contexts
(facts about that service, about a second one, and a distractor), and an answer of one to
four context facts — verbatim (40%), lightly reworded (40%) or paraphrased with other
words (20%) — plus, for about half of the answers, one or
two unsupported sentences of three kinds:

- ``new_fact``: an attribute of the service that no context states;
- ``changed_value``: a context fact with a different number or name (the hard case);
- ``other_entity``: a fact about a service the contexts never mention.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Example", "Sentence", "generate"]

_SERVICES = [
    "backup service",
    "billing API",
    "search index",
    "ingestion pipeline",
    "vector store",
    "auth gateway",
    "metrics collector",
    "report builder",
    "mail relay",
    "cache cluster",
    "audit log",
    "scheduler",
]
_UNSEEN = ["ledger daemon", "image resizer", "chat bridge", "quota broker", "feature flagger"]
_REGIONS = ["eu-west", "us-east", "ap-south", "eu-north", "us-west"]
_TEAMS = ["platform", "storage", "payments", "identity", "observability", "search"]
_PROTOCOLS = ["TLS 1.3", "mutual TLS", "AES-256", "WireGuard"]
_AUTH = ["an API key", "an OAuth token", "a signed JWT", "a client certificate"]
_PERIODS = ["week", "month", "quarter", "day"]

# attribute -> (value kind, reference wording, light rewordings, paraphrases with other
# words); {e} is the service, {v} the value
_FACTS: dict[str, tuple[str, list[str], list[str], list[str]]] = {
    "retention": (
        "days",
        ["The {e} keeps logs for {v} days."],
        ["Logs of the {e} are retained for {v} days.", "The {e} retains its logs {v} days."],
        ["After {v} days, records written by the {e} are deleted."],
    ),
    "region": (
        "region",
        ["The {e} runs in the {v} region."],
        ["The {e} is deployed in {v}.", "The {e} is hosted in the {v} region."],
        ["You will find the {e} in {v} data centres."],
    ),
    "limit": (
        "rpm",
        ["The {e} allows {v} requests per minute."],
        [
            "The {e} accepts up to {v} requests each minute.",
            "Clients may send {v} requests per minute to the {e}.",
        ],
        ["Beyond {v} calls in sixty seconds, the {e} starts throttling clients."],
    ),
    "owner": (
        "team",
        ["The {e} is maintained by the {v} team."],
        ["The {v} team maintains the {e}.", "The {v} team owns and maintains the {e}."],
        ["Questions about the {e} should go to {v} engineers."],
    ),
    "rotation": (
        "period",
        ["The {e} rotates its certificates every {v}."],
        [
            "Certificates of the {e} are rotated every {v}.",
            "Every {v} the {e} rotates certificates.",
        ],
        ["Once a {v}, the {e} gets fresh certs."],
    ),
    "encryption": (
        "protocol",
        ["The {e} encrypts traffic with {v}."],
        ["Traffic to the {e} is encrypted using {v}.", "The {e} uses {v} to encrypt traffic."],
        ["Data sent to the {e} travels protected by {v}."],
    ),
    "snapshot": (
        "hours",
        ["The {e} takes a snapshot every {v} hours."],
        [
            "A snapshot of the {e} is taken every {v} hours.",
            "Every {v} hours the {e} snapshots its state.",
        ],
        ["Point-in-time copies of the {e} are made at {v}-hour intervals."],
    ),
    "auth": (
        "auth",
        ["The {e} requires {v} for every request."],
        ["Every request to the {e} needs {v}.", "Requests to the {e} must carry {v}."],
        ["Without {v}, calls to the {e} are refused."],
    ),
}
_QUESTIONS = {
    "retention": "How long does the {e} keep logs?",
    "region": "Which region does the {e} run in?",
    "limit": "How many requests per minute does the {e} allow?",
    "owner": "Which team maintains the {e}?",
    "rotation": "How often does the {e} rotate certificates?",
    "encryption": "How does the {e} encrypt traffic?",
    "snapshot": "How often does the {e} take snapshots?",
    "auth": "What does the {e} require for requests?",
}


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    supported: bool
    kind: str
    """Supported: ``verbatim``, ``reworded``, ``paraphrase``; unsupported: ``new_fact``,
    ``changed_value``, ``other_entity``."""


@dataclass(frozen=True, slots=True)
class Example:
    question: str
    contexts: tuple[str, ...]
    sentences: tuple[Sentence, ...]

    @property
    def answer(self) -> str:
        return " ".join(s.text for s in self.sentences)

    @property
    def supported_share(self) -> float:
        return sum(s.supported for s in self.sentences) / len(self.sentences)

    @property
    def hallucination(self) -> bool:
        return not all(s.supported for s in self.sentences)


def _value(rng: random.Random, kind: str) -> str:
    if kind == "days":
        return str(rng.choice([7, 14, 30, 45, 60, 90, 180, 365]))
    if kind == "rpm":
        return str(rng.choice([60, 100, 300, 600, 1000, 1200, 5000]))
    if kind == "hours":
        return str(rng.choice([1, 2, 4, 6, 12, 24]))
    pools = {
        "region": _REGIONS,
        "team": _TEAMS,
        "period": _PERIODS,
        "protocol": _PROTOCOLS,
        "auth": _AUTH,
    }
    return rng.choice(pools[kind])


def _other_value(rng: random.Random, kind: str, value: str) -> str:
    while True:
        other = _value(rng, kind)
        if other != value:
            return other


def _render(template: str, service: str, value: str) -> str:
    text = template.format(e=service, v=value)
    return text[0].upper() + text[1:]


def generate(n: int = 300, seed: int = 7) -> list[Example]:
    """``n`` labelled examples (see the module docstring)."""
    rng = random.Random(seed)
    examples: list[Example] = []
    for _ in range(n):
        main, second, third = rng.sample(_SERVICES, 3)
        attrs = list(_FACTS)
        rng.shuffle(attrs)
        known, unknown = attrs[:4], attrs[4:]
        facts = {a: _value(rng, _FACTS[a][0]) for a in known}
        contexts = (
            " ".join(_render(_FACTS[a][1][0], main, facts[a]) for a in known),
            " ".join(
                _render(_FACTS[a][1][0], second, _value(rng, _FACTS[a][0]))
                for a in rng.sample(attrs, 3)
            ),
            " ".join(
                _render(_FACTS[a][1][0], third, _value(rng, _FACTS[a][0]))
                for a in rng.sample(attrs, 2)
            ),
        )
        asked = known[0]
        sentences: list[Sentence] = []
        for a in known[: rng.randint(1, 4)]:
            draw = rng.random()
            if draw < 0.4:
                kind, template = "verbatim", _FACTS[a][1][0]
            elif draw < 0.8:
                kind, template = "reworded", rng.choice(_FACTS[a][2])
            else:
                kind, template = "paraphrase", rng.choice(_FACTS[a][3])
            sentences.append(Sentence(_render(template, main, facts[a]), True, kind))
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 2)):
                kind = rng.choice(["new_fact", "changed_value", "other_entity"])
                if kind == "new_fact":
                    a = rng.choice(unknown)
                    text = _render(
                        rng.choice(_FACTS[a][1] + _FACTS[a][2]), main, _value(rng, _FACTS[a][0])
                    )
                elif kind == "changed_value":
                    a = rng.choice(known)
                    wrong = _other_value(rng, _FACTS[a][0], facts[a])
                    text = _render(rng.choice(_FACTS[a][1] + _FACTS[a][2]), main, wrong)
                else:
                    a = rng.choice(attrs)
                    text = _render(_FACTS[a][1][0], rng.choice(_UNSEEN), _value(rng, _FACTS[a][0]))
                sentences.insert(rng.randint(0, len(sentences)), Sentence(text, False, kind))
        question = _QUESTIONS[asked].format(e=main)
        examples.append(Example(question, contexts, tuple(sentences)))
    return examples
