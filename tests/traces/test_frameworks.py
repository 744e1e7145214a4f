"""Roots whose input and output are structures: a LangGraph graph (its state,
`{"messages": [...]}`) and a Haystack pipeline (a dict per component), each instrumented by
its real OpenInference package. The question and answer are read out of them (the last
human and AI message), or come from the retriever's query and the last LLM span's answer;
never the JSON text."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, TypedDict

import pytest
from haystack import Document as HaystackDocument
from haystack import Pipeline
from haystack.components.builders import ChatPromptBuilder
from haystack.components.generators.chat import MockChatGenerator
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from openinference.instrumentation.haystack import HaystackInstrumentor
from openinference.instrumentation.langchain import LangChainInstrumentor

from ragstream.pipeline.engine import Engine
from tests.traces._rag import CORPUS, Request
from tests.traces._reference import (
    assert_same_state,
    engine_config,
    feedback_messages,
    reference_messages,
)
from tests.traces._traced import TOPIC, Traced, answers

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")

QUESTIONS = ["how do I reset my password", "close my account please", "where are my invoices"]
REPLIES = [f"Reply {i}: follow the article." for i in range(len(QUESTIONS))]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    context: list[Document]


class GraphApp:
    """A two-node LangGraph graph (retrieve, generate) over LangChain's in-memory store and
    fake chat model."""

    def __init__(self) -> None:
        self.traced = Traced()
        self.instrumentor = LangChainInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.traced.provider)
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
        store.add_documents(CORPUS)
        retriever = store.as_retriever(search_kwargs={"k": 4})
        model = FakeListChatModel(responses=REPLIES)

        def retrieve(state: State) -> dict[str, Any]:
            return {"context": retriever.invoke(str(state["messages"][-1].content))}

        def generate(state: State) -> dict[str, Any]:
            context = "\n\n".join(d.page_content for d in state["context"])
            reply = model.invoke([SystemMessage(f"Answer from: {context}"), *state["messages"]])
            return {"messages": [reply]}

        graph = StateGraph(State)
        graph.add_node("retrieve", retrieve)
        graph.add_node("generate", generate)
        graph.add_edge(START, "retrieve")
        graph.add_edge("retrieve", "generate")
        graph.add_edge("generate", END)
        self.graph = graph.compile()

    def ask(self, question: str) -> Request:
        before = len(self.traced.exporter.spans)
        state = self.graph.invoke(State(messages=[HumanMessage(question)], context=[]))
        [root] = [s for s in self.traced.exporter.spans[before:] if s.parent is None]
        assert root.context is not None
        answer = str(state["messages"][-1].content)
        return Request(f"{root.context.trace_id:032x}", question, state["context"], answer)

    def close(self) -> None:
        self.instrumentor.uninstrument()
        self.traced.provider.shutdown()


@pytest.fixture
def graph_app() -> Iterator[GraphApp]:
    app = GraphApp()
    try:
        yield app
    finally:
        app.close()


def _run(engine: Engine, messages: Sequence[Any]) -> None:
    report = engine.apply(messages)
    assert report.invalid == []


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_a_langgraph_root_gives_the_last_human_and_ai_message(
    graph_app: GraphApp, encoding: str
) -> None:
    requests = [graph_app.ask(q) for q in QUESTIONS]
    spans = list(graph_app.traced.exporter.spans)
    roots = [s for s in spans if s.parent is None]
    assert {s.name for s in roots} == {"LangGraph"}
    assert all(
        s.attributes is not None and str(s.attributes["input.value"]).startswith('{"messages"')
        for s in roots
    )
    feedback = feedback_messages(requests, spans, "rag-feedback")
    ours = Engine(engine_config(TOPIC, encoding))
    got = answers(ours, [graph_app.traced.messages(encoding), feedback])
    reference = Engine(engine_config())
    expected = answers(reference, [reference_messages(requests, spans), feedback])
    assert got == expected
    assert [(a.question, a.answer) for a in got] == list(zip(QUESTIONS, REPLIES, strict=True))
    assert_same_state(ours, reference)


class HaystackApp:
    """A Haystack pipeline: an in-memory document store, BM25 retrieval, a chat prompt and
    Haystack's MockChatGenerator (no network)."""

    def __init__(self, ranker: Any = None) -> None:
        self.traced = Traced()
        self.instrumentor = HaystackInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.traced.provider)
        store = InMemoryDocumentStore()
        store.write_documents(
            [
                HaystackDocument(id=d.metadata["doc_id"], content=d.page_content, meta=d.metadata)
                for d in CORPUS
            ]
        )
        pipeline = Pipeline()
        pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=4))
        template = [
            ChatMessage.from_system(
                "Answer from:{% for d in documents %}\n{{ d.content }}{% endfor %}"
            ),
            ChatMessage.from_user("{{ question }}"),
        ]
        pipeline.add_component(
            "prompt", ChatPromptBuilder(template, required_variables=["question", "documents"])
        )
        pipeline.add_component("llm", MockChatGenerator(responses=REPLIES))
        if ranker is None:
            pipeline.connect("retriever.documents", "prompt.documents")
        else:
            pipeline.add_component("ranker", ranker)
            pipeline.connect("retriever.documents", "ranker.documents")
            pipeline.connect("ranker.documents", "prompt.documents")
        pipeline.connect("prompt.prompt", "llm.messages")
        self.pipeline = pipeline

    def ask(self, question: str) -> dict[str, Any]:
        """The pipeline's outputs: the retriever's and the ranker's documents, the reply."""
        out: dict[str, Any] = self.pipeline.run(
            {"retriever": {"query": question}, "prompt": {"question": question}},
            include_outputs_from={"retriever", "ranker"},
        )
        return out

    def close(self) -> None:
        self.instrumentor.uninstrument()
        self.traced.provider.shutdown()


@pytest.fixture
def haystack_app() -> Iterator[HaystackApp]:
    app = HaystackApp()
    try:
        yield app
    finally:
        app.close()


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_a_haystack_root_gives_the_retrievers_query_and_the_last_llm_answer(
    haystack_app: HaystackApp, encoding: str
) -> None:
    outputs = [haystack_app.ask(q) for q in QUESTIONS]
    spans = list(haystack_app.traced.exporter.spans)
    assert {s.name for s in spans if s.parent is None} == {"Pipeline.run"}
    ours = Engine(engine_config(TOPIC, encoding))
    got = answers(ours, [haystack_app.traced.messages(encoding)])
    assert [(a.question, a.answer) for a in got] == [
        (q, out["llm"]["replies"][0].text) for q, out in zip(QUESTIONS, outputs, strict=True)
    ]
    assert [a.answer for a in got] == REPLIES
    for answer, out in zip(got, outputs, strict=True):
        retrieved = out["retriever"]["documents"]
        assert [c["doc_id"] for c in answer.contexts] == [d.id for d in retrieved]
        assert [c["text"] for c in answer.contexts] == [d.content for d in retrieved]
        query = ours.find_query(answer.query_id)
        assert query is not None
        assert list(query.doc_ids) == [d.id for d in retrieved]
    assert ours.events[("retrieval", "processed")] == len(QUESTIONS)
