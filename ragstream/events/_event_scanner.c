/* ragstream.events._event_scanner: the compiled first pass over retrieval events.
 *
 * scan(values, bounds, top, keys, graded, trace) reads each message (UTF-8 JSON bytes) once and, for a
 * retrieval event of the common shape, returns a small `Scanned` record with what the
 * engine reads when it opens a query (see _event_scanner.pyi); for anything else it returns None
 * and the caller decodes the message with msgspec as before. The labels it returns are
 * the values of `keys` only (the label keys the engine exports), as one tuple; events with
 * the same values share one tuple and its strings within a call.
 *
 * It accepts a strict subset of what msgspec's `DecodedRetrieval` accepts, with the same
 * values, and declines the rest:
 *   - the keys type, query_id, ts, labels, query, results, qrels at the top, doc_id, score,
 *     t_doc, rel in a result and doc_id, rel, t_doc in a qrel, each at most once; any other
 *     key (the schema ignores it) is skipped with its value, which must be JSON as msgspec
 *     checks it (see skip_value: any type, escapes, UTF-8, nesting within the guard's
 *     depth); the keys of the event, a result or a qrel in printable ASCII without escapes;
 *   - ids, label keys and values: printable ASCII without escapes; free text (`query`): any
 *     JSON string, escapes and strict UTF-8 checked and code points counted;
 *   - numbers: JSON's grammar; an integer of at most 18 digits is converted exactly (so
 *     -0 is 0, as msgspec reads an integer); another number goes through Clinger's fast
 *     path when its digits and exponent allow it (one exact IEEE operation: the correctly
 *     rounded value) or else PyOS_string_to_double (Python's correctly rounded conversion);
 *     a number that is not finite declines;
 *   - a repeated document id in the results declines (the ranking would need deduplication);
 *   - `trace` (None, or a top-level key the schema does not know): that key's value is kept
 *     when it is a string that is a trace id; a string with an escape or a non-ASCII byte
 *     declines, any other value is skipped as an unknown key's (no trace id).
 * Bounds (lengths, counts, time and grade ranges) are checked as msgspec's constraints are.
 * The values are built only once the whole message has been validated. Runs of printable
 * ASCII are compared 16 bytes at a time (SSE2, where there is), and the bytes of the
 * messages ahead are prefetched while one is read.
 *
 * readable(data) is the guard in front of msgspec (see ragstream/events/guard.py): strict
 * UTF-8 throughout, and no value nested in more than 200 arrays or objects.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#define FAST_DOUBLES 0
#else
#define FAST_DOUBLES 1
#endif

enum { OK = 0, DECLINE = 1, NOMEM = -1 };

#define MAX_DEPTH 200 /* the deepest a value may be nested (guard.MAX_DEPTH) */

typedef struct {
    Py_ssize_t max_bytes, max_results, max_qrels, max_text, max_id, max_labels, max_label;
    double min_event_ts, min_doc_ts, max_ts, max_abs_rel;
} Bounds;

typedef struct {
    const char *s;
    Py_ssize_t n;
} Span;

typedef struct {
    Span id;
    double t_doc; /* NaN: absent or null */
    double rel;
    int has_rel;
    int has_t_doc;
} Item;

/* Per-call scratch space, grown as needed and reused for every message of a batch. */
typedef struct {
    Item *docs;
    Py_ssize_t docs_cap;
    Item *qrels;
    Py_ssize_t qrels_cap;
    uint32_t *table;
    Py_ssize_t table_cap;
    size_t table_mask; /* of the ranking's ids in `table` (0: no table, under 2 documents) */
    uint32_t *jtable; /* judged documents by id (slot = index + 1), for `graded` */
    Py_ssize_t jtable_cap;
    struct Judged *judged;
    Py_ssize_t judged_cap;
} Scratch;

/* A judged document of a graded event: its last grade, its raw label time, and its place
 * in the ranking (-1: not ranked). */
typedef struct Judged {
    Span id;
    double rel;
    double t;
    Py_ssize_t at;
} Judged;

typedef struct {
    Span query_id;
    Span trace; /* the trace field's value, when it is a trace id (has_trace) */
    int has_trace;
    double ts;
    Span label_keys[64];
    Span label_values[64];
    Py_ssize_t labels;
    Py_ssize_t docs;
    Py_ssize_t qrels;
    int has_qrels; /* a qrels list (possibly empty) was given */
} Event;

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static PyTypeObject ScannedType;
enum { FIELDS = 11 }; /* of a Scanned record */

/* -- tokens ------------------------------------------------------------------------------- */

static inline const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* STOP[c]: the byte ends a plain string's run of printable ASCII: the closing quote (1),
 * or anything the scanner does not read in an id (2: a backslash, a control character, DEL,
 * a non-ASCII byte). One table lookup a byte instead of four comparisons. */
static unsigned char STOP[256];

static void init_stop(void) {
    for (int c = 0; c < 256; c++)
        STOP[c] = (c < 0x20 || c >= 0x7f || c == '\\') ? 2 : 0;
    STOP['"'] = 1;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Past the run of printable ASCII at p (bytes whose STOP is 0): 16 bytes at a time with
 * SSE2 where there is (every x86-64), comparing each with the bytes that stop it (below
 * 0x20 or 0x80 and above, as signed bytes; DEL, a quote, a backslash); then byte by byte. */
static inline const char *plain_run(const char *p, const char *end) {
#ifdef __SSE2__
    const __m128i space = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f);
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(x, space), _mm_cmpeq_epi8(x, del)),
                                    _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)));
        int mask = _mm_movemask_epi8(stop);
        if (mask)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && !STOP[(unsigned char)*p])
        p++;
    return p;
}

/* A string of printable ASCII without escapes: its span (quotes excluded). */
static inline int plain_string(const char **pp, const char *end, Span *out) {
    const char *p = *pp;
    if (p >= end || *p != '"')
        return DECLINE;
    const char *start = ++p;
    p = plain_run(p, end);
    if (p >= end || STOP[(unsigned char)*p] != 1)
        return DECLINE;
    out->s = start;
    out->n = p - start;
    *pp = p + 1;
    return OK;
}

static int hex4(const char *p, const char *end, unsigned *out) {
    unsigned v = 0;
    if (end - p < 4)
        return DECLINE;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return DECLINE;
    }
    *out = v;
    return OK;
}

/* The length of the UTF-8 sequence at p (its first byte >= 0x80), or 0 when it is not
 * strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static inline Py_ssize_t utf8_sequence(const unsigned char *p, const unsigned char *e) {
    unsigned c = *p;
    if (c >= 0xC2 && c <= 0xDF)
        return e - p >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        return (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) ? 0 : 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80)
            return 0;
        return (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90) ? 0 : 4;
    }
    return 0;
}

/* Any JSON string, checked (escapes, strict UTF-8) and measured in code points (a string
 * that is not kept: `max_chars` PY_SSIZE_T_MAX). */
static int text_string(const char **pp, const char *end, Py_ssize_t max_chars) {
    const unsigned char *p = (const unsigned char *)*pp;
    const unsigned char *e = (const unsigned char *)end;
    Py_ssize_t chars = 0;
    if (p >= e || *p != '"')
        return DECLINE;
    p++;
    while (p < e) {
        unsigned c = *p;
        if (c == '"') {
            if (chars > max_chars)
                return DECLINE;
            *pp = (const char *)(p + 1);
            return OK;
        }
        if (!STOP[c]) { /* a run of printable ASCII */
            const unsigned char *run = p;
            p = (const unsigned char *)plain_run((const char *)p, end);
            chars += p - run;
            continue;
        }
        chars++;
        if (c < 0x20)
            return DECLINE;
        if (c < 0x80) {
            if (c != '\\') {
                p++; /* DEL */
                continue;
            }
            if (e - p < 2)
                return DECLINE;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            case 'u': {
                unsigned u, low;
                if (hex4((const char *)p + 2, end, &u))
                    return DECLINE;
                p += 6;
                if (u >= 0xDC00 && u <= 0xDFFF)
                    return DECLINE; /* a lone low surrogate */
                if (u >= 0xD800 && u <= 0xDBFF) {
                    if (e - p < 6 || p[0] != '\\' || p[1] != 'u' ||
                        hex4((const char *)p + 2, end, &low) || low < 0xDC00 || low > 0xDFFF)
                        return DECLINE;
                    p += 6;
                }
                continue;
            }
            default:
                return DECLINE;
            }
        }
        Py_ssize_t n = utf8_sequence(p, e);
        if (n == 0)
            return DECLINE;
        p += n;
    }
    return DECLINE;
}

/* -- numbers ------------------------------------------------------------------------------ */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
static const uint64_t POW10_INT[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                      100000000};

/* The run of ASCII digits at p, up to 8 of them, read 8 bytes at a time (there must be 8):
 * how many (0-8) and, in *value, their value (the first the most significant digit). The
 * first byte that is not a digit is found exactly: a carry out of adding 6 to a later byte
 * never reaches an earlier one (the bytes are little-endian). */
static inline int digit_run(const char *p, uint64_t *value) {
    uint64_t x;
    memcpy(&x, p, sizeof x);
    const uint64_t high = UINT64_C(0xF0F0F0F0F0F0F0F0), threes = UINT64_C(0x3030303030303030);
    /* a byte is nonzero where it is not 0x30..0x39 */
    uint64_t other = ((x & high) ^ threes) | (((x + UINT64_C(0x0606060606060606)) & high) ^ threes);
    int count = other ? __builtin_ctzll(other) >> 3 : 8;
    if (count == 0)
        return 0;
    x -= threes;
    if (count < 8)
        x <<= 8 * (8 - count); /* the digits at the top, zeros (leading zeros) below */
    x = x * 10 + (x >> 8); /* pairs: byte 2i holds digits 2i, 2i+1 as a number < 100 */
    x = (((x & UINT64_C(0x000000FF000000FF)) * (100 + (UINT64_C(1000000) << 32))) +
         (((x >> 16) & UINT64_C(0x000000FF000000FF)) * (1 + (UINT64_C(10000) << 32)))) >>
        32;
    *value = x & UINT64_C(0xFFFFFFFF);
    return count;
}

/* The digits at *pp taken into the mantissa in runs of up to 8 while they fit in its 19
 * digits (the caller takes the rest one by one): how many, *pp past them. */
static inline int digit_runs(const char **pp, const char *end, uint64_t *mantissa,
                             int *digits) {
    const char *p = *pp;
    uint64_t run;
    int n, taken = 0;
    while (*digits <= 11 && end - p >= 8 && (n = digit_run(p, &run)) > 0) {
        *mantissa = *mantissa * POW10_INT[n] + run; /* digits + n <= 19: no overflow */
        *digits += n;
        p += n;
        taken += n;
        if (n < 8)
            break;
    }
    *pp = p;
    return taken;
}
#else
static inline int digit_runs(const char **pp, const char *end, uint64_t *mantissa,
                             int *digits) {
    (void)pp, (void)end, (void)mantissa, (void)digits;
    return 0; /* digit by digit */
}
#endif

#ifdef __GNUC__
#define ALWAYS_INLINE inline __attribute__((always_inline)) /* `keep` folded at each call */
#else
#define ALWAYS_INLINE inline
#endif

#define MAX_EXPONENT INT64_C(1000000000000000) /* 10^15: far beyond any message's length */

/* A JSON number token as its one walk over the grammar finds it: where it ends, its form
 * and, when the walk takes its value (`keep`), mantissa * 10^exp10 with the significant
 * digits past the mantissa's 19 counted in `dropped` (the conversion then goes the slow
 * way). */
typedef struct {
    const char *start, *end;
    Py_ssize_t integer_digits; /* before the point */
    uint64_t mantissa;         /* the first 19 significant digits */
    Py_ssize_t dropped;        /* significant digits beyond them */
    int64_t exp10;             /* decimal exponent of the mantissa (saturated: see below) */
    int negative, is_int, has_exponent;
} Number;

static inline int is_digit(const char *p, const char *end) {
    return p < end && *p >= '0' && *p <= '9';
}

/* The number token at *pp, of any magnitude: DECLINE when it is not JSON's grammar
 * (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?); else *pp past it and `*t` filled, its
 * value with it when `keep` (a constant at each call: the walk of a value not kept only
 * passes the digits over). */
static ALWAYS_INLINE int number_token(const char **pp, const char *end, int keep, Number *t) {
    const char *p = *pp;
    uint64_t mantissa = 0;
    int digits = 0;
    Py_ssize_t dropped = 0;
    int64_t exp10 = 0;
    t->start = p;
    t->negative = 0;
    if (p < end && *p == '-') {
        t->negative = 1;
        p++;
    }
    if (p >= end)
        return DECLINE;
    t->integer_digits = 1;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        const char *first = p;
        if (keep)
            digit_runs(&p, end, &mantissa, &digits);
        for (; is_digit(p, end); p++) {
            if (!keep)
                continue;
            if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                digits++;
            } else {
                dropped++;
                exp10++;
            }
        }
        t->integer_digits = p - first;
    } else {
        return DECLINE;
    }
    t->is_int = 1;
    if (p < end && *p == '.') {
        t->is_int = 0;
        if (!is_digit(++p, end))
            return DECLINE;
        if (keep && mantissa != 0) /* past leading zeros every digit counts (as below) */
            exp10 -= digit_runs(&p, end, &mantissa, &digits);
        for (; is_digit(p, end); p++) {
            if (!keep)
                continue;
            if (mantissa == 0 && *p == '0') {
                exp10--; /* leading zeros of the fraction are not significant */
            } else if (digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
                digits++;
                exp10--;
            } else {
                dropped++;
            }
        }
    }
    t->has_exponent = p < end && (*p == 'e' || *p == 'E');
    if (t->has_exponent) {
        int64_t e = 0;
        int e_negative = ++p < end && *p == '-';
        t->is_int = 0;
        p += p < end && (*p == '+' || *p == '-');
        if (!is_digit(p, end))
            return DECLINE;
        /* saturated, not clamped: an exponent past 10^15 leaves a value that no fraction
         * brings back to the fast path's range, which then declines */
        for (; is_digit(p, end); p++)
            e = e < MAX_EXPONENT ? e * 10 + (*p - '0') : MAX_EXPONENT;
        exp10 += e_negative ? -e : e;
    }
    *pp = t->end = p;
    t->mantissa = mantissa;
    t->dropped = dropped;
    t->exp10 = exp10;
    return OK;
}

/* The token of n bytes at s read by Python's correctly rounded conversion, when it is
 * shorter than 64 bytes and finite (else DECLINE). */
static int python_number(const char *s, Py_ssize_t n, double *out) {
    char buffer[64];
    if (n >= (Py_ssize_t)sizeof buffer)
        return DECLINE;
    memcpy(buffer, s, (size_t)n);
    buffer[n] = '\0';
    char *stop = NULL;
    double v = PyOS_string_to_double(buffer, &stop, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return DECLINE;
    }
    if (stop != buffer + n || !isfinite(v))
        return DECLINE;
    *out = v;
    return OK;
}

/* A JSON number as a finite double (see the header for the conversions). */
static int number(const char **pp, const char *end, double *out) {
    Number t;
    if (number_token(pp, end, 1, &t))
        return DECLINE;
    if (t.is_int) {
        if (t.integer_digits > 18)
            return DECLINE;
        *out = t.negative ? -(double)(int64_t)t.mantissa : (double)t.mantissa;
        if (*out == 0.0)
            *out = 0.0; /* an integer has no sign of zero */
        return OK;
    }
    if (t.mantissa == 0 && t.dropped == 0) {
        *out = t.negative ? -0.0 : 0.0;
        return OK;
    }
    if (FAST_DOUBLES && t.dropped == 0 && t.mantissa <= (UINT64_C(1) << 53) && t.exp10 >= -22 &&
        t.exp10 <= 22) {
        double v = (double)t.mantissa;
        v = t.exp10 < 0 ? v / POW10[-t.exp10] : v * POW10[t.exp10];
        *out = t.negative ? -v : v;
        return OK;
    }
    return python_number(t.start, t.end - t.start, out);
}

/* A number whose value is not kept (a result's score): accepted and declined exactly as
 * `number` would, converted only when that could decline it. An integer declines when it
 * has more than 18 digits; a fraction without exponent is finite, and declines only when
 * the slow way reads it (not the fast path) and the token is too long for its buffer; a
 * token with an exponent is read again by `number`. */
static int finite_number(const char **pp, const char *end) {
    Number t;
    const char *p = *pp;
    double ignored;
    if (number_token(pp, end, 0, &t))
        return DECLINE;
    if (t.is_int)
        return t.integer_digits > 18 ? DECLINE : OK;
    if (!t.has_exponent && t.end - t.start < 64)
        return OK;
    return number(&p, end, &ignored);
}

/* A JSON number of any magnitude, by its grammar alone (a value that is not kept). */
static inline int skip_number(const char **pp, const char *end) {
    Number t;
    return number_token(pp, end, 0, &t);
}

/* The `n` bytes of `word` at *pp (true, false, null): OK, past them; else DECLINE. */
static inline int literal(const char **pp, const char *end, const char *word, Py_ssize_t n) {
    if (end - *pp < n || memcmp(*pp, word, (size_t)n) != 0)
        return DECLINE;
    *pp += n;
    return OK;
}

/* 1, past it, when a null is at *pp; else 0. */
static inline int literal_null(const char **pp, const char *end) {
    return literal(pp, end, "null", 4) == OK;
}

static inline int same_span(Span a, Span b) {
    return a.n == b.n && memcmp(a.s, b.s, (size_t)a.n) == 0;
}

#define KEY(k, lit) same_span((k), (Span){(lit), (Py_ssize_t)(sizeof(lit) - 1)})

/* A number, or null when `nullable` (then *out is NaN and *given 0). */
static int optional_number(const char **pp, const char *end, double lo, double hi, int hi_open,
                           double *out, int *given) {
    if (literal_null(pp, end)) {
        *out = NAN;
        *given = 0;
        return OK;
    }
    if (number(pp, end, out))
        return DECLINE;
    if (!(*out >= lo) || (hi_open ? !(*out < hi) : !(*out <= hi)))
        return DECLINE;
    *given = 1;
    return OK;
}

/* -- objects ------------------------------------------------------------------------------ */

/* A member's key and the colon after it (with the blanks around it): printable ASCII
 * without escapes into `*key`, or, with `key` NULL (a skipped value's), any JSON string
 * checked as `text_string` checks it. */
static inline int member_key(const char **pp, const char *end, Span *key) {
    const char *p = *pp;
    if (key != NULL ? plain_string(&p, end, key) : text_string(&p, end, PY_SSIZE_T_MAX))
        return DECLINE;
    p = skip_ws(p, end);
    if (p >= end || *p != ':')
        return DECLINE;
    *pp = skip_ws(p + 1, end);
    return OK;
}

enum { MORE = 0, CLOSED = 2 };

/* After a value: MORE, past the comma and blanks, when another one follows; CLOSED, past
 * `close`, at the end of the object or list; DECLINE otherwise. */
static inline int after_value(const char **pp, const char *end, char close) {
    const char *p = skip_ws(*pp, end);
    if (p < end && *p == ',') {
        *pp = skip_ws(p + 1, end);
        return MORE;
    }
    if (p < end && *p == close) {
        *pp = p + 1;
        return CLOSED;
    }
    return DECLINE;
}

/* After the value of the member `flag` of an object: DECLINE when that member came before,
 * else as `after_value` up to the closing brace. */
static int member_done(const char **pp, const char *end, unsigned *seen, unsigned flag) {
    if (*seen & flag)
        return DECLINE;
    *seen |= flag;
    return after_value(pp, end, '}');
}

/* The value of a key the schema does not know that is an array, an object or a literal
 * (see skip_value), nested in at most MAX_DEPTH arrays or objects in all, `depth` of them
 * around the value itself, as the guard counts (a value or key inside MAX_DEPTH + 1 of
 * them is too deep). Without recursion: `close` holds the closing bracket of each array or
 * object open inside the value. */
static int skip_nested(const char **pp, const char *end, int depth) {
    char close[MAX_DEPTH + 1];
    int open = 0, rc;
    const char *p = *pp;
    for (;;) {
        if (depth + open > MAX_DEPTH || p >= end) /* at a value, in depth + open containers */
            return DECLINE;
        switch (*p) {
        case '{':
        case '[': {
            char c = *p == '{' ? '}' : ']';
            p = skip_ws(p + 1, end);
            if (p < end && *p == c) { /* empty */
                p++;
                rc = OK;
                break;
            }
            close[open++] = c;
            if (c == '}' && member_key(&p, end, NULL))
                return DECLINE;
            continue; /* at its first value */
        }
        case '"':
            rc = text_string(&p, end, PY_SSIZE_T_MAX);
            break;
        case 't':
            rc = literal(&p, end, "true", 4);
            break;
        case 'f':
            rc = literal(&p, end, "false", 5);
            break;
        case 'n':
            rc = literal(&p, end, "null", 4);
            break;
        default:
            rc = skip_number(&p, end);
        }
        if (rc != OK)
            return DECLINE;
        /* after a value: the containers it ends, then the next value (and key) or the end */
        for (rc = CLOSED; open > 0 && (rc = after_value(&p, end, close[open - 1])) == CLOSED;)
            open--;
        if (open == 0) {
            *pp = p;
            return OK;
        }
        if (rc != MORE || (close[open - 1] == '}' && member_key(&p, end, NULL)))
            return DECLINE;
    }
}

/* The value of a key the schema does not know, not kept: any JSON value, checked as msgspec
 * checks what it skips (JSON's grammar; strings as `text_string` checks them, of any
 * length; numbers of any magnitude; nesting as the guard limits it). A string or a number,
 * the usual values, is read here; anything else by `skip_nested`. */
static inline int skip_value(const char **pp, const char *end, int depth) {
    const char *p = *pp;
    if (p < end && *p == '"')
        return text_string(pp, end, PY_SSIZE_T_MAX);
    if (p < end && ((*p >= '0' && *p <= '9') || *p == '-'))
        return skip_number(pp, end);
    return skip_nested(pp, end, depth);
}

enum { F_DOC_ID = 1, F_SCORE = 2, F_T_DOC = 4, F_REL = 8 };

/* The key of a result's or qrel's member as the common shape writes it (`"doc_id":` and
 * the like, no blank before the colon), and the blanks after it: its flag, past them; 0 for
 * any other key or spelling, left where it was (the general path then reads it). */
static inline unsigned item_key_fast(const char **pp, const char *end) {
    const char *p = *pp;
    Py_ssize_t left = end - p;
    unsigned flag = 0;
    Py_ssize_t n = 0;
    if (left >= 9 && memcmp(p, "\"doc_id\":", 9) == 0) {
        flag = F_DOC_ID, n = 9;
    } else if (left >= 8 && memcmp(p, "\"t_doc\":", 8) == 0) {
        flag = F_T_DOC, n = 8;
    } else if (left >= 8 && memcmp(p, "\"score\":", 8) == 0) {
        flag = F_SCORE, n = 8;
    } else if (left >= 6 && memcmp(p, "\"rel\":", 6) == 0) {
        flag = F_REL, n = 6;
    }
    if (flag)
        *pp = skip_ws(p + n, end);
    return flag;
}

/* The flag of a member key read by `member_key` (0: not one of an item's keys). */
static unsigned item_key(Span key) {
    if (KEY(key, "doc_id"))
        return F_DOC_ID;
    if (KEY(key, "t_doc"))
        return F_T_DOC;
    if (KEY(key, "rel"))
        return F_REL;
    if (KEY(key, "score"))
        return F_SCORE;
    return 0;
}

/* The members of a result (`is_qrel` 0) or qrel (1) object from *pp (its first member or
 * the one after a comma) to its closing brace; `seen`: the flags of those read before. */
static int members(const char **pp, const char *end, const Bounds *b, int is_qrel, Item *out,
                   unsigned seen) {
    const char *p = *pp;
    for (;;) {
        unsigned flag = item_key_fast(&p, end);
        int next;
        if (flag == 0) {
            Span key;
            if (member_key(&p, end, &key))
                return DECLINE;
            flag = item_key(key);
        }
        if (flag == F_DOC_ID) {
            if (plain_string(&p, end, &out->id) || out->id.n < 1 || out->id.n > b->max_id)
                return DECLINE;
        } else if (flag == F_T_DOC) {
            if (optional_number(&p, end, b->min_doc_ts, b->max_ts, 1, &out->t_doc,
                                &out->has_t_doc))
                return DECLINE;
        } else if (flag == F_REL) {
            if (optional_number(&p, end, -b->max_abs_rel, b->max_abs_rel, 0, &out->rel,
                                &out->has_rel))
                return DECLINE;
            if (is_qrel && !out->has_rel)
                return DECLINE; /* a qrel's rel is required and not nullable */
        } else if (flag == F_SCORE && !is_qrel) {
            if (!literal_null(&p, end) && finite_number(&p, end)) /* any finite number */
                return DECLINE;
        } else { /* a key the schema does not know (a qrel's `score` too), at depth 3 */
            flag = 0;
            if (skip_value(&p, end, 3))
                return DECLINE;
        }
        if ((next = member_done(&p, end, &seen, flag)) == CLOSED)
            break;
        if (next != MORE)
            return DECLINE;
    }
    if (!(seen & F_DOC_ID) || (is_qrel && !(seen & F_REL)))
        return DECLINE;
    *pp = p;
    return OK;
}

/* One result (`is_qrel` 0) or qrel (1) object. */
static int item(const char **pp, const char *end, const Bounds *b, int is_qrel, Item *out) {
    const char *p = skip_ws(*pp, end);
    out->t_doc = NAN;
    out->rel = NAN;
    out->has_rel = 0;
    out->has_t_doc = 0;
    if (p >= end || *p != '{')
        return DECLINE;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return DECLINE; /* doc_id is required */
    if (members(&p, end, b, is_qrel, out, 0))
        return DECLINE;
    *pp = p;
    return OK;
}

static int grow(Item **items, Py_ssize_t *cap, Py_ssize_t need) {
    if (need <= *cap)
        return OK;
    Py_ssize_t size = *cap ? *cap : 64;
    while (size < need)
        size *= 2;
    Item *bigger = PyMem_Realloc(*items, (size_t)size * sizeof(Item));
    if (bigger == NULL)
        return NOMEM;
    *items = bigger;
    *cap = size;
    return OK;
}

/* A member of a result after a comma, whose key the schema does not know, written as the
 * common shape writes it: `"key":` (printable ASCII, no blank), then a string of printable
 * ASCII or a number, checked as `members` checks them: 1, past it; 0 for anything else,
 * nothing read (`members` then reads it, and decides). The usual extra field of a result
 * (a chunk id, a page) is so read in place, without the general member loop. */
static inline int common_unknown(const char **pp, const char *end) {
    const char *p = *pp;
    Span key, value;
    if (plain_string(&p, end, &key) || p >= end || *p != ':' ||
        (key.n <= 6 && item_key(key))) /* an item's keys have at most 6 characters */
        return 0;
    p++;
    if (p < end && *p == '"' ? plain_string(&p, end, &value) : skip_number(&p, end))
        return 0;
    *pp = p;
    return 1;
}

/* A result written as the common shape writes it, `{"doc_id":"…","score":…,"t_doc":…`
 * with no blank, then its end or more members (read as `item` reads them): 1, read into
 * `*out`, past it; 0 for anything else, or a value `item` would not accept, nothing read
 * (`item` then reads it, and decides). */
static int common_result(const char **pp, const char *end, const Bounds *b, Item *out) {
    const char *p = *pp;
    if (end - p < 11 || memcmp(p, "{\"doc_id\":\"", 11) != 0)
        return 0;
    p += 10; /* at the id's opening quote */
    if (plain_string(&p, end, &out->id) || out->id.n < 1 || out->id.n > b->max_id)
        return 0;
    if (end - p < 9 || memcmp(p, ",\"score\":", 9) != 0)
        return 0;
    p += 9;
    if (!literal_null(&p, end) && finite_number(&p, end))
        return 0;
    if (end - p < 9 || memcmp(p, ",\"t_doc\":", 9) != 0)
        return 0;
    p += 9;
    if (optional_number(&p, end, b->min_doc_ts, b->max_ts, 1, &out->t_doc, &out->has_t_doc))
        return 0;
    out->rel = NAN;
    out->has_rel = 0;
    for (const char *q;; p = q) { /* its end, or members the schema does not know */
        if (p < end && *p == '}') {
            *pp = p + 1;
            return 1;
        }
        if (p >= end || *p != ',')
            return 0;
        q = p + 1;
        if (!common_unknown(&q, end))
            break;
    }
    p = skip_ws(p + 1, end);
    if (members(&p, end, b, 0, out, F_DOC_ID | F_SCORE | F_T_DOC))
        return 0;
    *pp = p;
    return 1;
}

/* A list of result or qrel objects into `*items` (grown as needed); `*count` items. */
static int item_list(const char **pp, const char *end, const Bounds *b, int is_qrel,
                     Py_ssize_t max_items, Item **items, Py_ssize_t *cap, Py_ssize_t *count) {
    const char *p = *pp;
    Py_ssize_t n = 0;
    if (p >= end || *p != '[')
        return DECLINE;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') {
        *pp = p + 1;
        *count = 0;
        return OK;
    }
    for (;;) {
        int rc;
        if (n >= max_items)
            return DECLINE;
        if ((rc = grow(items, cap, n + 1)) != OK)
            return rc;
        if (!(!is_qrel && common_result(&p, end, b, &(*items)[n])) &&
            item(&p, end, b, is_qrel, &(*items)[n]))
            return DECLINE;
        n++;
        if ((rc = after_value(&p, end, ']')) == CLOSED)
            break;
        if (rc != MORE)
            return DECLINE;
    }
    *pp = p;
    *count = n;
    return OK;
}

static int labels_object(const char **pp, const char *end, const Bounds *b, Event *ev) {
    const char *p = *pp;
    Py_ssize_t n = 0;
    if (p >= end || *p != '{')
        return DECLINE;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        *pp = p + 1;
        ev->labels = 0;
        return OK;
    }
    for (;;) {
        Span key, value;
        int next;
        if (n >= b->max_labels || n >= 64)
            return DECLINE;
        if (member_key(&p, end, &key) || key.n < 1 || key.n > b->max_label)
            return DECLINE;
        for (Py_ssize_t i = 0; i < n; i++)
            if (same_span(ev->label_keys[i], key))
                return DECLINE; /* a repeated label key */
        if (plain_string(&p, end, &value) || value.n > b->max_label)
            return DECLINE;
        ev->label_keys[n] = key;
        ev->label_values[n] = value;
        n++;
        if ((next = after_value(&p, end, '}')) == CLOSED)
            break;
        if (next != MORE)
            return DECLINE;
    }
    *pp = p;
    ev->labels = n;
    return OK;
}

enum {
    T_TYPE = 1, T_QUERY_ID = 2, T_TS = 4, T_LABELS = 8, T_QUERY = 16, T_RESULTS = 32,
    T_QRELS = 64, T_TRACE = 128
};
#define T_REQUIRED (T_TYPE | T_QUERY_ID | T_TS | T_RESULTS)

/* Whether `s` is an OpenTelemetry trace id: 32 lowercase hex digits, not all zero (as
 * `ragstream.events.trace_ids.is_trace_id`). */
static int trace_id(Span s) {
    unsigned nonzero = 0;
    if (s.n != 32)
        return 0;
    for (Py_ssize_t i = 0; i < 32; i++) {
        char c = s.s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
        nonzero |= c != '0';
    }
    return nonzero != 0;
}

/* The whole message: validates it and fills `ev` and the scratch items. `trace_key`: the
 * top-level key the schema does not know whose value, when a trace id, is kept (`ev->trace`;
 * its `s` NULL: none). Its value is read as any unknown key's, but a string must be plain
 * printable ASCII (one with an escape or a non-ASCII byte declines: msgspec decodes it),
 * and the key given twice declines (msgspec keeps the last). */
static int event(const char *p, const char *end, const Bounds *b, Span trace_key, Event *ev,
                 Scratch *s) {
    unsigned seen = 0;
    int rc;
    ev->has_trace = 0;
    ev->labels = 0;
    ev->docs = ev->qrels = 0;
    ev->has_qrels = 0;
    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return DECLINE;
    p = skip_ws(p + 1, end);
    for (;;) {
        Span key;
        unsigned flag;
        int next;
        if (member_key(&p, end, &key))
            return DECLINE;
        if (KEY(key, "type")) {
            Span value;
            flag = T_TYPE;
            if (plain_string(&p, end, &value) || !KEY(value, "retrieval"))
                return DECLINE;
        } else if (KEY(key, "query_id")) {
            flag = T_QUERY_ID;
            if (plain_string(&p, end, &ev->query_id) || ev->query_id.n < 1 ||
                ev->query_id.n > b->max_id)
                return DECLINE;
        } else if (KEY(key, "ts")) {
            flag = T_TS;
            if (number(&p, end, &ev->ts) || !(ev->ts >= b->min_event_ts) || !(ev->ts < b->max_ts))
                return DECLINE;
        } else if (KEY(key, "labels")) {
            flag = T_LABELS;
            if (labels_object(&p, end, b, ev))
                return DECLINE;
        } else if (KEY(key, "query")) {
            flag = T_QUERY;
            if (!literal_null(&p, end) && text_string(&p, end, b->max_text))
                return DECLINE;
        } else if (KEY(key, "results")) {
            flag = T_RESULTS;
            if ((rc = item_list(&p, end, b, 0, b->max_results, &s->docs, &s->docs_cap,
                                &ev->docs)) != OK)
                return rc;
        } else if (KEY(key, "qrels")) {
            flag = T_QRELS;
            if (!literal_null(&p, end)) {
                if ((rc = item_list(&p, end, b, 1, b->max_qrels, &s->qrels, &s->qrels_cap,
                                    &ev->qrels)) != OK)
                    return rc;
                ev->has_qrels = 1;
            }
        } else if (trace_key.s != NULL && same_span(key, trace_key)) {
            flag = T_TRACE;
            if (p < end && *p == '"') {
                if (plain_string(&p, end, &ev->trace))
                    return DECLINE;
                ev->has_trace = trace_id(ev->trace);
            } else if (skip_value(&p, end, 1)) { /* not a string: no trace id */
                return DECLINE;
            }
        } else { /* a key the schema does not know, at depth 1 */
            flag = 0;
            if (skip_value(&p, end, 1))
                return DECLINE;
        }
        if ((next = member_done(&p, end, &seen, flag)) == CLOSED)
            break;
        if (next != MORE)
            return DECLINE;
    }
    if ((seen & T_REQUIRED) != T_REQUIRED)
        return DECLINE;
    return skip_ws(p, end) == end ? OK : DECLINE;
}

/* -- repeats ------------------------------------------------------------------------------ */

static inline uint32_t hash_span(Span id) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (Py_ssize_t i = 0; i < id.n; i++)
        h = (h ^ (unsigned char)id.s[i]) * 16777619u;
    return h;
}

/* 1 when a document id appears twice in the results, 0 if not, NOMEM. */
static int has_repeats(const Item *docs, Py_ssize_t n, Scratch *s) {
    s->table_mask = 0;
    if (n < 2)
        return 0;
    Py_ssize_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    if (cap > s->table_cap) {
        uint32_t *bigger = PyMem_Realloc(s->table, (size_t)cap * sizeof(uint32_t));
        if (bigger == NULL)
            return NOMEM;
        s->table = bigger;
        s->table_cap = cap;
    }
    memset(s->table, 0, (size_t)cap * sizeof(uint32_t)); /* slot = index + 1 */
    const size_t mask = (size_t)(cap - 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        Span id = docs[i].id;
        size_t slot = hash_span(id) & mask;
        while (s->table[slot]) {
            Span other = docs[s->table[slot] - 1].id;
            if (same_span(other, id))
                return 1;
            slot = (slot + 1) & mask;
        }
        s->table[slot] = (uint32_t)(i + 1);
    }
    s->table_mask = mask; /* the ranking's ids, for `ranked_at` */
    return 0;
}

/* -- values ------------------------------------------------------------------------------- */

static PyObject *ascii(Span span) {
    PyObject *text = PyUnicode_New(span.n, 127);
    if (text != NULL)
        memcpy(PyUnicode_DATA(text), span.s, (size_t)span.n);
    return text;
}

static PyObject *optional_float(int given, double value) {
    if (given)
        return PyFloat_FromDouble(value);
    Py_RETURN_NONE;
}

static PyObject *label_tuple(const Item *items, Py_ssize_t n, int only_rel) {
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        count += !only_rel || items[i].has_rel;
    if (count == 0)
        Py_RETURN_NONE;
    PyObject *out = PyTuple_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0, j = 0; i < n; i++) {
        const Item *it = &items[i];
        if (only_rel && !it->has_rel)
            continue;
        PyObject *row = Py_BuildValue("(NdN)", ascii(it->id), it->rel,
                                      optional_float(it->has_t_doc, it->t_doc));
        if (row == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, j++, row);
    }
    return out;
}

static PyObject *doubles(const Item *docs, Py_ssize_t n) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out == NULL)
        return NULL;
    double *dst = (double *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++)
        dst[i] = docs[i].t_doc;
    return out;
}

/* Every document id of the ranking, as a tuple of str. */
static PyObject *ids(const Item *docs, Py_ssize_t n) {
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *id = ascii(docs[i].id);
        if (id == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, id);
    }
    return out;
}

/* The index of the document `id` in the ranking (-1: not there): through the table
 * `has_repeats` filled, or one by one under two documents (it made none). */
static Py_ssize_t ranked_at(const Item *docs, Py_ssize_t n, const Scratch *s, Span id) {
    const size_t mask = s->table_mask;
    if (mask == 0) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (same_span(docs[i].id, id))
                return i;
        return -1;
    }
    size_t slot = hash_span(id) & mask;
    while (s->table[slot]) {
        const Item *other = &docs[s->table[slot] - 1];
        if (same_span(other->id, id))
            return (Py_ssize_t)s->table[slot] - 1;
        slot = (slot + 1) & mask;
    }
    return -1;
}

/* One label (qrels first, then the results' inline ones, in list order) into the judged
 * documents, as `RowLabels.grade` keeps them: the last grade of a document wins; its
 * time is the one sent with a label, else (at its first label) its raw time in the
 * ranking, NaN when it has none or is not ranked (the query's ts then). Times stay raw:
 * the engine makes them effective (NaN or later than ts -> ts) with the clock's ts. */
static void judge(const Item *label, const Item *docs, Py_ssize_t n, Scratch *s, size_t mask,
                  Py_ssize_t *m) {
    size_t slot = hash_span(label->id) & mask;
    Judged *known = NULL;
    while (s->jtable[slot]) {
        Judged *other = &s->judged[s->jtable[slot] - 1];
        if (same_span(other->id, label->id)) {
            known = other;
            break;
        }
        slot = (slot + 1) & mask;
    }
    if (known == NULL) {
        known = &s->judged[*m];
        known->id = label->id;
        known->at = ranked_at(docs, n, s, label->id);
        known->t = known->at >= 0 ? docs[known->at].t_doc : NAN;
        s->jtable[slot] = (uint32_t)(++*m);
    }
    known->rel = label->rel;
    if (label->has_t_doc)
        known->t = label->t_doc;
}

/* For an event with labels, what the kernels read, as C doubles: `ranked` holds each
 * ranked document's grade (0 unjudged) and then each one's raw time (a judged one's
 * label time); `judged` each judged document's grade and then its raw label time, in the
 * order of their first labels. OK, or NOMEM (no exception set, nothing to release). */
static int graded(const Event *ev, Scratch *s, PyObject **ranked, PyObject **judged) {
    const Item *docs = s->docs;
    Py_ssize_t n = ev->docs, labels = ev->qrels;
    for (Py_ssize_t i = 0; i < n; i++)
        labels += docs[i].has_rel;
    Py_ssize_t cap = 16;
    while (cap < 2 * labels)
        cap *= 2;
    if (cap > s->jtable_cap) {
        uint32_t *bigger = PyMem_Realloc(s->jtable, (size_t)cap * sizeof(uint32_t));
        if (bigger == NULL)
            return NOMEM;
        s->jtable = bigger;
        s->jtable_cap = cap;
    }
    if (labels > s->judged_cap) {
        Judged *bigger = PyMem_Realloc(s->judged, (size_t)labels * sizeof(Judged));
        if (bigger == NULL)
            return NOMEM;
        s->judged = bigger;
        s->judged_cap = labels;
    }
    memset(s->jtable, 0, (size_t)cap * sizeof(uint32_t));
    const size_t mask = (size_t)(cap - 1);
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < ev->qrels; i++)
        judge(&s->qrels[i], docs, n, s, mask, &m);
    for (Py_ssize_t i = 0; i < n; i++)
        if (docs[i].has_rel)
            judge(&docs[i], docs, n, s, mask, &m);
    *ranked = PyBytes_FromStringAndSize(NULL, 2 * n * (Py_ssize_t)sizeof(double));
    *judged = PyBytes_FromStringAndSize(NULL, 2 * m * (Py_ssize_t)sizeof(double));
    if (*ranked == NULL || *judged == NULL) {
        Py_CLEAR(*ranked);
        Py_CLEAR(*judged);
        PyErr_Clear();
        return NOMEM;
    }
    double *r = (double *)PyBytes_AS_STRING(*ranked), *j = (double *)PyBytes_AS_STRING(*judged);
    for (Py_ssize_t i = 0; i < n; i++) {
        r[i] = 0.0;
        r[n + i] = docs[i].t_doc;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        const Judged *it = &s->judged[k];
        j[k] = it->rel;
        j[m + k] = it->t;
        if (it->at >= 0) {
            r[it->at] = it->rel;
            r[n + it->at] = it->t;
        }
    }
    return OK;
}

/* The label keys asked for (their UTF-8), and the value tuples made in this call. */
enum { MAX_KEYS = 64, VALUE_CACHE = 64 };

typedef struct {
    Py_ssize_t n;
    Span key[MAX_KEYS];
    PyObject *cached[VALUE_CACHE]; /* value tuples, by a hash of their values */
} Keys;

static uint64_t hash_value(uint64_t h, Span span) {
    for (Py_ssize_t i = 0; i < span.n; i++)
        h = (h ^ (unsigned char)span.s[i]) * 0x100000001b3ULL;
    return (h ^ 0xff) * 0x100000001b3ULL; /* the end of the value */
}

/* Whether the ASCII str `text` holds exactly `span`. */
static int same_text(PyObject *text, Span span) {
    return PyUnicode_GET_LENGTH(text) == span.n &&
           memcmp(PyUnicode_DATA(text), span.s, (size_t)span.n) == 0;
}

/* The values of the event's labels for `keys`, in order ("" for a key it does not carry),
 * as a tuple: the one made earlier in this call for the same values when there is one. */
static PyObject *label_values(const Event *ev, Keys *keys) {
    Span value[MAX_KEYS];
    uint64_t h = 0xcbf29ce484222325ULL;
    for (Py_ssize_t k = 0; k < keys->n; k++) {
        value[k] = (Span){"", 0};
        for (Py_ssize_t i = 0; i < ev->labels; i++) {
            Span key = ev->label_keys[i];
            if (same_span(key, keys->key[k])) {
                value[k] = ev->label_values[i];
                break;
            }
        }
        h = hash_value(h, value[k]);
    }
    PyObject **slot = &keys->cached[h % VALUE_CACHE];
    if (*slot != NULL) {
        int same = 1;
        for (Py_ssize_t k = 0; k < keys->n && same; k++)
            same = same_text(PyTuple_GET_ITEM(*slot, k), value[k]);
        if (same)
            return Py_NewRef(*slot);
    }
    PyObject *out = PyTuple_New(keys->n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < keys->n; k++) {
        PyObject *text = ascii(value[k]);
        if (text == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, text);
    }
    Py_XSETREF(*slot, Py_NewRef(out));
    return out;
}

static PyObject *record(const Event *ev, Scratch *s, Py_ssize_t top, Keys *keys, int grade) {
    PyObject *rec = PyStructSequence_New(&ScannedType);
    if (rec == NULL)
        return NULL;
    Py_ssize_t n = ev->docs;
    int any_rel = 0;
    for (Py_ssize_t i = 0; i < n && !any_rel; i++)
        any_rel = s->docs[i].has_rel;
    int labeled = any_rel || ev->qrels > 0;
    PyObject *items[FIELDS] = {NULL};
    items[0] = ascii(ev->query_id);
    items[1] = PyFloat_FromDouble(ev->ts);
    items[2] = keys != NULL ? label_values(ev, keys) : Py_NewRef(Py_None);
    items[3] = doubles(s->docs, n < top ? n : top);
    items[10] = ev->has_trace ? ascii(ev->trace) : Py_NewRef(Py_None);
    if (labeled && grade) { /* what the kernels read instead of the ids and labels */
        for (int i = 4; i < 8; i++)
            items[i] = Py_NewRef(Py_None);
        if (graded(ev, s, &items[8], &items[9]) != OK)
            PyErr_NoMemory(); /* items[8] is NULL: released below */
    } else {
        items[4] = labeled ? ids(s->docs, n) : Py_NewRef(Py_None);
        items[5] = labeled ? doubles(s->docs, n) : Py_NewRef(Py_None);
        items[6] = label_tuple(s->qrels, ev->qrels, 0);
        items[7] = label_tuple(s->docs, n, 1);
        items[8] = Py_NewRef(Py_None);
        items[9] = Py_NewRef(Py_None);
    }
    for (int i = 0; i < FIELDS; i++) {
        if (items[i] == NULL) {
            for (int j = 0; j < FIELDS; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(rec);
            return NULL;
        }
    }
    for (int i = 0; i < FIELDS; i++)
        PyStructSequence_SET_ITEM(rec, i, items[i]);
    return rec;
}

/* -- the guard (see ragstream.events.guard) ---------------------------------------------- */


/* 0x80 in each byte of x that is `[` or `{` (they differ in bit 5 only), 0 elsewhere: the
 * exact zero-byte test on x | 0x20... xor "{{{{...". */
static inline uint64_t openers(uint64_t x) {
    uint64_t y = (x | (ONES * 0x20)) ^ (ONES * '{');
    return ~(((y & ~HIGHS) + ~HIGHS) | y) & HIGHS;
}

static int valid_utf8(const unsigned char *p, const unsigned char *e) {
    while (p < e) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        Py_ssize_t n = utf8_sequence(p, e);
        if (n == 0)
            return 0;
        p += n;
    }
    return 1;
}

/* 1 when no value is nested in more than MAX_DEPTH arrays or objects, read as JSON's
 * grammar reads it: brackets in strings do not count, a backslash in a string escapes the
 * next byte. A value in the container at depth MAX_DEPTH + 1 (a scalar, a string, a key or
 * another container) is too deep; so the parser of the reference counts. */
static int shallow(const unsigned char *p, const unsigned char *e) {
    Py_ssize_t depth = 0;
    while (p < e) {
        unsigned c = *p++;
        switch (c) {
        case ']': case '}':
            if (depth > 0)
                depth--;
            continue;
        case ' ': case '\t': case '\n': case '\r': case ',': case ':':
            continue;
        default:
            break;
        }
        if (depth > MAX_DEPTH)
            return 0;
        if (c == '[' || c == '{') {
            depth++;
        } else if (c == '"') {
            while (p < e && *p != '"')
                p += *p == '\\' && e - p > 1 ? 2 : 1;
            p += p < e;
        }
    }
    return 1;
}

/* One pass 8 bytes at a time: are all bytes ASCII, and how many open an array or object?
 * (a counter a byte in `counts`, summed every 255 words). Only then, and only when needed,
 * UTF-8 validation and the exact depth. */
static int readable_bytes(const unsigned char *s, Py_ssize_t n) {
    const uint64_t evens = UINT64_C(0x00FF00FF00FF00FF);
    uint64_t high = 0;
    Py_ssize_t opened = 0, i = 0;
    while (n - i >= 8) {
        uint64_t counts = 0, pairs;
        Py_ssize_t stop = (n - i) / 8 > 255 ? i + 255 * 8 : n - (n - i) % 8;
        for (; i < stop; i += 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            high |= x;
            counts += openers(x) >> 7;
        }
        pairs = (counts & evens) + ((counts >> 8) & evens);
        opened += (Py_ssize_t)((pairs * UINT64_C(0x0001000100010001)) >> 48);
    }
    for (; i < n; i++) {
        high |= s[i];
        opened += s[i] == '[' || s[i] == '{';
    }
    if ((high & HIGHS) && !valid_utf8(s, s + n))
        return 0;
    return opened <= MAX_DEPTH || shallow(s, s + n);
}

static PyObject *readable(PyObject *module, PyObject *value) {
    (void)module;
    const unsigned char *s;
    Py_ssize_t n;
    if (PyBytes_Check(value)) {
        s = (const unsigned char *)PyBytes_AS_STRING(value);
        n = PyBytes_GET_SIZE(value);
    } else if (PyByteArray_Check(value)) {
        s = (const unsigned char *)PyByteArray_AS_STRING(value);
        n = PyByteArray_GET_SIZE(value);
    } else {
        Py_RETURN_FALSE; /* not bytes: the reference decides */
    }
    return PyBool_FromLong(readable_bytes(s, n));
}

/* -- the module --------------------------------------------------------------------------- */

/* `keys` (None, or a tuple of str) read into `out`; 0, or -1 with an exception. */
static int read_keys(PyObject *keys, Keys *out) {
    out->n = 0;
    memset(out->cached, 0, sizeof out->cached);
    if (!PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) > MAX_KEYS) {
        PyErr_SetString(PyExc_TypeError, "keys must be None or a tuple of at most 64 str");
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(keys); k++) {
        PyObject *key = PyTuple_GET_ITEM(keys, k);
        Py_ssize_t n;
        const char *text = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &n) : NULL;
        if (text == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "keys must be None or a tuple of str");
            return -1;
        }
        out->key[out->n++] = (Span){text, n};
    }
    return 0;
}

static void release_keys(Keys *keys) {
    for (int i = 0; i < VALUE_CACHE; i++)
        Py_CLEAR(keys->cached[i]);
}

/* Asks for the bytes of a message before it is read (the scan of the one before runs
 * meanwhile): each message is an allocation of its own, cold in the caches, where the
 * hardware's prefetcher would only start after the first misses. */
static inline void prefetch_bytes(PyObject *value, Py_ssize_t max_bytes) {
    if (!PyBytes_Check(value) || PyBytes_GET_SIZE(value) > max_bytes)
        return;
    const char *s = PyBytes_AS_STRING(value);
    for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(value); k += 64)
        __builtin_prefetch(s + k);
}

static PyObject *scan(PyObject *module, PyObject *args) {
    PyObject *values, *bounds_tuple, *keys_arg, *trace_arg = Py_None;
    Py_ssize_t top;
    int grade = 0;
    Bounds b;
    Keys keys_read, *keys = NULL;
    Span trace_key = {NULL, 0};
    (void)module;
    if (!PyArg_ParseTuple(args, "OOnO|pO", &values, &bounds_tuple, &top, &keys_arg, &grade,
                          &trace_arg))
        return NULL;
    if (trace_arg != Py_None) { /* the str is held by `args` for the call */
        trace_key.s = PyUnicode_Check(trace_arg) ? PyUnicode_AsUTF8AndSize(trace_arg, &trace_key.n)
                                                 : NULL;
        if (trace_key.s == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "trace must be None or a str");
            return NULL;
        }
    }
    if (!PyArg_ParseTuple(bounds_tuple, "nnnnnnndddd;bounds: 7 ints and 4 floats", &b.max_bytes,
                          &b.max_results, &b.max_qrels, &b.max_text, &b.max_id, &b.max_labels,
                          &b.max_label, &b.min_event_ts, &b.min_doc_ts, &b.max_ts,
                          &b.max_abs_rel))
        return NULL;
    if (top < 0) {
        PyErr_SetString(PyExc_ValueError, "top must be >= 0");
        return NULL;
    }
    if (b.max_bytes < 0 || b.max_results < 0 || b.max_qrels < 0 || b.max_text < 0 ||
        b.max_id < 0 || b.max_labels < 0 || b.max_label < 0) {
        PyErr_SetString(PyExc_ValueError, "bounds: the counts must be >= 0");
        return NULL;
    }
    if (keys_arg != Py_None) {
        if (read_keys(keys_arg, &keys_read) < 0)
            return NULL;
        keys = &keys_read; /* keys_arg holds the key strings for the call */
    }
    /* a tuple of its own: each message held, and the same, while its record is built (an
     * allocation can run a collection, whose finalizers could change a list) */
    PyObject *seq = PySequence_Tuple(values);
    if (seq == NULL) {
        if (keys != NULL)
            release_keys(keys);
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(count);
    Scratch s = {0};
    Event ev;
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *item = NULL;
        if (i + 4 < count)
            __builtin_prefetch(PySequence_Fast_GET_ITEM(seq, i + 4));
        if (i + 2 < count)
            prefetch_bytes(PySequence_Fast_GET_ITEM(seq, i + 2), b.max_bytes);
        if (PyBytes_Check(value) && PyBytes_GET_SIZE(value) > 0 &&
            PyBytes_GET_SIZE(value) <= b.max_bytes) {
            const char *data = PyBytes_AS_STRING(value);
            int rc = event(data, data + PyBytes_GET_SIZE(value), &b, trace_key, &ev, &s);
            if (rc == OK) {
                rc = has_repeats(s.docs, ev.docs, &s);
                if (rc == 0) {
                    item = record(&ev, &s, top, keys, grade);
                    if (item == NULL)
                        goto fail;
                }
            }
            if (rc == NOMEM) {
                PyErr_NoMemory();
                goto fail;
            }
        }
        PyList_SET_ITEM(out, i, item != NULL ? item : Py_NewRef(Py_None));
    }
    PyMem_Free(s.docs);
    PyMem_Free(s.qrels);
    PyMem_Free(s.table);
    PyMem_Free(s.jtable);
    PyMem_Free(s.judged);
    Py_DECREF(seq);
    if (keys != NULL)
        release_keys(keys);
    return out;
fail:
    PyMem_Free(s.docs);
    PyMem_Free(s.qrels);
    PyMem_Free(s.table);
    PyMem_Free(s.jtable);
    PyMem_Free(s.judged);
    Py_DECREF(seq);
    Py_XDECREF(out);
    if (keys != NULL)
        release_keys(keys);
    return NULL;
}

static PyStructSequence_Field scanned_fields[] = {
    {"query_id", "the event's query id"},
    {"ts", "the event's time (Unix seconds)"},
    {"labels", "the values of the event's labels for the keys asked for, or None"},
    {"top", "raw t_doc of the leading documents as C doubles (NaN: none)"},
    {"ids", "every document id, when the event carries a label"},
    {"times", "with ids: every document's raw t_doc as C doubles"},
    {"qrels", "(doc_id, rel, t_doc) per qrel, or None"},
    {"inline", "(doc_id, rel, t_doc) per result with a rel, or None"},
    {"ranked", "graded: each ranked document's grade, then its raw time, as C doubles"},
    {"judged", "graded: each judged document's grade, then its raw label time"},
    {"trace_id", "the trace field's value when it is a trace id, else None"},
    {NULL, NULL},
};

static PyStructSequence_Desc scanned_desc = {
    "ragstream.events._event_scanner.Scanned",
    "A retrieval event the compiled scanner accepted.",
    scanned_fields,
    FIELDS,
};

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(values, bounds, top, keys, graded=False, trace=None) -> list of Scanned or None, one "
     "per value"},
    {"readable", readable, METH_O,
     "readable(data) -> bool: strict UTF-8, and no value nested deeper than 200"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ragstream.events._event_scanner",
    "The compiled first pass over retrieval events (see ragstream.events.scanner).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__event_scanner(void) {
    init_stop();
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (ScannedType.tp_name == NULL && PyStructSequence_InitType2(&ScannedType, &scanned_desc) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ScannedType);
    if (PyModule_AddObject(module, "Scanned", (PyObject *)&ScannedType) < 0) {
        Py_DECREF(&ScannedType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
