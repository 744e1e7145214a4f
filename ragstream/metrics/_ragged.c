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
 * Each sum adds its terms in the order numpy's running sums and bincount do, so the values
 * are the same bits (tests/metrics compares them with the numpy kernels on random
 * rankings). Only the linear gain and plain (not recency-weighted) forms are here; the
 * caller uses numpy for the others. A grade that is not finite makes the call decline
 * (False): numpy's kernels then give their own result.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* each division and sum rounded on its own, as numpy computes it, never fused */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

enum { RR, AP, PRECISION, RECALL, HIT_RATE, DCG, NDCG, N_FAMILIES };
static const char *const FAMILIES[N_FAMILIES] = {"rr",       "ap",  "precision", "recall",
                                                 "hit_rate", "dcg", "ndcg"};

typedef struct {
    const double *rel, *judged;
    const int64_t *rel_offsets, *judged_offsets;
    const unsigned char *codes;
    const int64_t *ks;
    Py_ssize_t n_metrics;
    double threshold;
    const double *discount; /* discount[i] = log2(i + 2), numpy's */
    int64_t ideal_k;        /* the largest k of ndcg: the judged gains kept sorted */
    double *out;            /* out[m * (stop - start) + row - start] */
    int64_t start, stop;
} Plan;

/* max(v, 0.0), as numpy's maximum of a finite grade and 0 */
static inline double gain(double v) { return v >= 0.0 ? v : 0.0; }

/* The relevant documents in the first k ranks (all of them for k = 0). */
static inline int64_t hits(const double *r, int64_t n, int64_t k, double threshold) {
    int64_t stop = k && k < n ? k : n, c = 0;
    for (int64_t i = 0; i < stop; i++) c += r[i] >= threshold;
    return c;
}

/* The running sum of terms t_0, t_1, ...: the first term as it is, then acc + t_i. */
static inline double dcg(const double *g, int64_t n, const double *discount, int is_gain) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double t = (is_gain ? g[i] : gain(g[i])) / discount[i];
        acc = i ? acc + t : t;
    }
    return acc;
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

/* Every metric of every row from start to stop; 0 when a grade is not finite. */
static int evaluate(const Plan *p, double *best) {
    const int64_t rows = p->stop - p->start;
    for (int64_t q = p->start; q < p->stop; q++) {
        const double *r = p->rel + p->rel_offsets[q], *j = p->judged + p->judged_offsets[q];
        const int64_t n = p->rel_offsets[q + 1] - p->rel_offsets[q];
        const int64_t m = p->judged_offsets[q + 1] - p->judged_offsets[q];
        if (!finite_all(r, n) || !finite_all(j, m)) return 0;
        double judged_relevant = -1.0; /* computed when first needed */
        int64_t positive = -1;
        for (Py_ssize_t k = 0; k < p->n_metrics; k++) {
            const int64_t cutoff = p->ks[k];
            double v = 0.0;
            const int code = p->codes[k];
            if ((code == AP || code == RECALL) && judged_relevant < 0.0)
                judged_relevant = (double)hits(j, m, 0, p->threshold);
            switch (code) {
            case RR:
                for (int64_t i = 0; i < n; i++)
                    if (r[i] >= p->threshold) {
                        v = 1.0 / ((double)i + 1.0);
                        break;
                    }
                break;
            case AP: {
                double acc = 0.0, seen = 0.0;
                for (int64_t i = 0; i < n; i++)
                    if (r[i] >= p->threshold) {
                        seen += 1.0;
                        acc += seen / ((double)i + 1.0);
                    }
                v = judged_relevant > 0.0 ? acc / judged_relevant : 0.0;
                break;
            }
            case PRECISION:
                v = (double)hits(r, n, cutoff, p->threshold) / (double)cutoff;
                break;
            case RECALL: {
                const double h = (double)hits(r, n, cutoff, p->threshold);
                v = judged_relevant > 0.0 ? h / judged_relevant : 0.0;
                break;
            }
            case HIT_RATE:
                v = hits(r, n, cutoff, p->threshold) > 0 ? 1.0 : 0.0;
                break;
            case DCG:
                v = dcg(r, cutoff < n ? cutoff : n, p->discount, 0);
                break;
            case NDCG: {
                if (positive < 0) positive = top_gains(j, m, p->ideal_k, best);
                const double ideal = dcg(best, cutoff < positive ? cutoff : positive, p->discount, 1);
                v = ideal > 0.0 ? dcg(r, cutoff < n ? cutoff : n, p->discount, 0) / ideal : 0.0;
                break;
            }
            }
            p->out[k * rows + (q - p->start)] = v;
        }
    }
    return 1;
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
    double *best = NULL;
    Plan p = {
        rel.buf,    judged.buf, rel_offsets.buf, judged_offsets.buf, codes.buf, ks.buf,
        codes.len,  threshold,  discount.buf,    0,                  out.buf,   start,
        stop,
    };
    const Py_ssize_t n_rel = rel.len / 8, n_judged = judged.len / 8;
    const Py_ssize_t n_discount = discount.len / 8;
    if (ks.len != 8 * codes.len) {
        PyErr_SetString(PyExc_ValueError, "one cutoff a metric");
        goto done;
    }
    if (!offsets_ok(p.rel_offsets, rel_offsets.len / 8, start, stop, n_rel) ||
        !offsets_ok(p.judged_offsets, judged_offsets.len / 8, start, stop, n_judged)) {
        PyErr_SetString(PyExc_ValueError, "offsets outside their values or out of order");
        goto done;
    }
    if (out.len / 8 < codes.len * (stop - start)) {
        PyErr_SetString(PyExc_ValueError, "out is too small");
        goto done;
    }
    for (Py_ssize_t k = 0; k < codes.len; k++) {
        const int code = p.codes[k];
        if (code >= N_FAMILIES) {
            PyErr_Format(PyExc_ValueError, "unknown metric code %d", code);
            goto done;
        }
        const int cut = code != RR && code != AP;
        if (cut != (p.ks[k] > 0)) {
            PyErr_Format(PyExc_ValueError, "%s takes %s", FAMILIES[code],
                         cut ? "a cutoff >= 1" : "no cutoff");
            goto done;
        }
        if ((code == DCG || code == NDCG) && p.ks[k] > n_discount) {
            PyErr_SetString(PyExc_ValueError, "fewer discounts than the cutoff");
            goto done;
        }
        if (code == NDCG && p.ks[k] > p.ideal_k) p.ideal_k = p.ks[k];
    }
    if (p.ideal_k && !(best = malloc((size_t)p.ideal_k * sizeof *best))) {
        PyErr_NoMemory();
        goto done;
    }
    int finished;
    Py_BEGIN_ALLOW_THREADS
    finished = evaluate(&p, best);
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(finished);
done:
    free(best);
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

static PyMethodDef methods[] = {
    {"ragged", ragged, METH_VARARGS, ragged_doc},
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
