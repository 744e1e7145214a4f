"""The contexts judged are the documents the model saw: a reranker's output (Haystack's
MetaFieldRanker, a RERANKER span), or the retrieved documents its prompt quotes (a LangChain
step that keeps the top two); the retrieval event stays the retriever's ranking. A
document's rank is its OpenInference index."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from haystack.components.rankers import MetaFieldRanker
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation.langchain import LangChainInstrumentor

from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from tests.traces._rag import CORPUS
from tests.traces._reference import engine_config
from tests.traces._traced import TOPIC, Traced, answers, span_counts
from tests.traces.test_frameworks import QUESTIONS, REPLIES, HaystackApp
from tests.traces.test_spans import App, _engine, _llm, _retriever

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")


ASKED = ["how to reset a password", "how to close an account", "how to export invoices"]
"""Questions every article matches a little (BM25 returns documents with a score only)."""


@pytest.fixture
def ranked_app() -> Iterator[HaystackApp]:
    app = HaystackApp(ranker=MetaFieldRanker(meta_field="t_doc", top_k=2))
    try:
        yield app
    finally:
        app.close()


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_a_rerankers_output_is_what_the_model_saw(ranked_app: HaystackApp, encoding: str) -> None:
    outputs = [ranked_app.ask(q) for q in ASKED]
    ours = Engine(engine_config(TOPIC, encoding))
    got = answers(ours, [ranked_app.traced.messages(encoding)])
    assert [a.answer for a in got] == REPLIES
    for answer, out in zip(got, outputs, strict=True):
        retrieved, ranked = out["retriever"]["documents"], out["ranker"]["documents"]
        assert len(retrieved) == 4
        assert len(ranked) == 2
        assert [d.id for d in ranked] != [d.id for d in retrieved[:2]]  # it reordered
        assert [(c["doc_id"], c["text"]) for c in answer.contexts] == [
            (d.id, d.content) for d in ranked
        ]
        query = ours.find_query(answer.query_id)
        assert query is not None
        assert list(query.doc_ids) == [d.id for d in retrieved]  # the retriever's ranking
    assert ours.traces is not None
    assert span_counts(ours)[("RERANKER", "read")] == len(ASKED)


QUOTED = [  # text a prompt formatted with str() escapes: quotes, new lines, backslashes
    Document(
        page_content=f"Article {i}:\nit's how to {d.page_content[13:]}\n\t(see C:\\help\\{i})",
        metadata=d.metadata,
    )
    for i, d in enumerate(CORPUS)
]


def _top_two(docs: list[Document]) -> list[Document]:
    """The app's own narrowing: the two documents of the most recent articles."""
    return sorted(docs, key=lambda d: -float(d.metadata["t_doc"]))[:2]


def _joined(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


class NarrowingApp:
    """A LangChain chain that keeps two of the four retrieved documents for its prompt."""

    def __init__(self, fmt: Callable[[list[Document]], Any]) -> None:
        self.traced = Traced()
        self.instrumentor = LangChainInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.traced.provider)
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
        store.add_documents(QUOTED)
        self.store = store
        retriever = store.as_retriever(search_kwargs={"k": 4})
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Answer from these articles: {context}"), ("human", "{question}")]
        )
        self.chain: Runnable[str, str] = (
            {
                "context": retriever | RunnableLambda(_top_two) | RunnableLambda(fmt),
                "question": RunnablePassthrough(),
            }
            | prompt
            | FakeListChatModel(responses=REPLIES)
            | StrOutputParser()
        )

    def close(self) -> None:
        self.instrumentor.uninstrument()
        self.traced.provider.shutdown()


@pytest.mark.parametrize("fmt", [_joined, lambda docs: docs], ids=["joined", "str"])
def test_the_documents_the_prompt_quotes_are_the_contexts(
    fmt: Callable[[list[Document]], Any],
) -> None:
    app = NarrowingApp(fmt)
    try:
        said = [app.chain.invoke(q) for q in QUESTIONS]
        ours = Engine(engine_config(TOPIC))
        got = answers(ours, [app.traced.messages()])
    finally:
        app.close()
    assert [a.answer for a in got] == said
    for answer, question in zip(got, QUESTIONS, strict=True):
        retrieved = app.store.similarity_search(question, k=4)
        seen = _top_two(retrieved)
        assert [(c["doc_id"], c["text"]) for c in answer.contexts] == [
            (d.metadata["doc_id"], d.page_content) for d in retrieved if d in seen
        ]
        query = ours.find_query(answer.query_id)
        assert query is not None
        assert list(query.doc_ids) == [d.metadata["doc_id"] for d in retrieved]


def test_a_prompt_quoting_no_document_narrows_nothing() -> None:
    app = App()
    docs = [{"id": f"d{i}", "content": f"text {i}"} for i in range(3)]
    with app.span("chain", {"openinference.span.kind": "CHAIN"}, root=True):
        with app.span("r", _retriever(docs)):
            pass
        with app.span("llm", _llm("Summaries: none. Question: q?", "an answer")):
            pass
    [answer] = answers(_engine(), [app.messages()])
    assert [c["doc_id"] for c in answer.contexts] == ["d0", "d1", "d2"]


def test_a_documents_rank_is_its_index_not_its_place_among_the_attributes() -> None:
    """Twelve documents (indices 10 and 11 sort before 2 as text), their attributes
    shuffled in the OTLP/JSON message: the ranking and the contexts follow N."""
    app = App()
    docs = [{"id": f"d{i}", "content": f"text {i}", "score": 1.0 - i / 20} for i in range(12)]
    with app.span("r", _retriever(docs), root=True), app.span("llm", _llm("q?", "a")):
        pass
    messages = app.messages("otlp_json")
    rng = random.Random(3)
    shuffled = []
    for m in messages:
        request = json.loads(m.value)
        for rs in request["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    rng.shuffle(span["attributes"])
        shuffled.append(Message(json.dumps(request).encode(), m.partition, m.offset, m.topic))
    ours = _engine(encoding="otlp_json")
    [answer] = answers(ours, [shuffled])
    ranked = [f"d{i}" for i in range(12)]
    assert [c["doc_id"] for c in answer.contexts] == ranked
    query = ours.find_query(answer.query_id)
    assert query is not None
    assert list(query.doc_ids) == ranked


def test_what_the_model_saw_moves_with_the_partition(ranked_app: HaystackApp) -> None:
    """The reranker's documents and the LLM's prompt wait in the open trace: a replica
    that adopts the partition before the root arrives gives the same answers."""
    for question in ASKED:
        ranked_app.ask(question)
    names = [export[0].name for export in ranked_app.traced.exporter.exports]  # one span each
    messages = ranked_app.traced.messages()
    assert len(names) == len(messages)
    pairs = list(zip(names, messages, strict=True))
    first = [m for name, m in pairs if name != "Pipeline.run"]
    last = [m for name, m in pairs if name == "Pipeline.run"]
    whole = Engine(engine_config(TOPIC))
    expected = answers(whole, [messages])
    assert len(expected) == len(ASKED)
    before = Engine(engine_config(TOPIC))
    assert answers(before, [first]) == []
    state = json.loads(json.dumps(before.export_partitions({0})[0]))
    after = Engine(engine_config(TOPIC))
    after.adopt_partition(state)
    assert answers(after, [last]) == expected
