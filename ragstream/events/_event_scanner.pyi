from collections.abc import Sequence

class Scanned(tuple[object, ...]):
    """A retrieval event the compiled scanner accepted (a struct sequence)."""

    @property
    def query_id(self) -> str: ...
    @property
    def ts(self) -> float: ...
    @property
    def labels(self) -> tuple[str, ...] | None:
        """The values of the event's labels for the keys asked for, in their order ("" for
        a key the event does not carry); None unless keys were given. Events of one call
        with the same values share one tuple."""
    @property
    def top(self) -> bytes:
        """The raw `t_doc` of the first min(top, len(results)) documents as C doubles
        (native order), NaN where the document has none (absent or null)."""
    @property
    def ids(self) -> tuple[str, ...] | None:
        """Every document id of the ranking, in order, when the event carries a label
        (non-empty qrels, or a result with a non-null rel); else None."""
    @property
    def times(self) -> bytes | None:
        """With `ids`: every document's raw `t_doc` as C doubles (NaN where none)."""
    @property
    def qrels(self) -> tuple[tuple[str, float, float | None], ...] | None:
        """(doc_id, rel, t_doc) per qrel in order; None when qrels are absent, null or []."""
    @property
    def inline(self) -> tuple[tuple[str, float, float | None], ...] | None:
        """(doc_id, rel, t_doc) per result whose rel is not null, in order; else None."""
    @property
    def ranked(self) -> bytes | None:
        """`graded` and the event carries a label: per ranked document its grade (0 when
        unjudged), then per ranked document its raw time (a judged one's label time), as C
        doubles; else None."""
    @property
    def judged(self) -> bytes | None:
        """With `ranked`: per judged document (in the order of its first label) its grade,
        then its raw label time (the time sent with its last label that had one, else its
        time in the ranking; NaN: none, the query's ts), as C doubles."""
    @property
    def trace_id(self) -> str | None:
        """The value of the `trace` key when it is a trace id (32 lowercase hex digits, not
        all zero); None otherwise, or without `trace`."""

def scan(
    values: Sequence[bytes | bytearray | None],
    bounds: tuple[int, int, int, int, int, int, int, float, float, float, float],
    top: int,
    keys: tuple[str, ...] | None,
    graded: bool = False,
    trace: str | None = None,
) -> list[Scanned | None]:
    """One item per value: a `Scanned` for a retrieval event of the common shape that
    msgspec's `DecodedRetrieval` would accept with the same values, else None (declined:
    the caller decodes it the usual way). `bounds`: (max_message_bytes, max_results,
    max_qrels, max_text_chars, max_id_chars, max_labels, max_label_chars, min_event_ts,
    min_doc_ts, max_ts, max_abs_rel). `graded`: a labeled event's `ranked` and `judged`
    instead of its `ids`, `times`, `qrels` and `inline`. `trace`: a top-level key the
    schema does not know whose value, when a trace id, a record keeps (`trace_id`); its
    string value with an escape or a non-ASCII byte, or the key given twice, declines."""

def readable(data: object) -> bool:
    """True when `data` is bytes (or a bytearray) of strict UTF-8 in which no value is
    nested in more than 200 arrays or objects (`ragstream.events.guard`)."""
