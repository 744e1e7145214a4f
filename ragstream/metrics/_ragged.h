/* The compiled kernels of ragstream.metrics._ragged as other extensions call them.
 *
 * `_ragged.kernel(codes, ks, threshold, discount)` returns a capsule named
 * RAGGED_KERNEL_CAPSULE holding a RaggedKernel: the metrics of a plan (see
 * ragstream.metrics.ragged), for one query at a time. `ragstream.trec._trec_reader` evaluates
 * each query with it as soon as the query is joined, while its grades are in cache,
 * instead of writing them out for a later pass. The capsule owns the kernel: keep a
 * reference to it while calling.
 */
#ifndef RAGSTREAM_RAGGED_H
#define RAGSTREAM_RAGGED_H

#include <stddef.h>
#include <stdint.h>

#define RAGGED_KERNEL_CAPSULE "ragstream.metrics._ragged.kernel"

typedef struct RaggedKernel RaggedKernel;

struct RaggedKernel {
    /* how many metrics: the values a query has */
    int64_t n_metrics;
    /* the room `values` needs for one query's running values (one thread's, reused) */
    size_t scratch_bytes;
    /* The values of one query that ranks rel[0..n) and judged judged[0..m): metric k's at
     * out[k * stride]. 0 when a grade is not finite (nothing is then decided). Pure: threads
     * may call it at once, each with its own scratch. */
    int (*values)(const RaggedKernel *kernel, void *scratch, const double *rel, int64_t n,
                  const double *judged, int64_t m, double *out, int64_t stride);
};

#endif
