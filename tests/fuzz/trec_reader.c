/* libFuzzer target of ragstream/trec/_trec_reader.c (`ragstream eval`'s single pass), with the
 * metric kernels it calls (ragstream/metrics/_ragged.c) sanitized too: a qrels and a run file
 * from the input, evaluated by the compiled scanner (memory-mapped, as the command reads
 * them) and by numpy, which must agree, and joined from buffers of exactly their sizes
 * (tests/fuzz/targets.py, `trec`). */
#include "harness.h"

PyMODINIT_FUNC PyInit__trec_reader(void);
PyMODINIT_FUNC PyInit__ragged(void);

FUZZ_TARGET("trec_reader", {"ragstream.trec._trec_reader", PyInit__trec_reader},
            {"ragstream.metrics._ragged", PyInit__ragged})
