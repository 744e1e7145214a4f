/* ragstream.metrics._ragged: the metric kernels over rankings held as CSR arrays, compiled.
 *
 * `ragstream eval` joins a hundred thousand queries into CSR arrays (the grades of each
 * query's ranking, and its judged grades); the numpy kernels first pad them into
 * matrices, chunk by chunk, then run two dozen whole-array steps: about 35 ms of two
 * threads on the benchmark collection, a tenth of the command. Here each query is
 * evaluated where it lies, in one pass over its grades, with the same double operations as
 * the numpy kernels (ragstream.metrics.ranking, ragstream.metrics.dcg and their _Context),
 * in the same order:
 *
 * - a document is relevant when its grade is >= the threshold; counts are exact doubles;
 * - precision@k = hits / k, recall@k = hits / judged relevant (0 when none), hit_rate@k =
 *   hits > 0, rr = 1 / (rank of the first relevant), ap = the sum, rank after rank, of
 *   (relevant so far) / rank over the relevant ranks, divided by the judged relevant;
 * - dcg@k = the running sum of max(grade, 0) / log2(rank + 1) over the first min(k, n)
 *   ranks (the discounts are numpy's, handed in), and ndcg@k = dcg@k / idcg@k (0 when
 *   idcg is 0), idcg@k the same running sum over the query's positive judged gains sorted
 *   in descending order.
 *
 * As in numpy's _Context, each query's running counts and sums (relevant documents, DCG,
 * ideal DCG) are made once, as long as the largest cutoff that reads them, and every
 * metric reads its cutoff's column. Each sum adds its terms in the order numpy's running
 * sums and bincount do, so the values are the same bits (tests/metrics compares them with
 * the numpy kernels on random rankings). Only the linear gain and plain (not
 * recency-weighted) forms are here; the caller uses numpy for the others. A grade that is
 * not finite makes the call decline (False): numpy's kernels then give their own result.
 *
 * `kernel` hands the same evaluation, one query at a time, to other extensions (_ragged.h):
 * ragstream.trec._trec_reader evaluates each query with it as soon as it has joined it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_ragged.h"

/* each division and sum rounded on its own, as numpy computes it, never fused */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

enum { RR, AP, PRECISION, RECALL, HIT_RATE, DCG, NDCG, N_FAMILIES };
static const char *const FAMILIES[N_FAMILIES] = {"rr",       "ap",  "precision", "recall",
                                                 "hit_rate", "dcg", "ndcg"};

/* The metrics to compute, read by every query's evaluation. */
typedef struct {
    const unsigned char *codes;
    const int64_t *ks;
    Py_ssize_t n_metrics;
    double threshold;
    const double *discount; /* discount[i] = log2(i + 2), numpy's */
    /* the largest cutoff reading each running value (0: none does) */
    int64_t hits_k, dcg_k, ideal_k;
    int judged_relevant; /* a metric divides by the judged relevant documents */
} Plan;

/* A thread's room for one query's running values, each as long as its largest cutoff. */
typedef struct {
    int64_t *hits;
    double *dcg, *ideal;
} Running;

/* max(v, 0.0), as numpy's maximum of a finite grade and 0 gives it: 0.0 for -0.0 too */
static inline double gain(double v) { return v > 0.0 ? v : 0.0; }

/* The grades >= threshold among v[0..n). */
static inline int64_t relevant(const double *v, int64_t n, double threshold) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += v[i] >= threshold;
    return c;
}

/* out[i] = the relevant documents in the first i + 1 ranks, i < n. */
static inline void running_hits(const double *r, int64_t n, double threshold, int64_t *out) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        c += r[i] >= threshold;
        out[i] = c;
    }
}

/* out[i] = the DCG of the first i + 1 grades, i < n: the first term as it is, then the
 * sum so far plus the next term (out may be g: each grade is read before it is written). */
static inline void running_dcg(const double *g, int64_t n, const double *discount,
                               double *out) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double t = gain(g[i]) / discount[i];
        out[i] = acc = i ? acc + t : t;
    }
}

/* A running value at cutoff k of one n long: at min(k, n), 0 when that is 0. */
static inline int64_t hits_at(const int64_t *running, int64_t n, int64_t k) {
    const int64_t c = k < n ? k : n;
    return c ? running[c - 1] : 0;
}

static inline double sum_at(const double *running, int64_t n, int64_t k) {
    const int64_t c = k < n ? k : n;
    return c ? running[c - 1] : 0.0;
}

#define LEVELS 16 /* integer gains up to this are counted, not sorted */

/* The largest `k` positive gains of judged grades j[0..m), in descending order, in best:
 * their number. Gains of 0 (and negative grades) add nothing to the ideal. Graded
 * judgments take a few integer levels (trec_eval's grades are integers): those are
 * counted level by level, without a branch on each grade; any other gain is sorted in. */
static int64_t top_gains(const double *j, int64_t m, int64_t k, double *best) {
    int64_t counts[LEVELS + 1] = {0};
    int other = 0;
    for (int64_t i = 0; i < m; i++) {
        const double g = gain(j[i]);
        const int small = g <= LEVELS;
        const int level = small ? (int)g : 0;
        const int exact = small && (double)level == g;
        counts[exact ? level : 0]++;
        other |= !exact;
    }
    if (!other) {
        int64_t n = 0;
        for (int level = LEVELS; level > 0 && n < k; level--)
            for (int64_t c = counts[level]; c > 0 && n < k; c--) best[n++] = (double)level;
        return n;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < m; i++) {
        const double g = gain(j[i]);
        if (!(g > 0.0) || (n == k && g <= best[k - 1])) continue;
        int64_t p = n < k ? n++ : k - 1;
        while (p > 0 && best[p - 1] < g) {
            best[p] = best[p - 1];
            p--;
        }
        best[p] = g;
    }
    return n;
}

static int finite_all(const double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static inline double ratio(double a, double b) { return b > 0.0 ? a / b : 0.0; }

/* The values of one query that ranks r[0..n) and judged j[0..m): metric k's at
 * out[k * stride]; 0 when a grade is not finite. */
static int query_values(const Plan *p, const Running *x, const double *r, int64_t n,
                        const double *j, int64_t m, double *out, int64_t stride) {
    const double t = p->threshold;
    if (!finite_all(r, n) || !finite_all(j, m)) return 0;
    const int64_t n_hits = p->hits_k < n ? p->hits_k : n;
    const int64_t n_dcg = p->dcg_k < n ? p->dcg_k : n;
    running_hits(r, n_hits, t, x->hits);
    running_dcg(r, n_dcg, p->discount, x->dcg);
    const int64_t n_ideal = p->ideal_k ? top_gains(j, m, p->ideal_k, x->ideal) : 0;
    running_dcg(x->ideal, n_ideal, p->discount, x->ideal);
    const double judged_relevant = p->judged_relevant ? (double)relevant(j, m, t) : 0.0;
    for (Py_ssize_t k = 0; k < p->n_metrics; k++) {
        const int64_t cutoff = p->ks[k];
        double v = 0.0;
        switch (p->codes[k]) {
        case RR:
            for (int64_t i = 0; i < n; i++)
                if (r[i] >= t) {
                    v = 1.0 / ((double)i + 1.0);
                    break;
                }
            break;
        case AP: {
            double acc = 0.0, seen = 0.0;
            for (int64_t i = 0; i < n; i++)
                if (r[i] >= t) {
                    seen += 1.0;
                    acc += seen / ((double)i + 1.0);
                }
            v = ratio(acc, judged_relevant);
            break;
        }
        case PRECISION:
            v = (double)hits_at(x->hits, n_hits, cutoff) / (double)cutoff;
            break;
        case RECALL:
            v = ratio((double)hits_at(x->hits, n_hits, cutoff), judged_relevant);
            break;
        case HIT_RATE:
            v = hits_at(x->hits, n_hits, cutoff) > 0 ? 1.0 : 0.0;
            break;
        case DCG:
            v = sum_at(x->dcg, n_dcg, cutoff);
            break;
        case NDCG:
            v = ratio(sum_at(x->dcg, n_dcg, cutoff), sum_at(x->ideal, n_ideal, cutoff));
            break;
        }
        out[k * stride] = v;
    }
    return 1;
}

/* The largest cutoff: the three running values' room, (3 * (k + 1)) * 8 bytes, then fits
 * in a size_t and a Py_ssize_t (a cutoff that large fails as MemoryError, not a wrap). */
#define MAX_CUTOFF ((int64_t)(PY_SSIZE_T_MAX / 8 / 3 - 1))

/* The buffer's items can be read as 8-byte numbers where it starts. */
static inline int aligned8(const Py_buffer *b) { return (uintptr_t)b->buf % 8 == 0; }

/* The plan of these buffers (codes one byte a metric, ks int64, discount float64), its
 * running lengths found; -1 with an exception when they do not make one. */
static int plan_init(Plan *p, const Py_buffer *codes, const Py_buffer *ks, double threshold,
                     const Py_buffer *discount) {
    *p = (Plan){.codes = codes->buf,
                .ks = ks->buf,
                .n_metrics = codes->len,
                .threshold = threshold,
                .discount = discount->buf};
    if (ks->len != 8 * codes->len) {
        PyErr_SetString(PyExc_ValueError, "one cutoff a metric");
        return -1;
    }
    if (!aligned8(ks) || !aligned8(discount) || discount->len % 8) {
        PyErr_SetString(PyExc_ValueError, "cutoffs and discounts: aligned 8-byte items");
        return -1;
    }
    const Py_ssize_t n_discount = discount->len / 8;
    for (Py_ssize_t k = 0; k < codes->len; k++) {
        const int code = p->codes[k];
        if (code >= N_FAMILIES) {
            PyErr_Format(PyExc_ValueError, "unknown metric code %d", code);
            return -1;
        }
        const int cut = code != RR && code != AP;
        if (p->ks[k] > MAX_CUTOFF) { /* the running values' room is counted in bytes */
            PyErr_Format(PyExc_ValueError, "a cutoff of at most %lld", (long long)MAX_CUTOFF);
            return -1;
        }
        if (cut != (p->ks[k] > 0)) {
            PyErr_Format(PyExc_ValueError, "%s takes %s", FAMILIES[code],
                         cut ? "a cutoff >= 1" : "no cutoff");
            return -1;
        }
        if ((code == DCG || code == NDCG) && p->ks[k] > n_discount) {
            PyErr_SetString(PyExc_ValueError, "fewer discounts than the cutoff");
            return -1;
        }
        int64_t *longest = code == DCG || code == NDCG ? &p->dcg_k : cut ? &p->hits_k : NULL;
        if (longest && p->ks[k] > *longest) *longest = p->ks[k];
        if (code == NDCG && p->ks[k] > p->ideal_k) p->ideal_k = p->ks[k];
        p->judged_relevant |= code == AP || code == RECALL;
    }
    return 0;
}

/* The room for a query's running values, in one block: hits, then DCG, then ideal DCG. */
static size_t scratch_bytes(const Plan *p) {
    return (size_t)(p->hits_k + p->dcg_k + p->ideal_k + 3) * 8;
}

static Running running_in(const Plan *p, void *scratch) {
    int64_t *hits = scratch;
    double *dcg = (double *)(hits + p->hits_k + 1);
    return (Running){hits, dcg, dcg + p->dcg_k + 1};
}

/* The offsets of rows start..stop within their values: increasing and inside. */
static int offsets_ok(const int64_t *offsets, Py_ssize_t n_offsets, int64_t start, int64_t stop,
                      Py_ssize_t n_values) {
    if (start < 0 || stop < start || stop >= n_offsets) return 0;
    for (int64_t q = start; q < stop; q++)
        if (offsets[q] < 0 || offsets[q + 1] < offsets[q] || offsets[q + 1] > n_values) return 0;
    return 1;
}

PyDoc_STRVAR(ragged_doc,
             "ragged(rel, rel_offsets, judged, judged_offsets, codes, ks, threshold, discount, "
             "out, start, stop) -> bool\n\n"
             "Values of the metrics `codes` (indices into FAMILIES, one byte each) with cutoffs "
             "`ks` (int64, 0 for none) of the CSR rows start..stop (float64 grades, int64 "
             "offsets), written to out (float64, metric after metric, stop - start values "
             "each). `discount`: numpy's log2(i + 2) for i up to the largest dcg or ndcg "
             "cutoff. False, with out partly written, when a grade is not finite.");

static PyObject *ragged(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer rel, rel_offsets, judged, judged_offsets, codes, ks, discount, out;
    double threshold;
    long long start, stop;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*dy*w*LL:ragged", &rel, &rel_offsets, &judged,
                          &judged_offsets, &codes, &ks, &threshold, &discount, &out, &start,
                          &stop))
        return NULL;
    PyObject *result = NULL;
    void *scratch = NULL;
    Plan p;
    const double *r = rel.buf, *j = judged.buf;
    const int64_t *ro = rel_offsets.buf, *jo = judged_offsets.buf;
    if (plan_init(&p, &codes, &ks, threshold, &discount) < 0) goto done;
    if (!aligned8(&rel) || !aligned8(&rel_offsets) || !aligned8(&judged) ||
        !aligned8(&judged_offsets) || !aligned8(&out)) {
        PyErr_SetString(PyExc_ValueError, "grades, offsets and out: aligned 8-byte items");
        goto done;
    }
    if (!offsets_ok(ro, rel_offsets.len / 8, start, stop, rel.len / 8) ||
        !offsets_ok(jo, judged_offsets.len / 8, start, stop, judged.len / 8)) {
        PyErr_SetString(PyExc_ValueError, "offsets outside their values or out of order");
        goto done;
    }
    if (codes.len && out.len / 8 / codes.len < stop - start) {
        PyErr_SetString(PyExc_ValueError, "out is too small");
        goto done;
    }
    if (!(scratch = malloc(scratch_bytes(&p)))) {
        PyErr_NoMemory();
        goto done;
    }
    const Running x = running_in(&p, scratch);
    const int64_t rows = stop - start;
    double *values = out.buf;
    int finished = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t q = start; q < stop && finished; q++)
        finished = query_values(&p, &x, r + ro[q], ro[q + 1] - ro[q], j + jo[q], jo[q + 1] - jo[q],
                                values + (q - start), rows);
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(finished);
done:
    free(scratch);
    PyBuffer_Release(&rel);
    PyBuffer_Release(&rel_offsets);
    PyBuffer_Release(&judged);
    PyBuffer_Release(&judged_offsets);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&ks);
    PyBuffer_Release(&discount);
    PyBuffer_Release(&out);
    return result;
}

/* A plan as another extension calls it (_ragged.h): the kernel first, then the plan over
 * copies of its buffers, in the same allocation. */
typedef struct {
    RaggedKernel kernel;
    Plan plan;
} Kernel;

static int kernel_values(const RaggedKernel *kernel, void *scratch, const double *rel,
                         int64_t n, const double *judged, int64_t m, double *out,
                         int64_t stride) {
    const Plan *p = &((const Kernel *)kernel)->plan;
    const Running x = running_in(p, scratch);
    return query_values(p, &x, rel, n, judged, m, out, stride);
}

static void kernel_free(PyObject *capsule) {
    free(PyCapsule_GetPointer(capsule, RAGGED_KERNEL_CAPSULE));
}

PyDoc_STRVAR(kernel_doc,
             "kernel(codes, ks, threshold, discount) -> capsule\n\n"
             "The metrics `codes` with cutoffs `ks` (as in ragged) for other extensions to "
             "evaluate one query at a time: a capsule named \"" RAGGED_KERNEL_CAPSULE "\" "
             "holding a RaggedKernel (ragstream/metrics/_ragged.h), over copies of the "
             "buffers.");

static PyObject *kernel(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer codes, ks, discount;
    double threshold;
    if (!PyArg_ParseTuple(args, "y*y*dy*:kernel", &codes, &ks, &threshold, &discount))
        return NULL;
    PyObject *result = NULL;
    Plan p;
    if (plan_init(&p, &codes, &ks, threshold, &discount) < 0) goto done;
    /* the kernel, then the codes, cutoffs and discounts it reads (8-byte items first) */
    const size_t n_ks = (size_t)codes.len, n_discount = (size_t)discount.len / 8;
    const size_t bytes = sizeof(Kernel) + 8 * (n_ks + n_discount) + n_ks;
    Kernel *k = malloc(bytes);
    if (!k) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *ks_copy = (int64_t *)(k + 1);
    double *discount_copy = (double *)(ks_copy + n_ks);
    unsigned char *codes_copy = (unsigned char *)(discount_copy + n_discount);
    memcpy(ks_copy, ks.buf, 8 * n_ks);
    memcpy(discount_copy, discount.buf, 8 * n_discount);
    memcpy(codes_copy, codes.buf, n_ks);
    p.ks = ks_copy;
    p.discount = discount_copy;
    p.codes = codes_copy;
    k->plan = p;
    k->kernel = (RaggedKernel){(int64_t)n_ks, scratch_bytes(&p), kernel_values};
    result = PyCapsule_New(k, RAGGED_KERNEL_CAPSULE, kernel_free);
    if (!result) free(k);
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&ks);
    PyBuffer_Release(&discount);
    return result;
}

static PyMethodDef methods[] = {
    {"ragged", ragged, METH_VARARGS, ragged_doc},
    {"kernel", kernel, METH_VARARGS, kernel_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "ragstream.metrics._ragged",
    "The metric kernels over rankings held as CSR arrays, compiled (see ragstream.metrics.ragged).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__ragged(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *names = PyTuple_New(N_FAMILIES);
    if (!names) goto fail;
    for (int i = 0; i < N_FAMILIES; i++) {
        PyObject *name = PyUnicode_FromString(FAMILIES[i]);
        if (!name) {
            Py_DECREF(names);
            goto fail;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    if (PyModule_AddObject(m, "FAMILIES", names) < 0) {
        Py_DECREF(names);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
