/* libFuzzer target of ragstream/metrics/_ragged.c (the metric kernels over CSR rankings):
 * rankings, metrics and cutoffs made from the input, the sanitized kernels' values against
 * numpy's, and straight calls with cutoffs past memory's sizes (tests/fuzz/targets.py,
 * `ragged`). */
#include "harness.h"

PyMODINIT_FUNC PyInit__ragged(void);

FUZZ_TARGET("metrics_ragged", {"ragstream.metrics._ragged", PyInit__ragged})
