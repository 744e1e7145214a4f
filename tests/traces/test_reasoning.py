"""A reasoning model's thinking is not its answer: the OpenAI client, instrumented by the real
OpenInference package, asks the Responses API of the local stand-in server; its reasoning
item is an output message of `reasoning` parts, which the answer leaves out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import openai
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.trace import MessageAttributes, MessageContentAttributes
from opentelemetry.trace import SpanKind

from tests.support.openai_server import OpenAIServer, Reply
from tests.traces._rag import CORPUS
from tests.traces._traced import Traced, answers, engine, trace_counts
from tests.traces.test_spans import App, _engine, _retriever

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")

THINKING = "The user asks about passwords; article 0 covers it, article 3 does not."


class ReasoningApp:
    """A web handler (its SERVER span, as a web framework's instrumentation makes it): a
    LangChain retriever, then the OpenAI Responses API, both instrumented."""

    def __init__(self, base_url: str) -> None:
        self.traced = Traced()
        provider = self.traced.provider
        self.instrumentors = (LangChainInstrumentor(), OpenAIInstrumentor())
        for instrumentor in self.instrumentors:
            instrumentor.instrument(tracer_provider=provider)
        self.tracer = provider.get_tracer("web")
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
        store.add_documents(CORPUS)
        self.retriever = store.as_retriever(search_kwargs={"k": 3})
        self.client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)

    def ask(self, question: str) -> str:
        with self.tracer.start_as_current_span("POST /ask", kind=SpanKind.SERVER):
            docs = self.retriever.invoke(question)
            context = "\n".join(d.page_content for d in docs)
            response = self.client.responses.create(
                model="o4-mini",
                input=[
                    {"role": "system", "content": f"Answer from: {context}"},
                    {"role": "user", "content": question},
                ],
            )
            return response.output_text

    def close(self) -> None:
        for instrumentor in self.instrumentors:
            instrumentor.uninstrument()
        self.traced.provider.shutdown()


@pytest.fixture
async def reasoning_app() -> AsyncIterator[tuple[ReasoningApp, OpenAIServer]]:
    async with OpenAIServer() as server:
        app = ReasoningApp(server.base_url)
        try:
            yield app, server
        finally:
            app.close()


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
async def test_the_reasoning_item_is_not_the_answer(
    reasoning_app: tuple[ReasoningApp, OpenAIServer], encoding: str
) -> None:
    app, server = reasoning_app
    server.push(Reply(content="Open Settings, then Reset password.", reasoning=THINKING))
    said = await asyncio.to_thread(app.ask, "how do I reset a password")
    assert said == "Open Settings, then Reset password."
    ours = engine(encoding)
    [answer] = answers(ours, [app.traced.messages(encoding)])
    assert answer.answer == said
    assert answer.question == "how do I reset a password"
    assert answer.model == "o4-mini"
    assert len(answer.contexts) == 3


async def test_a_response_cut_off_while_reasoning_has_no_answer(
    reasoning_app: tuple[ReasoningApp, OpenAIServer],
) -> None:
    """The output budget spent on reasoning: the response holds only the reasoning item.
    There is nothing the model said to judge, so the trace closes as `no_answer`."""
    app, server = reasoning_app
    server.push(Reply(content="", reasoning=THINKING))
    said = await asyncio.to_thread(app.ask, "how do I reset a password")
    assert said == ""
    messages = app.traced.messages()
    ours = engine()
    assert answers(ours, [messages]) == []
    assert ours.traces is not None
    assert trace_counts(ours)["no_answer"] == 1
    assert ours.events[("retrieval", "processed")] == 1


def _parts(prefix: str, role: str, parts: list[tuple[str, str]]) -> dict[str, str]:
    """One message in parts, with the OpenInference attribute names."""
    contents = f"{prefix}.{MessageAttributes.MESSAGE_CONTENTS}"
    out = {f"{prefix}.{MessageAttributes.MESSAGE_ROLE}": role}
    for m, (kind, text) in enumerate(parts):
        out[f"{contents}.{m}.{MessageContentAttributes.MESSAGE_CONTENT_TYPE}"] = kind
        out[f"{contents}.{m}.{MessageContentAttributes.MESSAGE_CONTENT_TEXT}"] = text
    return out


def test_reasoning_parts_of_one_message_are_left_out_of_question_and_answer() -> None:
    """A message whose parts mix `reasoning` and `text` (as instrumentations of models that
    think in the same message write it, per the conventions' `message_content.type`): the
    text parts only, in order."""
    app = App()
    llm = {
        "openinference.span.kind": "LLM",
        **_parts("llm.input_messages.0", "user", [("text", "what is "), ("text", "A?")]),
        **_parts(
            "llm.output_messages.0",
            "assistant",
            [("reasoning", THINKING), ("text", "A is "), ("reasoning", "so"), ("text", "a letter")],
        ),
    }
    retriever = _retriever([{"id": "a", "content": "A text"}])
    del retriever["input.value"]  # no retrieval query: the question is the model's
    with app.span("POST /ask", {}, root=True):
        with app.span("retrieve", retriever):
            pass
        with app.span("generate", llm):
            pass
    [answer] = answers(_engine(), [app.messages()])
    assert answer.answer == "A is a letter"
    assert answer.question == "what is A?"
