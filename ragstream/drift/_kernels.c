/* ragstream.drift._kernels: the sequential drift detectors' per-value loops, compiled
 * (the engine feeds them small batches many times a second, where Python's per-value and
 * numpy's per-call costs weigh). The same computations, operation for operation:
 *
 * - adwin_update: `Adwin.update` (river's insert_element, compress_buckets,
 *   delete_element and detect_change), on the detector's bucket rows, which it returns
 *   as new lists.
 * - ph_segment: `PageHinkley._segment_numpy`, the running sums written as the loops that
 *   numpy's cumsum and minimum.accumulate are.
 *
 * Each double operation is the one Python or numpy does, in the same order, so the
 * results are the same bits (tests/drift compares them on random streams). That needs
 * IEEE doubles without contraction of a*b+c into one fused operation: see FP_CONTRACT.
 * Python's own errors are kept: math.log and math.sqrt of a value out of their domain
 * raise ValueError, a division by zero ZeroDivisionError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* a*b+c rounded twice, as Python and numpy compute it, never fused */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

enum { DOWN = 0, UP = 1, BOTH = 2 };
#define MAX_ROWS 63 /* a row holds buckets of 2**row values: the window is below 2**63 */
#define MAX_COUNT (1LL << 62) /* tick, width and their sums stay below 2**63 */

/* ---- ADWIN ------------------------------------------------------------------------------ */

typedef struct {
    double *tot[MAX_ROWS], *m2[MAX_ROWS]; /* row r's buckets, oldest first */
    long long cap[MAX_ROWS];              /* room of row r's arrays (grown as it fills) */
    long long count[MAX_ROWS];
    int rows;
    long long width;
    double total, variance;
    long long limit, max_window;
} Window;

/* Room for `need` buckets in row `row` (a row holds at most max_buckets + 1, which may be
 * large: the room grows as Python's lists do). -1 with MemoryError. */
static int reserve(Window *w, int row, long long need) {
    if (need <= w->cap[row]) return 0;
    long long cap = w->cap[row] ? w->cap[row] : 8;
    while (cap < need) cap = cap > LLONG_MAX / 2 ? need : cap * 2;
    if ((unsigned long long)cap > PY_SSIZE_T_MAX / sizeof(double)) {
        PyErr_NoMemory();
        return -1;
    }
    double *t = realloc(w->tot[row], (size_t)cap * sizeof(double));
    if (t) w->tot[row] = t;
    double *m = t ? realloc(w->m2[row], (size_t)cap * sizeof(double)) : NULL;
    if (m) w->m2[row] = m;
    if (!t || !m) {
        PyErr_NoMemory();
        return -1;
    }
    w->cap[row] = cap;
    return 0;
}

static void window_free(Window *w) {
    for (int r = 0; r < MAX_ROWS; r++) {
        free(w->tot[r]);
        free(w->m2[r]);
    }
}

static inline int push(Window *w, int row, double total, double m2) {
    if (w->count[row] >= w->cap[row] && reserve(w, row, w->count[row] + 1) < 0) return -1;
    w->tot[row][w->count[row]] = total;
    w->m2[row][w->count[row]] = m2;
    w->count[row]++;
    return 0;
}

static inline void shift_out(Window *w, int row, long long n) {
    long long left = w->count[row] - n;
    memmove(w->tot[row], w->tot[row] + n, (size_t)left * sizeof(double));
    memmove(w->m2[row], w->m2[row] + n, (size_t)left * sizeof(double));
    w->count[row] = left;
}

/* Adwin._drop_oldest. -1 with ZeroDivisionError where Python raises it. */
static int drop_oldest(Window *w) {
    int last = w->rows - 1;
    if (!w->count[last]) { /* rows_in refuses an empty row: never, but never a bad shift */
        PyErr_SetString(PyExc_ValueError, "adwin: an empty bucket row");
        return -1;
    }
    double n = (double)(1LL << last);
    double u = w->tot[last][0], v = w->m2[last][0];
    shift_out(w, last, 1);
    double mu = u / n;
    w->width -= 1LL << last;
    w->total -= u;
    double width = (double)w->width;
    if (width == 0.0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
        return -1;
    }
    double mu_window = w->total / width;
    w->variance -= v + n * width * (mu - mu_window) * (mu - mu_window) / (n + width);
    if (!w->count[last] && last > 0) w->rows--;
    return 0;
}

/* Adwin._insert of xs[start:stop]. */
static int insert(Window *w, const double *xs, Py_ssize_t start, Py_ssize_t stop) {
    for (Py_ssize_t j = start; j < stop; j++) {
        double value = xs[j];
        if (w->width) {
            double dv = value - w->total / (double)w->width;
            w->variance += (double)w->width * dv * dv / (double)(w->width + 1);
        }
        w->width += 1;
        w->total += value;
        if (push(w, 0, value, 0.0) < 0) return -1;
        if (w->count[0] > w->limit) {
            int idx = 0;
            for (;;) {
                double size = (double)(1LL << idx);
                const double *t = w->tot[idx], *m = w->m2[idx];
                double mu1 = t[0] / size, mu2 = t[1] / size;
                double merged_total = t[0] + t[1];
                double merged_m2 = m[0] + m[1] + size * 0.5 * (mu1 - mu2) * (mu1 - mu2);
                shift_out(w, idx, 2);
                idx += 1;
                if (idx == w->rows) {
                    if (idx == MAX_ROWS) {
                        PyErr_SetString(PyExc_OverflowError, "adwin window too large");
                        return -1;
                    }
                    w->count[idx] = 0;
                    w->rows++;
                }
                if (push(w, idx, merged_total, merged_m2) < 0) return -1;
                if (w->count[idx] <= w->limit) break;
            }
        }
        while (w->width > w->max_window)
            if (drop_oldest(w) < 0) return -1;
    }
    return 0;
}

static int domain_error(void) {
    PyErr_SetString(PyExc_ValueError, "math domain error");
    return -1;
}

/* Adwin._check: 1 at the first cut that is a change, 0 if none, -1 on error; *score as
 * the Python sets it. */
static int check(const Window *w, double lmin, double delta, int direction, double *score) {
    double width = (double)w->width;
    double inner = log(width); /* width >= 1 */
    if (!(2.0 * inner / delta > 0.0)) return domain_error();
    double delta_prime = log(2.0 * inner / delta);
    double var = w->variance / width;
    double n0 = 0.0, n1 = width, u0 = 0.0, u1 = w->total, best = -INFINITY;
    for (int idx = w->rows - 1; idx >= 0; idx--) {
        double size = (double)(1LL << idx);
        long long count = w->count[idx];
        if (idx == 0 && count > 0) count--; /* no cut after the newest value */
        const double *totals = w->tot[idx];
        for (long long k = 0; k < count; k++) {
            double t = totals[k];
            n0 += size;
            n1 -= size;
            u0 += t;
            u1 -= t;
            if (n1 < lmin || n0 < lmin) continue;
            double diff = u0 / n0 - u1 / n1;
            if (direction == UP) diff = -diff;
            else if (direction == BOTH) diff = fabs(diff);
            double m = 1.0 / (n0 - lmin + 1.0) + 1.0 / (n1 - lmin + 1.0);
            double radicand = 2.0 * m * var * delta_prime;
            if (radicand < 0.0) return domain_error();
            double eps = sqrt(radicand) + 2.0 / 3.0 * delta_prime * m;
            double ratio = diff / eps;
            if (ratio > best) {
                best = ratio;
                if (diff > eps) {
                    *score = ratio;
                    return 1;
                }
            }
        }
    }
    if (best > -INFINITY) *score = best;
    return 0;
}

/* The rows as Python keeps them: [(totals, m2s), ...] of floats. NULL on error. */
static PyObject *rows_out(const Window *w) {
    PyObject *rows = PyList_New(w->rows);
    if (!rows) return NULL;
    for (int r = 0; r < w->rows; r++) {
        PyObject *t = PyList_New((Py_ssize_t)w->count[r]), *m = PyList_New((Py_ssize_t)w->count[r]);
        PyObject *pair = t && m ? PyTuple_Pack(2, t, m) : NULL;
        Py_XDECREF(t);
        Py_XDECREF(m);
        if (!pair) {
            Py_DECREF(rows);
            return NULL;
        }
        PyList_SET_ITEM(rows, r, pair);
        const double *tr = w->tot[r], *mr = w->m2[r];
        for (long long k = 0; k < w->count[r]; k++) {
            PyObject *a = PyFloat_FromDouble(tr[k]), *b = PyFloat_FromDouble(mr[k]);
            if (!a || !b) {
                Py_XDECREF(a);
                Py_XDECREF(b);
                Py_DECREF(rows);
                return NULL;
            }
            PyList_SET_ITEM(t, (Py_ssize_t)k, a);
            PyList_SET_ITEM(m, (Py_ssize_t)k, b);
        }
    }
    return rows;
}

/* The rows from Python, checked as Adwin.restore checks a snapshot's: 1 to 63 rows of
 * equal-length lists of floats, at most max_buckets a row, none empty but a lone row 0,
 * their sizes adding up to the width. -1 with ValueError otherwise: the loop's shifts
 * and drops rely on it. */
static int rows_in(Window *w, PyObject *rows) {
    if (!PyList_Check(rows) || PyList_GET_SIZE(rows) < 1 || PyList_GET_SIZE(rows) > MAX_ROWS) {
        PyErr_SetString(PyExc_ValueError, "adwin rows: a list of 1 to 63 (totals, m2s) pairs");
        return -1;
    }
    w->rows = (int)PyList_GET_SIZE(rows);
    long long width = 0;
    for (int r = 0; r < w->rows; r++) {
        PyObject *pair = PyList_GET_ITEM(rows, r);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_ValueError, "adwin rows: (totals, m2s) pairs");
            return -1;
        }
        PyObject *t = PyTuple_GET_ITEM(pair, 0), *m = PyTuple_GET_ITEM(pair, 1);
        if (!PyList_Check(t) || !PyList_Check(m) || PyList_GET_SIZE(t) != PyList_GET_SIZE(m) ||
            PyList_GET_SIZE(t) > w->limit || (PyList_GET_SIZE(t) == 0 && w->rows > 1)) {
            PyErr_SetString(PyExc_ValueError,
                            "adwin rows: lists of equal length, 1 to max_buckets long");
            return -1;
        }
        const long long n = PyList_GET_SIZE(t);
        if (n > (MAX_COUNT - width) >> r) {
            PyErr_SetString(PyExc_ValueError, "adwin rows: too many values");
            return -1;
        }
        width += n << r;
        if (reserve(w, r, n + 1) < 0) return -1;
        w->count[r] = n;
        double *tr = w->tot[r], *mr = w->m2[r];
        for (Py_ssize_t k = 0; k < n; k++) { /* floats only: no Python code runs meanwhile */
            PyObject *a = PyList_GET_ITEM(t, k), *b = PyList_GET_ITEM(m, k);
            if (!PyFloat_Check(a) || !PyFloat_Check(b)) {
                PyErr_SetString(PyExc_TypeError, "adwin rows: lists of floats");
                return -1;
            }
            tr[k] = PyFloat_AS_DOUBLE(a);
            mr[k] = PyFloat_AS_DOUBLE(b);
        }
    }
    if (width != w->width) {
        PyErr_SetString(PyExc_ValueError, "adwin rows: sizes do not add up to the width");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(adwin_update_doc,
"adwin_update(rows, values, width, total, variance, tick, score, clock, grace_period,\n"
"             max_buckets, max_window, min_window_length, delta, direction)\n"
"-> (rows, width, total, variance, tick, score, offsets)\n\n"
"Adwin.update's loop on float64 `values` (finite, C-contiguous) from the given state;\n"
"direction 0 down, 1 up, 2 both. The rows are returned as new lists; `offsets`, the\n"
"offsets of the values at which a change was detected.");

static PyObject *adwin_update(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *rows;
    Py_buffer values;
    Window w = {0};
    long long tick, clock, grace, min_length;
    double score, delta;
    int direction;
    if (!PyArg_ParseTuple(args, "Oy*LddLdLLLLLdi:adwin_update", &rows, &values, &w.width,
                          &w.total, &w.variance, &tick, &score, &clock, &grace, &w.limit,
                          &w.max_window, &min_length, &delta, &direction))
        return NULL;
    PyObject *result = NULL, *offsets = NULL, *out_rows = NULL;
    const Py_ssize_t n = values.len / (Py_ssize_t)sizeof(double);
    if (values.len % (Py_ssize_t)sizeof(double) || (uintptr_t)values.buf % _Alignof(double) ||
        clock < 1 || w.limit < 2 || min_length < 1 || grace < 0 ||
        w.width < 0 || w.width > w.max_window || tick < 0 || tick > MAX_COUNT - n ||
        !(delta > 0.0 && delta < 1.0) || direction < DOWN || direction > BOTH) {
        PyErr_SetString(PyExc_ValueError, "adwin_update: bad arguments");
        goto done;
    }
    offsets = PyList_New(0);
    if (!offsets || rows_in(&w, rows) < 0) goto done;
    const double *xs = values.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!isfinite(xs[i])) {
            PyErr_SetString(PyExc_ValueError, "adwin_update: values must be finite");
            goto done;
        }
    const double lmin = (double)min_length;
    for (Py_ssize_t i = 0; i < n;) {
        const long long room = clock - tick % clock; /* >= 1; i + room may pass 2**63 */
        const Py_ssize_t stop = room < (long long)(n - i) ? i + (Py_ssize_t)room : n;
        if (insert(&w, xs, i, stop) < 0) goto done;
        tick += stop - i;
        i = stop;
        if (tick % clock == 0 && w.width > grace) {
            int found = check(&w, lmin, delta, direction, &score);
            if (found < 0) goto done;
            if (found) {
                PyObject *at = PyLong_FromSsize_t(i - 1);
                if (!at || PyList_Append(offsets, at) < 0) {
                    Py_XDECREF(at);
                    goto done;
                }
                Py_DECREF(at);
                w.rows = 1; /* emptied: the detector starts again */
                w.count[0] = w.width = tick = 0;
                w.total = w.variance = 0.0;
            }
        }
    }
    out_rows = rows_out(&w);
    if (out_rows)
        result = Py_BuildValue("(OLddLdO)", out_rows, w.width, w.total, w.variance, tick, score,
                               offsets);
done:
    Py_XDECREF(out_rows);
    Py_XDECREF(offsets);
    window_free(&w);
    PyBuffer_Release(&values);
    return result;
}

/* ---- Page-Hinkley ----------------------------------------------------------------------- */

/* np.maximum: NaN when either is NaN */
static inline double maximum(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    return a > b ? a : b;
}

static inline double minimum(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    return a < b ? a : b;
}

/* One side's Lindley recursion as `_lindley` computes it: s = g0 + cumsum(steps), then
 * s - min(minimum.accumulate(s), 0). */
typedef struct {
    double g0, sum, low, out;
    int started;
} Side;

static inline double side_step(Side *s, double step) {
    s->sum = s->started ? s->sum + step : step;
    double at = s->g0 + s->sum;
    s->low = s->started ? minimum(s->low, at) : at;
    s->started = 1;
    s->out = at - minimum(s->low, 0.0);
    return s->out;
}

PyDoc_STRVAR(ph_segment_doc,
"ph_segment(values, n, mean, m2, g_down, g_up, delta, threshold, min_instances, min_std,\n"
"           watch_down, watch_up) -> (hit, n, mean, m2, g_down, g_up)\n\n"
"PageHinkley._segment_numpy on float64 `values` (finite, at least one) from the given\n"
"state: `hit`, the offset of the first alarm (the state is returned as given), or -1\n"
"with the state advanced past the values.");

static PyObject *ph_segment(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer values;
    long long n0, min_instances;
    double mean0, m2_0, g_down0, g_up0, delta, threshold, min_std;
    int watch_down, watch_up;
    if (!PyArg_ParseTuple(args, "y*LddddddLdpp:ph_segment", &values, &n0, &mean0, &m2_0,
                          &g_down0, &g_up0, &delta, &threshold, &min_instances, &min_std,
                          &watch_down, &watch_up))
        return NULL;
    const double *x = values.buf;
    const Py_ssize_t m = values.len / (Py_ssize_t)sizeof(double);
    if (m < 1 || values.len % (Py_ssize_t)sizeof(double) ||
        (uintptr_t)values.buf % _Alignof(double) || n0 < 0 || n0 > MAX_COUNT - m) {
        PyBuffer_Release(&values);
        PyErr_SetString(PyExc_ValueError, "ph_segment: bad arguments");
        return NULL;
    }
    const double shift = n0 > 0 ? mean0 : x[0];
    /* active.any(): the last value's count reaches min_instances */
    const int any_active = (double)n0 + (double)(m - 1) >= (double)min_instances;
    Side down = {g_down0, 0.0, 0.0, g_down0, 0}, up = {g_up0, 0.0, 0.0, g_up0, 0};
    double cs = 0.0, cs2 = 0.0; /* cumsum(y), cumsum(y * y) through the previous value */
    Py_ssize_t hit = -1;
    for (Py_ssize_t i = 0; i < m; i++) {
        const double y = x[i] - shift;
        if (any_active) {
            const double before = i ? cs : 0.0, before2 = i ? cs2 : 0.0;
            const double nj = (double)n0 + (double)i;
            const int active = nj >= (double)min_instances;
            const double mean = shift + before / nj;
            const double m2 = m2_0 + before2 - before * before / nj;
            const double std = sqrt(maximum(m2, 0.0) / (nj - 1.0));
            const double zz = (x[i] - mean) / maximum(std, min_std);
            const double z = active ? zz : 0.0;
            int over = 0;
            if (watch_down) over |= side_step(&down, active ? -z - delta : 0.0) > threshold;
            if (watch_up) over |= side_step(&up, active ? z - delta : 0.0) > threshold;
            if (over) {
                hit = i;
                break;
            }
        }
        cs = i ? cs + y : y;
        cs2 = i ? cs2 + y * y : y * y;
    }
    PyBuffer_Release(&values);
    if (hit >= 0) return Py_BuildValue("(nLdddd)", hit, n0, mean0, m2_0, g_down0, g_up0);
    const long long total = n0 + (long long)m;
    const double mean = shift + cs / (double)total;
    /* Python's `cs ** 2` is libm's pow(cs, 2.0), which may differ from cs * cs in the last
     * bit: the exponent is read from memory so that the compiler does not make it cs * cs */
    volatile double two = 2.0;
    const double square = pow(cs, two);
    if (isinf(square) && isfinite(cs)) { /* Python's float ** raises where libm overflows */
        PyErr_SetString(PyExc_OverflowError, "(34, 'Numerical result out of range')");
        return NULL;
    }
    const double m2 = m2_0 + cs2 - square / (double)total;
    return Py_BuildValue("(nLdddd)", (Py_ssize_t)-1, total, mean, m2,
                         any_active && watch_down ? down.out : g_down0,
                         any_active && watch_up ? up.out : g_up0);
}

static PyMethodDef methods[] = {
    {"adwin_update", adwin_update, METH_VARARGS, adwin_update_doc},
    {"ph_segment", ph_segment, METH_VARARGS, ph_segment_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "ragstream.drift._kernels",
    .m_doc = "The sequential drift detectors' loops, compiled (see _kernels.c).", .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
