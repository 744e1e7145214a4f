/* libFuzzer target for the compiled event scanner (ragstream/events/_event_scanner.c), built with
 * AddressSanitizer and UBSan by scripts/fuzz.sh (docs/testing.md, "Fuzzing the C").
 *
 * It includes the extension's source, so that the scanner and the guard read the fuzzer's
 * own buffer, which is exactly the input's size: a read one byte past the end is caught
 * (a bytes object's trailing NUL and Python's allocator would hide it). Each input is
 * read by the guard, and by the scanner with the schema's caps and with small limits, its
 * records built plain and graded; then once more through the module's `scan` on a bytes
 * object. And it is a differential target: an event the scanner accepts must be one
 * the decoder (`ragstream.events.decode.decode_event`, run in the embedded interpreter)
 * accepts as a retrieval event with the same query id, time, number of results and trace
 * id (its `trace_id` field as `TraceField.of_message` reads it), and one the guard passes;
 * anything else aborts, which libFuzzer reports.
 */
#include "../../ragstream/events/_event_scanner.c"

#include <stdio.h>
#include <stdlib.h>

static Bounds caps, small;
static PyObject *decode_event, *caps_tuple, *keys, *trace_of;
static const Span trace_key = {"trace_id", 8}; /* the trace field read */

static void fail(const char *why, const uint8_t *data, size_t size) {
    fprintf(stderr, "event_scanner: %s on %zu bytes: %.*s\n", why, size, (int)(size < 300 ? size : 300),
            (const char *)data);
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    Py_InitializeEx(0);
    init_stop();
    if (PyStructSequence_InitType2(&ScannedType, &scanned_desc) < 0)
        goto error;
    PyObject *decoder = PyImport_ImportModule("ragstream.events.decode");
    PyObject *scanner = PyImport_ImportModule("ragstream.events.scanner");
    PyObject *limits = PyImport_ImportModule("ragstream.events.limits");
    PyObject *trace_ids = PyImport_ImportModule("ragstream.events.trace_ids");
    if (decoder == NULL || scanner == NULL || limits == NULL || trace_ids == NULL)
        goto error;
    PyObject *field = PyObject_CallMethod(trace_ids, "TraceField", "s", trace_key.s);
    trace_of = field ? PyObject_GetAttrString(field, "of_message") : NULL;
    if (trace_of == NULL)
        goto error;
    decode_event = PyObject_GetAttrString(decoder, "decode_event");
    PyObject *defaults = PyObject_GetAttrString(limits, "DEFAULT_LIMITS");
    caps_tuple = defaults ? PyObject_CallMethod(scanner, "bounds_of", "O", defaults) : NULL;
    keys = Py_BuildValue("(ss)", "app", "k");
    if (decode_event == NULL || caps_tuple == NULL || keys == NULL ||
        !PyArg_ParseTuple(caps_tuple, "nnnnnnndddd", &caps.max_bytes, &caps.max_results,
                          &caps.max_qrels, &caps.max_text, &caps.max_id, &caps.max_labels,
                          &caps.max_label, &caps.min_event_ts, &caps.min_doc_ts, &caps.max_ts,
                          &caps.max_abs_rel))
        goto error;
    small = caps;
    small.max_bytes = 4096;
    small.max_results = 3;
    small.max_qrels = 2;
    small.max_text = 5;
    small.max_id = 4;
    small.max_labels = 2;
    small.max_label = 3;
    return 0;
error:
    PyErr_Print();
    abort();
}

/* The scanner on the buffer itself: OK (the event read, its records built) or DECLINE. */
static int read_event(const uint8_t *data, size_t size, const Bounds *b, Event *ev) {
    Scratch s = {0};
    Keys wanted;
    const char *p = (const char *)data;
    int rc = event(p, p + size, b, trace_key, ev, &s);
    if (rc == OK && (rc = has_repeats(s.docs, ev->docs, &s)) == 0) {
        if (read_keys(keys, &wanted) < 0)
            abort();
        for (int grade = 0; grade < 2; grade++) {
            PyObject *rec = record(ev, &s, 3, grade ? NULL : &wanted, grade);
            if (rec == NULL)
                abort();
            Py_DECREF(rec);
        }
        release_keys(&wanted);
    }
    if (rc == NOMEM)
        abort();
    PyMem_Free(s.docs);
    PyMem_Free(s.qrels);
    PyMem_Free(s.table);
    PyMem_Free(s.jtable);
    PyMem_Free(s.judged);
    return rc == OK ? OK : DECLINE;
}

/* The decoder's verdict on an event the scanner accepted with the schema's caps. */
static void same_as_decoder(const uint8_t *data, size_t size, PyObject *bytes, const Event *ev) {
    if (!readable_bytes(data, (Py_ssize_t)size))
        fail("accepted what the guard refuses", data, size);
    PyObject *decoded = PyObject_CallOneArg(decode_event, bytes);
    if (decoded == NULL)
        fail("accepted what decode_event rejects", data, size);
    PyObject *type = PyObject_GetAttrString(decoded, "type");
    PyObject *query_id = PyObject_GetAttrString(decoded, "query_id");
    PyObject *ts = PyObject_GetAttrString(decoded, "ts");
    PyObject *results = PyObject_GetAttrString(decoded, "results");
    if (type == NULL || query_id == NULL || ts == NULL || results == NULL)
        fail("not a retrieval event for decode_event", data, size);
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(query_id, &n);
    double seconds = PyFloat_AsDouble(ts);
    if (PyUnicode_CompareWithASCIIString(type, "retrieval") != 0 || text == NULL ||
        n != ev->query_id.n || memcmp(text, ev->query_id.s, (size_t)n) != 0 ||
        memcmp(&seconds, &ev->ts, sizeof seconds) != 0 || PyList_GET_SIZE(results) != ev->docs)
        fail("values differ from decode_event's", data, size);
    PyObject *trace = PyObject_CallOneArg(trace_of, bytes); /* msgspec's reading */
    if (trace == NULL)
        fail("TraceField.of_message raised", data, size);
    const char *tid = trace == Py_None ? NULL : PyUnicode_AsUTF8AndSize(trace, &n);
    if ((tid != NULL) != (ev->has_trace != 0) ||
        (tid != NULL && (n != ev->trace.n || memcmp(tid, ev->trace.s, (size_t)n) != 0)))
        fail("the trace id differs from msgspec's", data, size);
    Py_DECREF(trace);
    Py_DECREF(type);
    Py_DECREF(query_id);
    Py_DECREF(ts);
    Py_DECREF(results);
    Py_DECREF(decoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Event ev;
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    if (bytes == NULL)
        abort();
    readable_bytes(data, (Py_ssize_t)size);
    read_event(data, size, &small, &ev);
    if (read_event(data, size, &caps, &ev) == OK)
        same_as_decoder(data, size, bytes, &ev);
    PyObject *args = Py_BuildValue("([O]OnOis)", bytes, caps_tuple, (Py_ssize_t)10, keys, 1,
                                   trace_key.s);
    PyObject *out = args ? scan(NULL, args) : NULL;
    if (out == NULL)
        abort();
    Py_DECREF(out);
    Py_DECREF(args);
    Py_DECREF(bytes);
    return 0;
}
