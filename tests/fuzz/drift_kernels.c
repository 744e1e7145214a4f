/* libFuzzer target of ragstream/drift/_kernels.c (ADWIN's and Page-Hinkley's loops): mutated
 * detector snapshots restored, or refused, then fed values by the sanitized compiled loop
 * and by the Python loop, which must agree (tests/fuzz/targets.py, `drift`). */
#include "harness.h"

PyMODINIT_FUNC PyInit__kernels(void);

FUZZ_TARGET("drift_kernels", {"ragstream.drift._kernels", PyInit__kernels})
