/* ragstream.trec._trec_reader: the compiled single pass of `ragstream eval`.
 *
 * join(qrels, run, keep_best) reads both files (any buffer: an mmap, bytes) once each and
 * returns what the metric kernels need: for every query in both files, the grades of its
 * ranked documents in trec_eval's order (score descending, ties by document id
 * descending, compared like strcmp), and the grades of all its judged documents (file
 * order), as CSR arrays of doubles -- left where they were written (a segment per part of
 * the run), with the queries' ids in byte order and each one's place in the segments.
 *
 * Text after a run line's sixth field is skipped, as trec_eval does.
 *
 * The scanner accepts a strict subset of what the numpy reader accepts and declines the
 * rest (it returns a reason string): a malformed line, a NUL byte, an empty file, a score
 * spelling other than [+-]digits[.digits][e[+-]digits] (inf, nan, underscores), a grade
 * that is not [+-]digits of at most 18 significant digits. The caller then reads the
 * files with the numpy reader, which raises the exact error (or accepts the spelling), so
 * both paths give the same results and the same errors by construction.
 *
 * Scores: a decimal with at most 19 significant digits whose value is m * 10^e with
 * m <= 2^53 and |e| <= 22 is one exact IEEE multiplication or division of two exact
 * doubles (Clinger's fast path): the correctly rounded value, as strtod and Python's
 * float() give. Other spellings are converted after the scan with PyOS_string_to_double
 * (Python's own correctly rounded conversion).
 *
 * Repeated documents are found per query with a small hash table (the query's records
 * fit in cache); so are the grades of ranked documents. Repeats are reported back
 * (earliest repeating line and the first line of that document), or resolved with
 * keep_best: the best score wins, the earliest line on equal scores.
 *
 * join(qrels, run, keep_best, workers) reads files of one block per query (the usual
 * form) in `workers` parts at the same time, one thread each, without the GIL (the block
 * path, below); a query in two blocks sends both files to the general path, one thread,
 * any order of lines. Both give the same result.
 *
 * join(qrels, run, keep_best, workers, cut) keeps of each ranking only what metrics of a
 * cutoff of at most `depth` (and the reciprocal rank) read: its first `depth` grades, and
 * on to its first grade >= `level` when that comes later (`depth` 0: all of it), as the
 * Cut object `cut` says when the ranking is joined. Most of the output is then never
 * written: on a run of 100 documents a query and cutoffs of 10, about a seventh of it.
 * The cut can be set while the join runs (from another thread); rankings joined before
 * keep all their grades, which give the same values.
 *
 * A cut can also carry a kernel of ragstream.metrics._ragged (_ragged.h): the values of
 * the metrics it was made for. Each ranking joined from then on is evaluated at once,
 * while its grades are in cache, and its grades are not kept; those joined before are
 * evaluated at the end of their part. The join then returns the values, not the grades.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../metrics/_ragged.h"

/* Clinger's fast path needs plain double arithmetic (no x87 extended precision). */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#define FAST_DOUBLES 0
#else
#define FAST_DOUBLES 1
#endif

enum { OK = 0, NOMEM = -1, DECLINE = 1 };
enum { C_TOKEN = 0, C_BLANK = 1, C_NEWLINE = 2, C_NUL = 3 };

/* C isspace in the "C" locale, the newline apart; NUL is an error. */
static unsigned char CLS[256];

static void init_classes(void) {
    memset(CLS, C_TOKEN, sizeof CLS);
    CLS[' '] = CLS['\t'] = CLS['\v'] = CLS['\f'] = CLS['\r'] = C_BLANK;
    CLS['\n'] = C_NEWLINE;
    CLS[0] = C_NUL;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* One record: a document of a query with its score (run) or grade (qrels). */
typedef struct {
    const char *doc;
    uint32_t len;
    uint32_t query;
    uint64_t hash; /* of the document id */
    double value;
} Rec;

typedef struct {
    Rec *v;
    size_t n, cap;
} Recs;

/* A score whose spelling needs the slow conversion, done after the scan. */
typedef struct {
    size_t rec;
    const char *text;
    size_t len;
} Slow;

typedef struct {
    Slow *v;
    size_t n, cap;
} Slows;

/* A query id and its hash. */
typedef struct {
    const char *id;
    uint32_t len;
    uint64_t hash;
} Key;

/* Query ids -> their place in an array of structs that begin with a Key. */
typedef struct {
    const char *base;
    size_t stride;
    uint32_t *slot; /* index + 1; 0 = empty */
    size_t mask;
} Index;

typedef struct {
    Key key;
    uint32_t n_qrels, n_run;         /* records in each file */
    uint32_t first_qrels, first_run; /* index of the first record in each file */
} Query;

/* The queries of both files, by first appearance, and their index. */
typedef struct {
    Query *q;
    size_t n, cap;
    Index index;
    uint32_t *run_order; /* queries in order of first appearance in the run */
    size_t n_run_order, cap_run_order;
} Registry;

/* Why a file is declined, and the start of the line that is (why NULL: none). */
typedef struct {
    const char *why, *where;
} Declined;

typedef struct {
    const char *buf;
    size_t size;
    int run;
    int contiguous; /* each query's records form one block */
    Recs recs;
    Slows slow;
    Declined declined;
} File;

/* madvise(advice) on the pages of a to b: the whole pages inside the range when `inward`
 * (nothing outside it is touched), every page it touches otherwise. A hint: its failure
 * (an advice the kernel does not know) changes nothing but speed. */
#if defined(__linux__)
static void advise_pages(const void *a, const void *b, int inward, int advice) {
    const uintptr_t page = 4095, lo = (uintptr_t)a, hi = (uintptr_t)b;
    const uintptr_t start = (inward ? lo + page : lo) & ~page;
    const uintptr_t stop = (inward ? hi : hi + page) & ~page;
    if (stop > start) (void)madvise((void *)start, stop - start, advice);
}
#endif

static int grow(void **v, size_t *cap, size_t need, size_t item) {
    if (need <= *cap) return OK;
    size_t cap2 = *cap ? *cap : 1024;
    while (cap2 < need) cap2 *= 2;
    void *p = realloc(*v, cap2 * item);
    if (!p) return NOMEM;
    *v = p;
    *cap = cap2;
    return OK;
}

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

/* A 64-bit hash of id[0:n]; `end` bounds the buffer, so that a short tail can be read
 * with one 8-byte load when it stays inside. */
static inline uint64_t hash_id(const char *p, size_t n, const char *end) {
    uint64_t h = 0x9e3779b97f4a7c15ULL * (uint64_t)(n + 1);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix(h ^ w);
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
#if PY_LITTLE_ENDIAN
        if (end - p >= 8) {
            memcpy(&w, p, 8);
            w &= ~0ULL >> (8 * (8 - n));
        } else {
            memcpy(&w, p, n);
        }
#else
        (void)end;
        memcpy(&w, p, n);
#endif
        h = mix(h ^ w);
    }
    return mix(h * 0xbf58476d1ce4e5b9ULL);
}

/* The byte order of ids a[0:alen] and b[0:blen], a prefix first (strcmp's order): < 0, 0
 * or > 0. Inline for short ids: word by word, then byte by byte. */
static inline int compare_ids(const char *a, uint32_t alen, const char *b, uint32_t blen) {
    size_t n = alen < blen ? alen : blen;
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) break;
        a += 8;
        b += 8;
        n -= 8;
    }
    for (; n; n--, a++, b++)
        if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    return (alen > blen) - (alen < blen);
}

/* Whether ids a[0:alen] and b[0:blen], in buffers that end at a_end and b_end, are equal:
 * the tail (under 8 bytes) is compared as one masked word when 8 bytes can be read at both
 * places. An id whose buffer is not known passes its own end. */
static inline int same_id(const char *a, const char *a_end, uint32_t alen, const char *b,
                          const char *b_end, uint32_t blen) {
    if (alen != blen) return 0;
    size_t n = alen;
    while (n >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    if (!n) return 1;
#if PY_LITTLE_ENDIAN
    if (a_end - a >= 8 && b_end - b >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return ((x ^ y) & (~0ULL >> (8 * (8 - n)))) == 0;
    }
#else
    (void)a_end;
    (void)b_end;
#endif
    return memcmp(a, b, n) == 0;
}

static inline int same_doc(const Rec *a, const char *a_end, const Rec *b, const char *b_end) {
    return a->hash == b->hash && same_id(a->doc, a_end, a->len, b->doc, b_end, b->len);
}

/* The id of the block being read, compared with each line's first field: an id of at most
 * 8 bytes (the usual) as one masked word, loaded once for the block. Zeroed (len 0: no
 * field is empty), no block is open and no line is in it. */
typedef struct {
    const char *id;
    uint32_t len;
    int short_id;
    uint64_t word, mask;
} BlockId;

static inline BlockId block_id(const char *id, uint32_t len, const char *end) {
    BlockId b = {id, len, 0, 0, 0};
#if PY_LITTLE_ENDIAN
    if (len && len <= 8 && end - id >= 8) {
        b.short_id = 1;
        b.mask = ~0ULL >> (8 * (8 - len));
        memcpy(&b.word, id, 8);
        b.word &= b.mask;
    }
#else
    (void)end;
#endif
    return b;
}

static inline int in_block(const BlockId *b, const char *id, size_t len, const char *end) {
    if (len != b->len) return 0;
    if (b->short_id && end - id >= 8) {
        uint64_t w;
        memcpy(&w, id, 8);
        return (w & b->mask) == b->word;
    }
    return same_id(b->id, end, b->len, id, end, (uint32_t)len);
}

static size_t table_size(size_t n) {
    size_t size = 16;
    while (size < 2 * n) size *= 2;
    return size;
}

static inline const Key *key_at(const Index *x, size_t i) {
    return (const Key *)(const void *)(x->base + i * x->stride);
}

/* The slot of query id[0:len]: the one holding it, or the empty one it goes in. */
static inline size_t key_slot(const Index *x, const char *id, uint32_t len, uint64_t hash) {
    size_t s = hash & x->mask;
    for (; x->slot[s]; s = (s + 1) & x->mask) {
        const Key *k = key_at(x, x->slot[s] - 1);
        if (k->hash == hash && same_id(k->id, k->id + k->len, k->len, id, id + len, len)) break;
    }
    return s;
}

/* Index n keys, in a table of room for `room`; *duplicate is set when an id appears twice. */
static int index_build(Index *x, const void *base, size_t stride, size_t n, size_t room,
                       int *duplicate) {
    x->base = base;
    x->stride = stride;
    x->mask = table_size(room) - 1;
    x->slot = calloc(x->mask + 1, sizeof *x->slot);
    if (!x->slot) return NOMEM;
    *duplicate = 0;
    for (size_t i = 0; i < n; i++) {
        const Key *k = key_at(x, i);
        const size_t s = key_slot(x, k->id, k->len, k->hash);
        if (x->slot[s]) {
            *duplicate = 1;
            return OK;
        }
        x->slot[s] = (uint32_t)(i + 1);
    }
    return OK;
}

static inline int64_t index_find(const Index *x, const char *id, uint32_t len, uint64_t hash) {
    const size_t s = key_slot(x, id, len, hash);
    return x->slot[s] ? (int64_t)x->slot[s] - 1 : -1;
}

static int registry_init(Registry *r) {
    memset(r, 0, sizeof *r);
    r->index = (Index){NULL, sizeof(Query), calloc(1024, sizeof(uint32_t)), 1023};
    return r->index.slot ? OK : NOMEM;
}

static void registry_free(Registry *r) {
    free(r->run_order);
    free(r->q);
    free(r->index.slot);
}

/* The index of query id[0:len], added if new; -1 when out of memory or too many. */
static int64_t registry_index(Registry *r, const char *id, uint32_t len, const char *end) {
    const uint64_t h = hash_id(id, len, end);
    const size_t s = key_slot(&r->index, id, len, h);
    if (r->index.slot[s]) return r->index.slot[s] - 1;
    if (r->n >= UINT32_MAX - 1) return -1;
    if (grow((void **)&r->q, &r->cap, r->n + 1, sizeof(Query)) != OK) return -1;
    r->q[r->n] = (Query){{id, len, h}, 0, 0, 0, 0};
    r->index.base = (const char *)r->q;
    r->index.slot[s] = (uint32_t)++r->n;
    if (2 * r->n > r->index.mask) { /* a table twice as large */
        int duplicate;
        free(r->index.slot);
        if (index_build(&r->index, r->q, sizeof(Query), r->n, 2 * r->n, &duplicate) != OK)
            return -1;
    }
    return (int64_t)(r->n - 1);
}

/* Scores: OK with *out set; DECLINE when not [+-]digits[.digits][(e|E)[+-]digits];
 * 2 when the spelling is valid but needs the slow, correctly rounded conversion. */
enum { SLOW = 2 };
#define MAX_EXPONENT INT64_C(1000000000000000) /* 10^15 */

static int parse_long_score(const char *s, size_t n, double *out);

/* The rest of a score after its digits, `p` at what follows them: an optional exponent,
 * the end of the field, then the value m x 10^e10 -- the exact double when `exact` (m
 * holds every significant digit) and Clinger's fast path applies, SLOW otherwise. */
static inline int score_tail(const char *p, const char *end, int negative, uint64_t m,
                             int64_t e10, int exact, double *out) {
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int exp_negative = 0;
        if (p < end && (*p == '+' || *p == '-')) exp_negative = *p++ == '-';
        const char *first = p;
        int64_t exponent = 0;
        /* saturated, not clamped: past 10^15 no count of fraction digits brings the value
         * back to the fast path's range (a file of 10^15 bytes is not mapped) */
        for (; p < end && (unsigned char)(*p - '0') < 10; p++)
            exponent = exponent < MAX_EXPONENT ? exponent * 10 + (*p - '0') : MAX_EXPONENT;
        if (p == first) return DECLINE;
        e10 += exp_negative ? -exponent : exponent;
    }
    if (p != end) return DECLINE;
    if (m == 0) {
        *out = negative ? -0.0 : 0.0;
        return OK;
    }
    if (!FAST_DOUBLES || !exact || m > (1ULL << 53) || e10 < -22 || e10 > 22) return SLOW;
    double v = (double)m;
    v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
    *out = negative ? -v : v;
    return OK;
}

/* The common spelling first: at most 19 digits in all, so that they fit in a uint64 as
 * they are read, with no per-digit bookkeeping; longer ones (leading zeros, many digits)
 * are read by parse_long_score, digit by digit. Both give the same result for any
 * spelling of at most 19 digits. */
static inline int parse_score(const char *s, size_t n, double *out) {
    const char *p = s, *end = s + n;
    int negative = 0;
    if (p < end && (*p == '+' || *p == '-')) negative = *p++ == '-';
    uint64_t m = 0;
    const char *digits = p;
    while (p < end && (unsigned char)(*p - '0') < 10) m = m * 10 + (uint64_t)(*p++ - '0');
    size_t n_digits = (size_t)(p - digits), n_fraction = 0;
    if (p < end && *p == '.') {
        const char *fraction = ++p;
        while (p < end && (unsigned char)(*p - '0') < 10) m = m * 10 + (uint64_t)(*p++ - '0');
        n_fraction = (size_t)(p - fraction);
        n_digits += n_fraction;
    }
    if (n_digits > 19) return parse_long_score(s, n, out);
    if (!n_digits) return DECLINE;
    return score_tail(p, end, negative, m, -(int64_t)n_fraction, 1, out);
}

static int parse_long_score(const char *s, size_t n, double *out) {
    size_t i = 0;
    int negative = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    uint64_t m = 0;
    int significant = 0, digits = 0;
    int64_t e10 = 0;
    while (i < n && (unsigned char)(s[i] - '0') < 10) {
        int d = s[i++] - '0';
        digits++;
        if (m || d) significant++;
        if (significant <= 19) m = m * 10 + (uint64_t)d;
        else e10++;
    }
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && (unsigned char)(s[i] - '0') < 10) {
            int d = s[i++] - '0';
            digits++;
            if (m || d) significant++;
            if (significant <= 19) {
                m = m * 10 + (uint64_t)d;
                e10--;
            }
        }
    }
    if (!digits) return DECLINE;
    return score_tail(s + i, s + n, negative, m, e10, significant <= 19, out);
}

/* Grades: [+-]digits with at most 18 significant digits (an exact int64), as a double
 * (the numpy path converts its int64 grades to float64 the same way). */
static inline int parse_grade(const char *s, size_t n, double *out) {
    size_t i = 0;
    int negative = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    if (i == n) return DECLINE;
    int64_t v = 0;
    int significant = 0;
    for (; i < n; i++) {
        unsigned d = (unsigned char)(s[i] - '0');
        if (d >= 10) return DECLINE;
        if (v || d) significant++;
        if (significant > 18) return DECLINE;
        v = v * 10 + (int64_t)d;
    }
    *out = (double)(negative ? -v : v);
    return OK;
}

#if PY_LITTLE_ENDIAN && (defined(__GNUC__) || defined(__clang__))
#define SWAR 1
#else
#define SWAR 0
#endif

/* The end of the field starting at p: the first whitespace or NUL byte, or end. With
 * SWAR, 8 bytes at a time: (w - 0x21..21) & ~w & 0x80..80 flags bytes below 0x21, and
 * its lowest flag is exact (borrows only travel upwards); other control bytes below 0x21
 * belong to the field and are stepped over. */
static inline const char *token_end(const char *p, const char *end) {
#if SWAR
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t low = (w - 0x2121212121212121ULL) & ~w & 0x8080808080808080ULL;
        if (!low) {
            p += 8;
            continue;
        }
        p += __builtin_ctzll(low) / 8;
        if (CLS[(unsigned char)*p] != C_TOKEN) return p;
        p++;
    }
#endif
    while (p < end && CLS[(unsigned char)*p] == C_TOKEN) p++;
    return p;
}

/* Room for every record of a file of `size` bytes, k fields a line, at once: a record line
 * has k fields, k - 1 separators and a newline (only touched pages cost memory); grown
 * later when that much is not to be had. */
static int reserve(Recs *recs, size_t size, int k) {
    const size_t bound = size / (2 * (size_t)k) + 1;
    if ((recs->v = malloc(bound * sizeof(Rec)))) {
        recs->cap = bound;
        return OK;
    }
    return grow((void **)&recs->v, &recs->cap, 1024, sizeof(Rec));
}

/* The next record of recs (counted by the caller), of query `query`, from a line's fields:
 * its document (field 3); the caller sets its value. NULL when out of memory. `end`: the
 * end of the file's buffer. */
static inline Rec *new_record(Recs *recs, const char *const *tok, const size_t *len,
                              uint32_t query, const char *end) {
    if (grow((void **)&recs->v, &recs->cap, recs->n + 1, sizeof(Rec)) != OK) return NULL;
    Rec *r = &recs->v[recs->n];
    *r = (Rec){tok[2], (uint32_t)len[2], query, hash_id(tok[2], len[2], end), 0.0};
    return r;
}

static int decline(Declined *d, const char *line, const char *why) {
    d->why = why;
    d->where = line;
    return DECLINE;
}

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define FAST_LINES 1
#else
#define FAST_LINES 0
#endif

#if FAST_LINES
static inline unsigned lowest_bit(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned i = 0;
    while (!(x & 1)) {
        x >>= 1;
        i++;
    }
    return i;
#endif
}

/* The common line, 16 bytes at a time: when the line at p ends within the next 64 bytes
 * (all of them readable), has no NUL byte, is not a comment and has k fields (a run line:
 * k or more, the rest ignored), the fields the callers read are set (0, 2, and 3 in qrels
 * or 4 in a run: the others are never read) and the next line is returned; otherwise
 * NULL, and next_record's byte loop decides. Blanks and newline are what CLS says: bytes
 * 9-13 and 32. The bytes after the first 16 that hold a newline are not looked at. */
static inline const char *fast_line(const char *p, int run, const char **tok, size_t *len) {
    const __m128i nine = _mm_set1_epi8(9), four = _mm_set1_epi8(4), space = _mm_set1_epi8(' '),
                  newline = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    uint64_t blank = 0, eol = 0, nul = 0;
    for (int i = 0; i < 4 && !eol; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        __m128i x = _mm_sub_epi8(v, nine);
        __m128i b = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, four), x), _mm_cmpeq_epi8(v, space));
        blank |= (uint64_t)(uint16_t)_mm_movemask_epi8(b) << (16 * i);
        eol |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, newline)) << (16 * i);
        nul |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) << (16 * i);
    }
    if (!eol) return NULL;
    const unsigned at = lowest_bit(eol);
    const uint64_t line = (1ULL << at) - 1;
    if ((nul & line) || (!run && p[0] == '#')) return NULL;
    const uint64_t field = ~blank & line;
    uint64_t starts = field & ~(field << 1), ends = field & ~(field >> 1);
    /* field i from the lowest bits left; next: drop them (0 stays 0: check before taking) */
#define TAKE(i)                                                             \
    do {                                                                    \
        const unsigned s_ = lowest_bit(starts), e_ = lowest_bit(ends);      \
        tok[i] = p + s_;                                                    \
        len[i] = e_ - s_ + 1;                                               \
    } while (0)
#define NEXT() (starts &= starts - 1, ends &= ends - 1)
    if (!starts) return NULL;
    TAKE(0);
    NEXT();
    NEXT();
    if (!starts) return NULL;
    TAKE(2);
    NEXT();
    if (!starts) return NULL;
    if (!run) {
        TAKE(3);
        NEXT();
        if (starts) return NULL; /* qrels lines have exactly four fields */
    } else {
        NEXT();
        if (!starts) return NULL;
        TAKE(4);
        NEXT();
        if (!starts || *tok[0] == '#') return NULL; /* six fields at least; a comment */
    }
#undef TAKE
#undef NEXT
    return p + at + 1;
}
#endif

/* The end of the line at p (its newline, or end); NULL when a NUL byte comes first. */
static inline const char *line_end(const char *p, const char *end) {
    const char *newline = memchr(p, '\n', (size_t)(end - p));
    const char *stop = newline ? newline : end;
    return memchr(p, 0, (size_t)(stop - p)) ? NULL : stop;
}

/* The next record line from *pp on, before `stop`: its start, with its fields in tok and
 * len and *pp past its newline; NULL at `stop`, or when a line declines (*d says why).
 * Comments (in a run, blank lines too) are passed over. The one definition of a line, for
 * every path; `limit` is the end of the buffer (the common line is read in blocks of 16
 * bytes, up to it). */
static inline const char *next_record(const char **pp, const char *stop, const char *limit,
                                      int run, const char **tok, size_t *len, Declined *d) {
    const int k = run ? 6 : 4;
    const char *p = *pp, *line = p, *why;
    while (p < stop) {
        line = p;
#if FAST_LINES
        if (limit - p >= 64) {
            const char *next = fast_line(p, run, tok, len);
            if (next) {
                *pp = next;
                return line;
            }
        }
#else
        (void)limit;
#endif
        int n = 0, comment = !run && *p == '#';
        while (!comment) {
            while (p < stop && CLS[(unsigned char)*p] == C_BLANK) p++;
            if (p == stop || *p == '\n') break;
            if (run && n == 0 && *p == '#') {
                comment = 1;
                break;
            }
            if (n == k) { /* text after a run line's sixth field is ignored, as trec_eval does */
                why = "too many fields"; /* qrels lines have exactly four */
                if (!run) goto declined;
                why = "NUL byte";
                if (!(p = line_end(p, stop))) goto declined;
                break;
            }
            tok[n] = p;
            p = token_end(p, stop);
            why = "NUL byte";
            if (p < stop && *p == 0) goto declined;
            len[n] = (size_t)(p - tok[n]);
            why = "field too long";
            if (len[n] > UINT32_MAX) goto declined;
            n++;
        }
        why = "NUL byte";
        if (comment && !(p = line_end(p, stop))) goto declined;
        why = "blank line";
        if (!comment && n == 0 && !run) goto declined;
        why = "too few fields";
        if (n != 0 && n != k) goto declined;
        p = p < stop ? p + 1 : p; /* the newline */
        if (n) {
            *pp = p;
            return line;
        }
    }
    *pp = p;
    return NULL;
declined:
    decline(d, line, why);
    return NULL;
}

/* The general path: split one file into records (any order of lines). */
static int scan_file(File *f, Registry *reg) {
    const char *p = f->buf, *end = f->buf + f->size;
    const int value_field = f->run ? 4 : 3;
    const char *tok[6];
    size_t len[6];
    BlockId id = {0};
    uint32_t index = 0;
    if (reserve(&f->recs, f->size, f->run ? 6 : 4) != OK) return NOMEM;
    for (const char *line; (line = next_record(&p, end, end, f->run, tok, len, &f->declined));) {
        if (!in_block(&id, tok[0], len[0], end)) { /* a new block */
            int64_t found = registry_index(reg, tok[0], (uint32_t)len[0], end);
            if (found < 0) return NOMEM;
            index = (uint32_t)found;
            id = block_id(tok[0], (uint32_t)len[0], end);
            Query *query = &reg->q[index];
            if (f->run ? query->n_run : query->n_qrels) f->contiguous = 0;
            else if (f->run) query->first_run = (uint32_t)f->recs.n;
            else query->first_qrels = (uint32_t)f->recs.n;
            if (f->run && !query->n_run) {
                if (grow((void **)&reg->run_order, &reg->cap_run_order, reg->n_run_order + 1,
                         sizeof(uint32_t)) != OK)
                    return NOMEM;
                reg->run_order[reg->n_run_order++] = index;
            }
        }
        Rec *r = new_record(&f->recs, tok, len, index, end);
        if (!r) return NOMEM;
        const char *text = tok[value_field];
        size_t text_len = len[value_field];
        int status = f->run ? parse_score(text, text_len, &r->value)
                            : parse_grade(text, text_len, &r->value);
        if (status == DECLINE) return decline(&f->declined, line, "value spelling");
        if (status == SLOW) {
            if (grow((void **)&f->slow.v, &f->slow.cap, f->slow.n + 1, sizeof(Slow)) != OK)
                return NOMEM;
            f->slow.v[f->slow.n++] = (Slow){f->recs.n, text, text_len};
            r->value = 0.0;
        }
        ++*(f->run ? &reg->q[index].n_run : &reg->q[index].n_qrels);
        if (++f->recs.n >= UINT32_MAX) return decline(&f->declined, line, "too many lines");
    }
    if (f->declined.why) return DECLINE;
    if (!f->recs.n) return decline(&f->declined, f->buf, "no records");
    return OK;
}

/* With the GIL: a score spelling that needs Python's correctly rounded conversion (the
 * whole of the n bytes at s, or DECLINE). */
static int slow_score(const char *s, size_t n, double *out) {
    char small[64];
    char *text = n < sizeof small ? small : PyMem_Malloc(n + 1);
    if (!text) return NOMEM;
    memcpy(text, s, n);
    text[n] = 0;
    char *stop = NULL;
    double v = PyOS_string_to_double(text, &stop, NULL);
    int whole = stop == text + n;
    if (text != small) PyMem_Free(text);
    if (PyErr_Occurred() || !whole) {
        PyErr_Clear();
        return DECLINE;
    }
    *out = v;
    return OK;
}

/* With the GIL: the scores of the general path that need slow_score. */
static int convert_slow(File *f) {
    for (size_t i = 0; i < f->slow.n; i++) {
        const Slow *s = &f->slow.v[i];
        int status = slow_score(s->text, s->len, &f->recs.v[s->rec].value);
        if (status == DECLINE) return decline(&f->declined, s->text, "value spelling");
        if (status != OK) return status;
    }
    return OK;
}

/* trec_eval's order: score descending, then document id descending (strcmp order). */
static inline int ranks_before(const Rec *a, const Rec *b) {
    if (a->value != b->value) return a->value > b->value;
    return compare_ids(a->doc, a->len, b->doc, b->len) > 0;
}

static int compare_rank(const void *x, const void *y) {
    const Rec *a = x, *b = y;
    return ranks_before(a, b) ? -1 : ranks_before(b, a) ? 1 : 0;
}

/* Insertion sort: runs come nearly in order (only ties out of place), so this is linear;
 * a scrambled query exceeds the move budget and is sorted with qsort instead. */
static void rank_sort(Rec *a, size_t n) {
    size_t moves = 0, budget = 4 * n + 64;
    for (size_t i = 1; i < n; i++) {
        if (!ranks_before(&a[i], &a[i - 1])) continue;
        Rec x = a[i];
        size_t j = i;
        do {
            a[j] = a[j - 1];
            j--;
            moves++;
        } while (j > 0 && ranks_before(&x, &a[j - 1]));
        a[j] = x;
        if (moves > budget) {
            qsort(a, n, sizeof(Rec), compare_rank);
            return;
        }
    }
}

/* A query id for sorting: its first 8 bytes as a big-endian number (zero padded: ids have
 * no NUL, so this keeps byte order) decide most comparisons without touching the id. */
typedef struct {
    uint64_t prefix;
    const char *id;
    uint32_t len;
    uint32_t index;
} QueryKey;

static uint64_t prefix_of(const char *id, uint32_t len) {
    uint64_t prefix = 0;
    for (uint32_t i = 0; i < 8; i++)
        prefix = prefix << 8 | (i < len ? (unsigned char)id[i] : 0);
    return prefix;
}

static int compare_query(const void *x, const void *y) {
    const QueryKey *a = x, *b = y;
    if (a->prefix != b->prefix) return a->prefix < b->prefix ? -1 : 1;
    return compare_ids(a->id, a->len, b->id, b->len);
}

/* Sort keys in byte order of their ids: a radix sort of the prefixes (8 passes of a byte,
 * least significant first, a pass skipped when all keys share that byte), then the runs of
 * equal prefixes (ids longer than 8 bytes, or equal ids) by compare_query. A qsort of the
 * ids reads each id's memory many times, at random places in the file; this touches only
 * the keys. `tmp`: room for n keys. */
static void sort_keys(QueryKey *keys, QueryKey *tmp, size_t n) {
    size_t count[256];
    QueryKey *from = keys, *to = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) count[(from[i].prefix >> shift) & 255]++;
        if (n && count[(from[0].prefix >> shift) & 255] == n) continue; /* one value */
        size_t at = 0;
        for (int b = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) to[count[(from[i].prefix >> shift) & 255]++] = from[i];
        QueryKey *swap = from;
        from = to;
        to = swap;
    }
    if (from != keys) memcpy(keys, from, n * sizeof *keys);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && keys[j].prefix == keys[i].prefix) j++;
        if (j - i > 1) qsort(keys + i, j - i, sizeof *keys, compare_query);
        i = j;
    }
}

/* A repeated document, by the byte offsets of both lines' document fields. */
typedef struct {
    size_t a, b;
    const char *qid, *doc;
    uint32_t qlen, dlen;
    int found;
} At;

/* Record `again` of query qid repeats the document of `first` (both read from buf): kept
 * when it is the earliest repeating line so far. */
static void note_at(At *r, const char *buf, const char *qid, uint32_t qlen, const Rec *first,
                    const Rec *again) {
    size_t b = (size_t)(again->doc - buf);
    if (r->found && b >= r->b) return;
    *r = (At){(size_t)(first->doc - buf), b, qid, again->doc, qlen, again->len, 1};
}

/* A table of the n judged records of `query` by document, record i being
 * recs[order ? order[i] : i] (read from buf, ending at end): `slot` (room for
 * table_size(n)) holds index in recs + 1; a repeated document is noted in *repeat.
 * Returns the table's mask. */
static size_t judged_table(const Rec *recs, const uint32_t *order, size_t n, const Key *query,
                           const char *buf, const char *end, uint32_t *slot, At *repeat) {
    const size_t mask = table_size(n) - 1;
    memset(slot, 0, (mask + 1) * sizeof *slot);
    for (size_t i = 0; i < n; i++) {
        const uint32_t index = order ? order[i] : (uint32_t)i;
        const Rec *r = &recs[index];
        size_t s = r->hash & mask;
        while (slot[s] && !same_doc(&recs[slot[s] - 1], end, r, end)) s = (s + 1) & mask;
        if (slot[s]) note_at(repeat, buf, query->id, query->len, &recs[slot[s] - 1], r);
        else slot[s] = index + 1;
    }
    return mask;
}

/* The records of each query of one file: record i of query q is
 * recs[order ? order[start[q] + i] : start[q] + i]. */
typedef struct {
    const Rec *recs;
    size_t *start;
    uint32_t *order; /* NULL when the file is one block per query */
} Groups;

static inline uint32_t member(const Groups *g, uint32_t q, size_t i) {
    return g->order ? g->order[g->start[q] + i] : (uint32_t)(g->start[q] + i);
}

static int group(const File *f, const Registry *reg, Groups *g) {
    g->recs = f->recs.v;
    g->order = NULL;
    g->start = malloc((reg->n ? reg->n : 1) * sizeof *g->start);
    if (!g->start) return NOMEM;
    if (f->contiguous) {
        for (size_t q = 0; q < reg->n; q++)
            g->start[q] = f->run ? reg->q[q].first_run : reg->q[q].first_qrels;
        return OK;
    }
    size_t total = 0;
    for (size_t q = 0; q < reg->n; q++) {
        g->start[q] = total;
        total += f->run ? reg->q[q].n_run : reg->q[q].n_qrels;
    }
    size_t *next = malloc((reg->n ? reg->n : 1) * sizeof *next);
    g->order = malloc((total ? total : 1) * sizeof *g->order);
    if (!next || !g->order) {
        free(next);
        return NOMEM;
    }
    memcpy(next, g->start, reg->n * sizeof *next);
    for (size_t i = 0; i < f->recs.n; i++) g->order[next[f->recs.v[i].query]++] = (uint32_t)i;
    free(next);
    return OK;
}

/* How much of each ranking the output keeps: all of it when `depth` is 0, else its first
 * `depth` grades and on to its first grade >= `level` (see the module doc). */
typedef struct {
    size_t depth;
    double level;
} Cut;

/* The Python object a cut is set on, read by the join's threads: `level` is written before
 * `depth` (release), and read after it (acquire), so a depth is never seen without its
 * level. `kernel`, set once, and published the same way, is the capsule's (which the
 * object holds) or NULL. */
typedef struct {
    PyObject_HEAD size_t depth;
    double level;
    PyObject *capsule;
    const RaggedKernel *kernel;
} CutObject;

#if defined(__GNUC__) || defined(__clang__)
#define LOAD_ACQUIRE(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#else /* one aligned word: not torn; the order is the compiler's */
#define LOAD_ACQUIRE(p) (*(volatile const size_t *)(p))
#define STORE_RELEASE(p, v) (*(volatile size_t *)(p) = (v))
#endif

/* The kernel of the cut, or NULL (none yet, or no cut). */
static const RaggedKernel *kernel_of(const CutObject *c) {
    return c ? (const RaggedKernel *)(uintptr_t)LOAD_ACQUIRE(&c->kernel) : NULL;
}

static Cut cut_of(const CutObject *c) {
    Cut cut = {0, Py_HUGE_VAL};
    if (!c) return cut;
    cut.depth = LOAD_ACQUIRE(&c->depth);
    if (cut.depth) cut.level = c->level;
    return cut;
}

/* Whether a ranking's grades can stop after its grade i, `seen` telling whether one of
 * them so far is >= the level: nothing after it is read. */
static inline int cut_after(Cut cut, size_t i, int seen) {
    return cut.depth && i + 1 >= cut.depth && (seen || !(cut.level < Py_HUGE_VAL));
}

/* The grades kept of a ranking of n documents: `stop` when cut_after held after grade
 * stop - 1, else (stop 0) all of them, or its first `depth` when it has more (a ranking
 * without a grade >= the level). */
static inline size_t cut_length(Cut cut, size_t n, size_t stop) {
    if (stop) return stop;
    return cut.depth && n > cut.depth ? cut.depth : n;
}

/* The grades of the ranked documents kept[0:n] (read from a buffer ending at kept_end),
 * from a table of judged records (`jslot`: record index + 1), written to `out` as far as
 * the cut keeps them: the number kept. */
static inline size_t grade_ranking(const Rec *kept, size_t n, const char *kept_end,
                                   const Rec *judged, const char *judged_end,
                                   const uint32_t *jslot, size_t jmask, Cut cut, double *out) {
    size_t stop = 0;
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        const Rec *r = &kept[i];
        size_t s = r->hash & jmask;
        while (jslot[s] && !same_doc(&judged[jslot[s] - 1], judged_end, r, kept_end))
            s = (s + 1) & jmask;
        out[i] = jslot[s] ? judged[jslot[s] - 1].value : 0.0;
        seen |= out[i] >= cut.level;
        if (cut_after(cut, i, seen)) {
            stop = i + 1;
            break;
        }
    }
    return cut_length(cut, n, stop);
}

typedef struct {
    /* inputs */
    File *qrels, *run;
    Registry *reg;
    int keep_best;
    Cut cut; /* read once, when the files are read (one thread) */
    /* outputs, evaluated queries in byte order of their ids */
    double *rel, *judged;
    int64_t *rel_offsets, *judged_offsets;
    uint32_t *evaluated;
    size_t n_evaluated, n_qrels_queries;
    At qrels_repeat, run_repeat;
    /* work space */
    Groups judged_groups, run_groups;
    uint32_t *slot_of; /* query -> its place among the evaluated, or UINT32_MAX */
    uint32_t *n_kept;  /* per evaluated query: ranked documents after removing repeats */
    uint32_t *jslot, *rslot;
    Rec *kept;
} Join;

/* One query: repeats in both files; if evaluated, its ranking and grades, written at its
 * place in the output (room for all its run records: repeats leave a gap, closed later). */
static void join_query(Join *j, uint32_t q) {
    const Query *query = &j->reg->q[q];
    const Groups *g = &j->judged_groups;
    const Rec *judged_recs = g->recs, *run_recs = j->run_groups.recs;
    const char *qbuf = j->qrels->buf, *rbuf = j->run->buf;
    const char *qend = qbuf + j->qrels->size, *rend = rbuf + j->run->size;
    uint32_t *jslot = j->jslot, *rslot = j->rslot;
    Rec *kept = j->kept;
    /* judged documents: repeats, and a table document -> record (of jrecs) */
    const Rec *jrecs = g->order ? g->recs : g->recs + g->start[q];
    const size_t jmask = judged_table(jrecs, g->order ? g->order + g->start[q] : NULL,
                                      query->n_qrels, &query->key, qbuf, qend, jslot,
                                      &j->qrels_repeat);
    const uint32_t slot = j->slot_of[q];
    const int evaluated = slot != UINT32_MAX;
    /* nothing more to check: repeats are resolved, or the qrels error comes first */
    if ((!evaluated && j->keep_best) || j->qrels_repeat.found || !query->n_run) return;
    /* ranked documents: repeats (or the best-scored line of each) */
    size_t rmask = table_size(query->n_run) - 1;
    memset(rslot, 0, (rmask + 1) * sizeof *rslot);
    size_t n_kept = 0;
    for (size_t i = 0; i < query->n_run; i++) {
        uint32_t index = member(&j->run_groups, q, i);
        const Rec *r = &run_recs[index];
        size_t s = r->hash & rmask;
        while (rslot[s] && !same_doc(&kept[rslot[s] - 1], rend, r, rend)) s = (s + 1) & rmask;
        if (!rslot[s]) {
            kept[n_kept] = *r;
            rslot[s] = (uint32_t)++n_kept;
        } else if (!j->keep_best) { /* kept[] still holds the first line's record */
            note_at(&j->run_repeat, rbuf, query->key.id, query->key.len, &kept[rslot[s] - 1], r);
        } else if (r->value > kept[rslot[s] - 1].value) {
            kept[rslot[s] - 1] = *r;
        }
    }
    if (!evaluated || j->run_repeat.found) return;
    rank_sort(kept, n_kept);
    j->n_kept[slot] = (uint32_t)grade_ranking(kept, n_kept, rend, jrecs, qend, jslot, jmask, j->cut,
                                              j->rel + j->rel_offsets[slot]);
    double *judged = j->judged + j->judged_offsets[slot];
    for (size_t i = 0; i < query->n_qrels; i++)
        judged[i] = judged_recs[member(&j->judged_groups, q, i)].value;
}

/* Without the GIL: place the evaluated queries in byte order, then join query by query in
 * the run's order (its records are read front to back), then the qrels-only queries. */
static int join_queries(Join *j) {
    const Registry *reg = j->reg;
    QueryKey *keys = NULL;
    int status = NOMEM;
    if (group(j->qrels, reg, &j->judged_groups) != OK) goto done;
    if (group(j->run, reg, &j->run_groups) != OK) goto done;
    size_t max_judged = 0, max_ranked = 0, n = reg->n ? reg->n : 1;
    keys = malloc(n * sizeof *keys);
    j->slot_of = malloc(n * sizeof *j->slot_of);
    j->n_kept = malloc(n * sizeof *j->n_kept);
    if (!keys || !j->slot_of || !j->n_kept) goto done;
    for (size_t q = 0; q < reg->n; q++) {
        const Query *query = &reg->q[q];
        const Key *k = &query->key;
        keys[q] = (QueryKey){prefix_of(k->id, k->len), k->id, k->len, (uint32_t)q};
        if (query->n_qrels > max_judged) max_judged = query->n_qrels;
        if (query->n_run > max_ranked) max_ranked = query->n_run;
        if (query->n_qrels) j->n_qrels_queries++;
    }
    QueryKey *tmp = malloc(n * sizeof *tmp);
    if (!tmp) goto done;
    sort_keys(keys, tmp, reg->n);
    free(tmp);
    j->rel_offsets[0] = j->judged_offsets[0] = 0;
    for (size_t k = 0; k < reg->n; k++) {
        const uint32_t q = keys[k].index;
        const Query *query = &reg->q[q];
        j->slot_of[q] = UINT32_MAX;
        if (!query->n_qrels || !query->n_run) continue;
        size_t slot = j->n_evaluated++;
        j->slot_of[q] = (uint32_t)slot;
        j->evaluated[slot] = q;
        j->rel_offsets[slot + 1] = j->rel_offsets[slot] + query->n_run;
        j->judged_offsets[slot + 1] = j->judged_offsets[slot] + query->n_qrels;
    }
    j->jslot = malloc(table_size(max_judged) * sizeof *j->jslot);
    j->rslot = malloc(table_size(max_ranked) * sizeof *j->rslot);
    j->kept = malloc((max_ranked ? max_ranked : 1) * sizeof *j->kept);
    if (!j->jslot || !j->rslot || !j->kept) goto done;
    for (size_t k = 0; k < reg->n_run_order; k++) join_query(j, reg->run_order[k]);
    for (size_t q = 0; q < reg->n; q++)
        if (!reg->q[q].n_run) join_query(j, (uint32_t)q);
    /* close the gaps left by repeated documents (keep_best) and by the cut; after a repeat
     * (an error), the output is not used */
    const int failed = j->qrels_repeat.found || j->run_repeat.found;
    int64_t end = 0;
    for (size_t slot = 0; slot < j->n_evaluated && !failed; slot++) {
        int64_t start = j->rel_offsets[slot];
        if (start != end) memmove(j->rel + end, j->rel + start, j->n_kept[slot] * sizeof(double));
        j->rel_offsets[slot] = end;
        end += j->n_kept[slot];
    }
    j->rel_offsets[j->n_evaluated] = end;
    status = OK;
done:
    free(j->judged_groups.start);
    free(j->judged_groups.order);
    free(j->run_groups.start);
    free(j->run_groups.order);
    free(j->slot_of);
    free(j->n_kept);
    free(j->jslot);
    free(j->rslot);
    free(j->kept);
    free(keys);
    return status;
}

/* ---- The block path: files of one block per query, read in parts ------------------------
 *
 * A TREC file normally has all the lines of a query together (a block). Each file is cut
 * into pieces at block boundaries (`split`, `Pieces`), which the threads -- one a part, each
 * with its own buffers -- take one after the other in file order and read without the GIL:
 * first the qrels (records and repeats per block), then the run, whose blocks are joined
 * as soon as they end -- repeats, trec_eval's order and the grades of ranked documents, in
 * a small buffer that stays in cache -- so that the run's records are never all in memory.
 * Then the evaluated queries are put in byte order of their ids. A query found in two
 * blocks (in one piece or in two) means the file is not one block per query: the block
 * path gives up and the general path reads the files. Neither the number of parts, nor
 * where the pieces are cut, nor which thread reads which changes a byte of the result:
 * each piece starts at a line start and is read with the same line rules, and the first
 * error in file order is the first error of the earliest piece that has one (no piece
 * after a failed one is handed out).
 */

#if defined(_WIN32)
#define THREADS 0
#else
#include <pthread.h>
#define THREADS 1
#endif

enum { NONCONTIGUOUS = 3 };
#define MAX_PARTS 64
#define MAX_PIECES 1024
#define PIECES_A_PART 16            /* a file is cut into this many pieces a thread */
#define MIN_PIECE ((size_t)1 << 20) /* bytes: smaller files are cut into fewer */

/* A file cut into pieces at block boundaries, handed to the threads one at a time in file
 * order: a thread that is slowed (it shares its core with the interpreter importing, or
 * with another process) reads fewer of them, and the threads end at about the same time.
 * Cut into as many pieces as threads, the slowest decided the wall time. */
typedef struct {
    const char *bound[MAX_PIECES + 1];
    int next;    /* the next piece to hand out */
    int stop_at; /* the first piece that failed (the count while none has): none after it */
    int map_in;  /* a file mapping: each piece's pages are mapped in by the thread reading it */
    int drop;    /* and dropped from the mapping once read (the run: read once) */
#if THREADS
    pthread_mutex_t lock;
#endif
} Pieces;

/* The next piece for a thread to read, or -1 when none is left (or an earlier one failed). */
static int claim(Pieces *p) {
#if THREADS
    pthread_mutex_lock(&p->lock);
#endif
    int k = p->next < p->stop_at ? p->next++ : -1;
#if THREADS
    pthread_mutex_unlock(&p->lock);
#endif
    return k;
}

/* Piece k failed: no piece after it is handed out. */
static void stop_after(Pieces *p, int k) {
#if THREADS
    pthread_mutex_lock(&p->lock);
#endif
    if (k < p->stop_at) p->stop_at = k;
#if THREADS
    pthread_mutex_unlock(&p->lock);
#endif
}

/* Where part boundaries go: the first line at or after `at` that starts a block, i.e.
 * the first record line whose query differs from that of the first record line at or
 * after `at`. A line that does not read stops the search (its part declines it). */
static const char *split_point(const char *buf, const char *at, const char *end, int run) {
    if (at > buf && at[-1] != '\n') {
        const char *newline = memchr(at, '\n', (size_t)(end - at));
        if (!newline) return end;
        at = newline + 1;
    }
    const char *id = NULL, *tok[6];
    size_t id_len = 0, len[6];
    Declined d = {0};
    for (const char *line; (line = next_record(&at, end, end, run, tok, len, &d));) {
        if (!id) {
            id = tok[0];
            id_len = len[0];
        } else if (!same_id(id, end, (uint32_t)id_len, tok[0], end, (uint32_t)len[0])) {
            return line;
        }
    }
    return d.why ? d.where : end;
}

/* n + 1 boundaries of n parts of about equal size. */
static void split(const char *buf, size_t size, int run, int n, const char **bounds) {
    bounds[0] = buf;
    for (int t = 1; t < n; t++) {
        const char *at = buf + (size_t)((double)size * t / n);
        if (at < bounds[t - 1]) at = bounds[t - 1];
        bounds[t] = split_point(buf, at, buf + size, run);
    }
    bounds[n] = buf + size;
}

/* The file cut into pieces for `threads` threads: PIECES_A_PART a thread where they are
 * at least MIN_PIECE long, one a thread at least (one piece for one thread). */
static void pieces_init(Pieces *p, const char *buf, size_t size, int run, int threads,
                        int mapped) {
    size_t n = threads > 1 ? (size_t)threads * PIECES_A_PART : 1;
    if (n > size / MIN_PIECE) n = size / MIN_PIECE;
    if (n > MAX_PIECES) n = MAX_PIECES;
    if (n < (size_t)threads) n = (size_t)threads;
    split(buf, size, run, (int)n, p->bound);
    p->next = 0;
    p->stop_at = (int)n;
    p->map_in = mapped;
    p->drop = mapped && run; /* the qrels' records are read until the join ends */
}

/* A block of the qrels: a query's records in a part. */
typedef struct {
    Key key;
    size_t first;
    uint32_t n;
} QBlock;

/* What a thread's part of either file holds besides its own: the file, the piece being
 * read, what the part found; `read` reads the pieces it is handed (its thread's work). */
typedef struct Part {
    const char *buf, *start, *stop, *end;
    Pieces *pieces;
    int (*read)(struct Part *);
    At repeat;
    Declined declined;
    int status;
    int piece; /* the piece that failed */
} Part;

/* Part `t` of the parts (of either kind) whose first Part is `first`, `stride` bytes apart. */
static inline Part *part_at(Part *first, size_t stride, int t) {
    return (Part *)(void *)((char *)first + (size_t)t * stride);
}

/* The QPart or RPart whose Part is p. */
#define PART_OF(type, p) ((type *)(void *)((char *)(p) - offsetof(type, part)))

/* A thread's part of the qrels. Its Part, mostly read, comes last: the counters this thread
 * writes at each line stay off the cache lines the next part's thread reads at each line. */
typedef struct {
    Recs recs;
    QBlock *blocks;
    size_t n_blocks, cap_blocks;
    uint32_t *slot;
    size_t cap_slot;
    Part part;
} QPart;

/* A query of the qrels, once the parts are read. */
typedef struct {
    Key key;
    uint32_t n;
    const Rec *recs;
} QQuery;

/* The judgments repeated in the last block of a qrels part. */
static int close_qblock(QPart *q) {
    if (!q->n_blocks) return OK;
    const QBlock *b = &q->blocks[q->n_blocks - 1];
    if (grow((void **)&q->slot, &q->cap_slot, table_size(b->n), sizeof *q->slot) != OK)
        return NOMEM;
    judged_table(q->recs.v + b->first, NULL, b->n, &b->key, q->part.buf, q->part.end, q->slot,
                 &q->part.repeat);
    return OK;
}

/* The pages of a file mapping from a to b, mapped in at once (MADV_POPULATE_READ, Linux
 * 5.14; elsewhere the reads fault them in): by the thread about to read them, so that
 * each thread maps in its own pieces, instead of one thread the whole file before any is
 * read (mmap's MAP_POPULATE). */
static void map_in(const char *a, const char *b) {
#if defined(__linux__) && defined(MADV_POPULATE_READ)
    advise_pages(a, b, 0, MADV_POPULATE_READ);
#else
    (void)a;
    (void)b;
#endif
}

/* The whole pages of a shared file mapping from a to b, dropped from the mapping once read:
 * they stay in the page cache, and a later read (an error's line number, a deferred
 * block) maps them in again. Unmapping the file then has almost nothing left to undo
 * (it holds the process's memory map, which the command's thread waits for to allocate). */
static void drop_pages(const char *a, const char *b) {
#if defined(__linux__) && defined(MADV_DONTNEED)
    advise_pages(a, b, 1, MADV_DONTNEED);
#else
    (void)a;
    (void)b;
#endif
}

/* Hand a thread's part the pieces one after the other: `scan(part)` reads part->start to
 * part->stop. A failure ends it, noted in part->piece, and no piece after it is handed out
 * to any thread. */
static int read_pieces(Part *part, int (*scan)(Part *)) {
    Pieces *pieces = part->pieces;
    for (int k; (k = claim(pieces)) >= 0;) {
        part->start = pieces->bound[k];
        part->stop = pieces->bound[k + 1];
        if (pieces->map_in) map_in(part->start, part->stop);
        int status = scan(part);
        if (pieces->drop) drop_pages(part->start, part->stop);
        if (status != OK) {
            part->piece = k;
            stop_after(pieces, k);
            return status;
        }
    }
    return OK;
}

/* The lines of one piece (part->start to part->stop): its blocks, closed as they end. */
static int scan_qrels_piece(Part *part) {
    QPart *q = PART_OF(QPart, part);
    const char *p = part->start, *end = part->end;
    const char *tok[6];
    size_t len[6];
    BlockId id = {0};
    for (const char *line;
         (line = next_record(&p, part->stop, end, 0, tok, len, &part->declined));) {
        QBlock *b = id.len ? &q->blocks[q->n_blocks - 1] : NULL;
        if (!in_block(&id, tok[0], len[0], end)) {
            if (id.len && close_qblock(q) != OK) return NOMEM;
            if (grow((void **)&q->blocks, &q->cap_blocks, q->n_blocks + 1, sizeof(QBlock)) != OK)
                return NOMEM;
            b = &q->blocks[q->n_blocks++];
            *b = (QBlock){{tok[0], (uint32_t)len[0], hash_id(tok[0], len[0], end)}, q->recs.n, 0};
            id = block_id(tok[0], (uint32_t)len[0], end);
        }
        Rec *r = new_record(&q->recs, tok, len, 0, end);
        if (!r) return NOMEM;
        if (parse_grade(tok[3], len[3], &r->value) != OK)
            return decline(&part->declined, line, "value spelling");
        b->n++;
        if (++q->recs.n >= UINT32_MAX) return decline(&part->declined, line, "too many lines");
    }
    if (part->declined.why) return DECLINE;
    return id.len ? close_qblock(q) : OK;
}

/* The pieces of the qrels this thread is handed, one after the other. */
static int scan_qrels_part(Part *part) {
    QPart *q = PART_OF(QPart, part);
    if (reserve(&q->recs, (size_t)(part->end - part->buf), 4) != OK) return NOMEM;
    return read_pieces(part, scan_qrels_piece);
}

/* A block of the run: a query's lines in a part, joined when it ends. */
enum { UNRESOLVED = -2, RESOLVE_AT = 8 };

typedef struct {
    Key key;
    int64_t query;         /* in the qrels, or -1; UNRESOLVED until looked up */
    const char *from, *to; /* its lines, to read again when deferred */
    size_t out, judged;    /* its first grade and judged grade in the part's output */
    uint32_t n_kept;       /* grades written: ranked documents, repeats removed, cut */
    int deferred;          /* a score needs Python's conversion: joined later, with the GIL */
    uint64_t prefix;       /* of its query id, for sorting (prefix_of) */
    size_t id_at;          /* its query id's copy in the part's `ids` */
    int64_t value_at;      /* its values in the part's `values`; UNJOINED, or UNVALUED */
} RBlock;

enum { UNJOINED = -2, UNVALUED = -1 };

/* A thread's part of the run; its Part last, as in a QPart. */
typedef struct {
    const QQuery *queries;
    const Index *qrels;
    int keep_best, skip_join;
    const CutObject *cut; /* read at each block */
    Recs cur;  /* the block's records */
    Rec *kept; /* its documents without repeats */
    size_t cap_kept;
    uint64_t *rslot; /* the block's documents: see join_block */
    uint32_t *jslot;
    size_t cap_rslot, cap_jslot;
    uint32_t stamp;
    double *out; /* grades of the evaluated blocks, block after block */
    size_t n_out, cap_out;
    double *judged; /* and the judged grades of their queries */
    size_t n_judged, cap_judged;
    double *values; /* with a kernel: each evaluated block's values, one after the other */
    size_t n_values, cap_values;
    void *scratch; /* the kernel's room for one query */
    int not_finite; /* the kernel refused a grade */
    size_t judged_bound; /* the qrels' records: the judged grades written at most */
    const char *qrels_end;
    RBlock *blocks;
    size_t n_blocks, cap_blocks;
    /* the blocks' query ids, copied while their lines are in cache: sorting them and
     * making them str objects then reads this, not a page of the file for each */
    char *ids;
    size_t n_ids, cap_ids;
    size_t n_records;
    int slow;
    Part part;
} RPart;

/* The slot of document r in a block's stamped table: the one holding it (this block's
 * stamp, the same document in `kept`), or the free one it goes in. */
static inline size_t doc_slot(const uint64_t *slots, size_t mask, uint32_t stamp,
                              const Rec *kept, const Rec *r, const char *end) {
    size_t s = r->hash & mask;
    while ((uint32_t)(slots[s] >> 32) == stamp &&
           !same_doc(&kept[(uint32_t)slots[s]], end, r, end))
        s = (s + 1) & mask;
    return s;
}

/* The values of a joined block, from its grades in the part's output, by the kernel. */
static int value_block(RPart *p, RBlock *b, const RaggedKernel *k) {
    const size_t m = (size_t)k->n_metrics;
    if (!p->scratch && !(p->scratch = malloc(k->scratch_bytes ? k->scratch_bytes : 1)))
        return NOMEM;
    if (grow((void **)&p->values, &p->cap_values, (p->n_values + 1) * m, sizeof(double)) != OK)
        return NOMEM;
    b->value_at = (int64_t)p->n_values++;
    if (!k->values(k, p->scratch, p->out + b->out, b->n_kept, p->judged + b->judged,
                   p->queries[b->query].n, p->values + (size_t)b->value_at * m, 1))
        p->not_finite = 1;
    return OK;
}

/* The blocks joined before the kernel was known, evaluated. */
static int value_rest(RPart *p, const RaggedKernel *k) {
    for (size_t i = 0; i < p->n_blocks; i++)
        if (p->blocks[i].value_at == UNVALUED && value_block(p, &p->blocks[i], k) != OK)
            return NOMEM;
    return OK;
}

/* The work of join_query for one block: repeats (or the best-scored line of each
 * document), trec_eval's order, the grades; and its values, when the cut has a kernel
 * (its grades are then written over by the next block's). */
static int join_block(RPart *p, RBlock *b) {
    const int evaluated = b->query >= 0;
    if (p->skip_join || (!evaluated && p->keep_best)) return OK;
    /* The block's documents, by hash: a slot holds (stamp << 32 | index in kept) and is
     * taken in this block when its stamp is this block's, so the table is not cleared for
     * each block, and can be sparse (4 slots a document or more): a probe then rarely
     * meets a taken slot, a branch the core would mispredict at every third document. */
    const size_t n = p->cur.n, size = table_size(4 * n), mask = size - 1;
    if (size > p->cap_rslot) {
        free(p->rslot);
        p->rslot = calloc(size, sizeof *p->rslot);
        p->cap_rslot = p->rslot ? size : 0;
        p->stamp = 0;
    }
    if (!p->rslot || grow((void **)&p->kept, &p->cap_kept, n, sizeof(Rec)) != OK) return NOMEM;
    if (++p->stamp == 0) { /* after 2^32 - 1 blocks */
        memset(p->rslot, 0, p->cap_rslot * sizeof *p->rslot);
        p->stamp = 1;
    }
    const uint32_t stamp = p->stamp;
    uint64_t *rslot = p->rslot;
    /* Without a repeat (the usual), the block's records are ranked where they are; from
     * the first repeat on, the documents are copied to `kept` (the same places so far). */
    Rec *kept = p->cur.v;
    size_t n_kept = 0, i = 0;
    for (; i < n; i++) {
        const size_t s = doc_slot(rslot, mask, stamp, kept, &p->cur.v[i], p->part.end);
        if ((uint32_t)(rslot[s] >> 32) == stamp) break;
        rslot[s] = (uint64_t)stamp << 32 | n_kept++;
    }
    if (i < n) {
        kept = p->kept;
        memcpy(kept, p->cur.v, n_kept * sizeof *kept);
    }
    for (; i < n; i++) {
        const Rec *r = &p->cur.v[i];
        const size_t s = doc_slot(rslot, mask, stamp, kept, r, p->part.end);
        if ((uint32_t)(rslot[s] >> 32) != stamp) {
            rslot[s] = (uint64_t)stamp << 32 | n_kept;
            kept[n_kept++] = *r;
        } else if (!p->keep_best) {
            note_at(&p->part.repeat, p->part.buf, b->key.id, b->key.len, &kept[(uint32_t)rslot[s]],
                    r);
        } else if (r->value > kept[(uint32_t)rslot[s]].value) {
            kept[(uint32_t)rslot[s]] = *r;
        }
    }
    if (!evaluated || p->part.repeat.found) return OK;
    rank_sort(kept, n_kept);
    const Cut cut = cut_of(p->cut);
    const QQuery *q = &p->queries[b->query];
    const size_t jsize = table_size(q->n), jmask = jsize - 1;
    if (grow((void **)&p->jslot, &p->cap_jslot, jsize, sizeof *p->jslot) != OK ||
        grow((void **)&p->out, &p->cap_out, p->n_out + n_kept, sizeof(double)) != OK)
        return NOMEM;
    uint32_t *jslot = p->jslot;
    memset(jslot, 0, jsize * sizeof *jslot);
    for (uint32_t i = 0; i < q->n; i++) { /* no repeats: skip_join otherwise */
        size_t s = q->recs[i].hash & jmask;
        while (jslot[s]) s = (s + 1) & jmask;
        jslot[s] = i + 1;
    }
    b->out = p->n_out;
    b->n_kept = (uint32_t)grade_ranking(kept, n_kept, p->part.end, q->recs, p->qrels_end, jslot,
                                        jmask, cut, p->out + p->n_out);
    p->n_out += b->n_kept; /* the next block writes over the rest */
    if (grow((void **)&p->judged, &p->cap_judged, p->n_judged + q->n, sizeof(double)) != OK)
        return NOMEM;
    b->judged = p->n_judged;
    for (uint32_t i = 0; i < q->n; i++) p->judged[p->n_judged++] = q->recs[i].value;
    b->value_at = UNVALUED;
    const RaggedKernel *k = kernel_of(p->cut);
    if (!k) return OK;
    if (value_block(p, b, k) != OK) return NOMEM;
    p->n_out = b->out;
    p->n_judged = b->judged;
    return OK;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* The block's query in the qrels, looked up a few lines into the block: the index slot
 * was prefetched when the block began, and the query's judgments are prefetched now for
 * the join at the block's end (each is a cache miss at a random place otherwise). */
static void resolve(RPart *p, RBlock *b) {
    b->query = index_find(p->qrels, b->key.id, b->key.len, b->key.hash);
    if (b->query < 0) return;
    const QQuery *q = &p->queries[b->query];
    const char *at = (const char *)q->recs, *stop = at + q->n * sizeof(Rec);
    for (int lines = 0; at < stop && lines < 32; at += 64, lines++) PREFETCH(at);
}

static int close_rblock(RPart *p) {
    if (!p->n_blocks) return OK;
    RBlock *b = &p->blocks[p->n_blocks - 1];
    if (b->query == UNRESOLVED) resolve(p, b);
    if (p->slow) {
        b->deferred = 1;
        return OK;
    }
    return join_block(p, b);
}

/* A run record from a line's fields; SLOW when its score needs Python's conversion. */
static inline int add_record(RPart *p, const char **tok, const size_t *len) {
    Rec *r = new_record(&p->cur, tok, len, 0, p->part.end);
    if (!r) return NOMEM;
    p->cur.n++;
    return parse_score(tok[4], len[4], &r->value);
}

/* The lines of one piece (part->start to part->stop): its blocks, joined as they end. */
static int scan_run_piece(Part *part) {
    RPart *p = PART_OF(RPart, part);
    const char *at = part->start, *end = part->end;
    const char *tok[6];
    size_t len[6];
    BlockId id = {0};
    for (const char *line;
         (line = next_record(&at, part->stop, end, 1, tok, len, &part->declined));) {
        RBlock *b = id.len ? &p->blocks[p->n_blocks - 1] : NULL;
        if (!in_block(&id, tok[0], len[0], end)) {
            if (id.len && close_rblock(p) != OK) return NOMEM;
            if (grow((void **)&p->blocks, &p->cap_blocks, p->n_blocks + 1, sizeof(RBlock)) != OK)
                return NOMEM;
            if (grow((void **)&p->ids, &p->cap_ids, p->n_ids + len[0], 1) != OK) return NOMEM;
            b = &p->blocks[p->n_blocks++];
            uint64_t hash = hash_id(tok[0], len[0], end);
            *b = (RBlock){{tok[0], (uint32_t)len[0], hash}, UNRESOLVED, line, line, 0, 0, 0, 0,
                          prefix_of(tok[0], (uint32_t)len[0]), p->n_ids, UNJOINED};
            memcpy(p->ids + p->n_ids, tok[0], len[0]);
            p->n_ids += len[0];
            id = block_id(tok[0], (uint32_t)len[0], end);
            PREFETCH(&p->qrels->slot[hash & p->qrels->mask]);
            p->cur.n = 0;
            p->slow = 0;
        }
        b->to = at;
        if (p->cur.n == RESOLVE_AT) resolve(p, b);
        int status = add_record(p, tok, len);
        if (status == NOMEM) return NOMEM;
        if (status == DECLINE) return decline(&part->declined, line, "value spelling");
        if (status == SLOW) p->slow = 1;
        if (++p->n_records >= UINT32_MAX) return decline(&part->declined, line, "too many lines");
    }
    if (part->declined.why) return DECLINE;
    return id.len ? close_rblock(p) : OK;
}

/* The pieces of the run this thread is handed, one after the other. */
static int scan_run_part(Part *part) {
    RPart *p = PART_OF(RPart, part);
    size_t bound = (size_t)(part->end - part->buf) / 12 + 1; /* grades: at most one a line */
    p->out = malloc(bound * sizeof(double));
    if (!p->out) return NOMEM;
    p->cap_out = bound;
    /* room for every judged grade at once (only touched pages cost memory): growing it
     * by doubling copied it into fresh pages, faulted in one by one */
    p->judged = malloc((p->judged_bound ? p->judged_bound : 1) * sizeof(double));
    if (!p->judged) return NOMEM;
    p->cap_judged = p->judged_bound ? p->judged_bound : 1;
    const int status = read_pieces(part, scan_run_piece);
    const RaggedKernel *k = kernel_of(p->cut);
    return status == OK && k ? value_rest(p, k) : status;
}

/* With the GIL: the blocks with a score that needs Python's correctly rounded
 * conversion, read again and joined. */
static int join_deferred(RPart *p) {
    Declined *d = &p->part.declined;
    const char *tok[6];
    size_t len[6];
    for (size_t k = 0; k < p->n_blocks; k++) {
        RBlock *b = &p->blocks[k];
        if (!b->deferred) continue;
        p->cur.n = 0;
        const char *at = b->from;
        for (const char *line; (line = next_record(&at, b->to, p->part.end, 1, tok, len, d));) {
            int status = add_record(p, tok, len);
            if (status == NOMEM) return NOMEM;
            if (status != SLOW) continue;
            status = slow_score(tok[4], len[4], &p->cur.v[p->cur.n - 1].value);
            if (status == DECLINE) return decline(d, line, "value spelling");
            if (status != OK) return NOMEM;
        }
        if (d->why) return DECLINE; /* read before: cannot */
        b->deferred = 0;
        if (join_block(p, b) != OK) return NOMEM;
    }
    return OK;
}

static void *work(void *arg) {
    Part *part = arg;
    part->status = part->read(part);
    return NULL;
}

/* The n parts read, each in its own thread (the calling one reads the first); one after
 * the other where threads are not available. */
static void in_parallel(Part *parts, size_t stride, int n) {
#if THREADS
    pthread_t tid[MAX_PARTS];
    int started[MAX_PARTS] = {0};
    for (int t = 1; t < n; t++)
        started[t] = pthread_create(&tid[t], NULL, work, part_at(parts, stride, t)) == 0;
#endif
    work(parts);
    for (int t = 1; t < n; t++) {
#if THREADS
        if (started[t]) {
            pthread_join(tid[t], NULL);
            continue;
        }
#endif
        work(part_at(parts, stride, t));
    }
}

/* The status other than OK of the part that failed in the earliest piece (the first
 * error in file order); `status` and `piece` are the first part's, parts `stride` apart. */
static int first_failure(Part *parts, size_t stride, int n, int *which) {
    int found = OK, first = 0;
    for (int t = 0; t < n; t++) {
        const Part *part = part_at(parts, stride, t);
        if (part->status != OK && (found == OK || part->piece < first)) {
            found = part->status;
            first = part->piece;
            *which = t;
        }
    }
    return found;
}

/* The earliest repeat the n parts found (its `found` 0 when none did). */
static const At *first_repeat(Part *parts, size_t stride, int n) {
    const At *first = &part_at(parts, stride, 0)->repeat;
    for (int t = 1; t < n; t++) {
        const At *r = &part_at(parts, stride, t)->repeat;
        if (r->found && (!first->found || r->b < first->b)) first = r;
    }
    return first;
}

static size_t line_at(const char *buf, const char *at) {
    size_t line = 1;
    const char *p = buf;
    while ((p = memchr(p, '\n', (size_t)(at - p))) != NULL) {
        line++;
        p++;
    }
    return line;
}

/* (line a, line b, query id, document id) of a repeat, or None. */
static PyObject *at_tuple(const char *buf, const At *r) {
    if (!r->found) Py_RETURN_NONE;
    return Py_BuildValue("(nny#y#)", (Py_ssize_t)line_at(buf, buf + r->a),
                         (Py_ssize_t)line_at(buf, buf + r->b), r->qid, (Py_ssize_t)r->qlen,
                         r->doc, (Py_ssize_t)r->dlen);
}

static PyObject *decline_text(const char *kind, const char *buf, const Declined *d) {
    return PyUnicode_FromFormat("%s line %zu: %s", kind, line_at(buf, d->where), d->why);
}

/* An evaluated block, for sorting (its grades stay in its part's buffers). */
typedef struct {
    const RBlock *block;
    const char *id; /* its query id's copy */
    int part;       /* the run part that read it */
} Evaluated;

typedef struct {
    QPart q[MAX_PARTS];
    RPart r[MAX_PARTS];
    Pieces qpieces, rpieces;
    QQuery *queries;
    Index qrels;
    Evaluated *evaluated;
    QueryKey *keys;
} Blocks;

static void blocks_free(Blocks *s) {
    for (int t = 0; t < MAX_PARTS; t++) {
        free(s->q[t].recs.v);
        free(s->q[t].blocks);
        free(s->q[t].slot);
        RPart *p = &s->r[t];
        free(p->cur.v);
        free(p->kept);
        free(p->rslot);
        free(p->jslot);
        free(p->out);
        free(p->judged);
        free(p->values);
        free(p->scratch);
        free(p->blocks);
        free(p->ids);
    }
    free(s->queries);
    free(s->qrels.slot);
    free(s->evaluated);
    free(s->keys);
#if THREADS
    pthread_mutex_destroy(&s->qpieces.lock);
    pthread_mutex_destroy(&s->rpieces.lock);
#endif
}

/* The qrels parts, read: their queries, indexed. NONCONTIGUOUS when a query has two
 * blocks. */
static int index_qrels(Blocks *s, int n, size_t *n_queries) {
    size_t total = 0;
    for (int t = 0; t < n; t++) total += s->q[t].n_blocks;
    s->queries = malloc((total ? total : 1) * sizeof *s->queries);
    if (!s->queries) return NOMEM;
    size_t k = 0;
    for (int t = 0; t < n; t++)
        for (size_t i = 0; i < s->q[t].n_blocks; i++) {
            const QBlock *b = &s->q[t].blocks[i];
            s->queries[k++] = (QQuery){b->key, b->n, s->q[t].recs.v + b->first};
        }
    int duplicate;
    if (index_build(&s->qrels, s->queries, sizeof *s->queries, total, total, &duplicate) != OK)
        return NOMEM;
    *n_queries = total;
    return duplicate ? NONCONTIGUOUS : OK;
}

/* The run parts, read: NONCONTIGUOUS when a query has two blocks (two equal ids once all
 * the blocks' ids are sorted); `evaluated`, the evaluated blocks in file order, and `keys`,
 * their ids in byte order, each with its place in `evaluated`. */
static int order_run(Blocks *s, int n, size_t *n_evaluated) {
    size_t total = 0, k = 0, e = 0;
    for (int t = 0; t < n; t++) total += s->r[t].n_blocks;
    const size_t room = total ? total : 1;
    QueryKey *all = malloc(room * sizeof *all), *tmp = malloc(room * sizeof *tmp);
    int64_t *place = malloc(room * sizeof *place); /* block -> its place in evaluated, or -1 */
    s->evaluated = malloc(room * sizeof *s->evaluated);
    s->keys = malloc(room * sizeof *s->keys);
    int status = NOMEM;
    if (!all || !tmp || !place || !s->evaluated || !s->keys) goto done;
    for (int t = 0; t < n; t++)
        for (size_t i = 0; i < s->r[t].n_blocks; i++, k++) {
            const RBlock *b = &s->r[t].blocks[i];
            const char *id = s->r[t].ids + b->id_at;
            all[k] = (QueryKey){b->prefix, id, b->key.len, (uint32_t)k};
            place[k] = b->query < 0 ? -1 : (int64_t)e;
            if (b->query >= 0) s->evaluated[e++] = (Evaluated){b, id, t};
        }
    sort_keys(all, tmp, total);
    status = OK;
    e = 0;
    for (size_t i = 0; i < total; i++) {
        if (i && all[i].prefix == all[i - 1].prefix &&
            same_id(all[i].id, all[i].id + all[i].len, all[i].len, all[i - 1].id,
                    all[i - 1].id + all[i - 1].len, all[i - 1].len)) {
            status = NONCONTIGUOUS;
            goto done;
        }
        const int64_t at = place[all[i].index];
        if (at < 0) continue;
        s->keys[e] = all[i];
        s->keys[e++].index = (uint32_t)at;
    }
    *n_evaluated = e;
done:
    free(all);
    free(tmp);
    free(place);
    return status;
}

/* An ASCII id as a str, made directly (PyUnicode_DecodeUTF8 costs several times more on
 * short ids); NULL, with no error set, when it is not ASCII or on no memory. */
static PyObject *ascii_text(const char *id, uint32_t len) {
    for (uint32_t i = 0; i < len; i++)
        if ((unsigned char)id[i] >= 0x80) return NULL;
    PyObject *text = PyUnicode_New((Py_ssize_t)len, 127);
    if (!text) {
        PyErr_Clear();
        return NULL;
    }
    memcpy(PyUnicode_1BYTE_DATA(text), id, len);
    return text;
}

/* The ids as a tuple of str, item k the id stored at where[k] (where NULL: at k). They are
 * decoded in stored order, which reads their copies (or the file) front to back (in byte
 * order of the ids, each one would be a cache miss at a random place), then put in place. */
static PyObject *qid_tuple(size_t n, const char *const *ids, const uint32_t *lens,
                           const int64_t *where) {
    PyObject *qids = PyTuple_New((Py_ssize_t)n);
    if (!qids) return NULL;
    PyObject **stored = where ? malloc((n ? n : 1) * sizeof *stored) : NULL;
    if (where && !stored) {
        Py_DECREF(qids);
        return PyErr_NoMemory();
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *id = ascii_text(ids[i], lens[i]);
        if (!id) id = PyUnicode_DecodeUTF8(ids[i], (Py_ssize_t)lens[i], "replace");
        if (!id) {
            for (size_t j = 0; where && j < i; j++) Py_DECREF(stored[j]);
            Py_DECREF(qids); /* items not set yet are NULL */
            free(stored);
            return NULL;
        }
        if (where) stored[i] = id;
        else PyTuple_SET_ITEM(qids, (Py_ssize_t)i, id);
    }
    for (size_t k = 0; where && k < n; k++) PyTuple_SET_ITEM(qids, (Py_ssize_t)k, stored[where[k]]);
    free(stored);
    return qids;
}

static PyObject *result_tuple(PyObject *qids, size_t n_common, size_t n_qrels_queries,
                              PyObject *segments, PyObject *order, PyObject *qrels_repeat,
                              PyObject *run_repeat, PyObject *values) {
    return Py_BuildValue("(OnnOOOOO)", qids, (Py_ssize_t)n_common, (Py_ssize_t)n_qrels_queries,
                         segments, order, qrels_repeat, run_repeat, values);
}

/* Memory the scanner filled, handed to Python as it is: a writable buffer that frees it.
 * The run's grades are most of the output (8 bytes a line), not copied again. */
typedef struct {
    PyObject_HEAD void *ptr;
    Py_ssize_t len;
} Owned;

static int owned_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Owned *o = (Owned *)self;
    return PyBuffer_FillInfo(view, self, o->ptr, o->len, 0, flags);
}

static void owned_dealloc(PyObject *self) {
    free(((Owned *)self)->ptr);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs owned_buffer = {owned_getbuffer, NULL};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ragstream.trec._trec_reader.Owned",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = owned_dealloc,
    .tp_as_buffer = &owned_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory the scanner filled, handed over without a copy (a writable buffer).",
};

/* The first `bytes` of *ptr (malloc'd, at least that long) as an Owned, which frees it;
 * *ptr is NULL afterwards. NULL on error, *ptr still the caller's. */
static PyObject *owned(void **ptr, size_t bytes) {
    Owned *o = PyObject_New(Owned, &OwnedType);
    if (!o) return NULL;
    void *p = realloc(*ptr, bytes ? bytes : 1); /* a shrink: in place for large blocks */
    if (!p) {
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    o->ptr = p;
    o->len = (Py_ssize_t)bytes;
    *ptr = NULL;
    return (PyObject *)o;
}

/* (rel, rel_offsets, judged, judged_offsets) of m queries, from malloc'd arrays (n_rel and
 * n_judged grades, m + 1 offsets each) handed over as Owned: freed when they are not. */
static PyObject *segment(void *rel, size_t n_rel, void *rel_o, void *judged, size_t n_judged,
                         void *judged_o, size_t m) {
    PyObject *items[4] = {owned(&rel, n_rel * sizeof(double)),
                          owned(&rel_o, (m + 1) * sizeof(int64_t)),
                          owned(&judged, n_judged * sizeof(double)),
                          owned(&judged_o, (m + 1) * sizeof(int64_t))};
    free(rel); /* those not handed over */
    free(rel_o);
    free(judged);
    free(judged_o);
    if (!items[0] || !items[1] || !items[2] || !items[3]) {
        for (int t = 0; t < 4; t++) Py_XDECREF(items[t]);
        return NULL;
    }
    return Py_BuildValue("(NNNN)", items[0], items[1], items[2], items[3]);
}

/* The evaluated blocks of a run part, in block order, as (rel, rel_offsets, judged,
 * judged_offsets): the part's own grade buffers when its blocks wrote them in that order
 * (always, but for blocks joined late, with the GIL, for a slow score spelling: then
 * they are gathered). */
static PyObject *part_segment(RPart *p, const QQuery *queries) {
    size_t m = 0, n_rel = 0, n_judged = 0;
    int in_order = 1;
    for (size_t i = 0; i < p->n_blocks; i++) {
        const RBlock *b = &p->blocks[i];
        if (b->query < 0) continue;
        if (b->out != n_rel || b->judged != n_judged) in_order = 0;
        n_rel += b->n_kept;
        n_judged += queries[b->query].n;
        m++;
    }
    void *rel_o = malloc((m + 1) * sizeof(int64_t)), *judged_o = malloc((m + 1) * sizeof(int64_t));
    void *rel = NULL, *judged = NULL;
    if (!in_order) {
        rel = malloc(n_rel ? n_rel * sizeof(double) : 1);
        judged = malloc(n_judged ? n_judged * sizeof(double) : 1);
    }
    if (!rel_o || !judged_o || (!in_order && (!rel || !judged))) {
        free(rel_o);
        free(judged_o);
        free(rel);
        free(judged);
        return PyErr_NoMemory();
    }
    int64_t *ro = rel_o, *jo = judged_o;
    size_t k = 0, r = 0, j = 0;
    for (size_t i = 0; i < p->n_blocks; i++) {
        const RBlock *b = &p->blocks[i];
        if (b->query < 0) continue;
        const uint32_t nj = queries[b->query].n;
        ro[k] = (int64_t)r;
        jo[k] = (int64_t)j;
        if (!in_order) {
            memcpy((double *)rel + r, p->out + b->out, b->n_kept * sizeof(double));
            memcpy((double *)judged + j, p->judged + b->judged, nj * sizeof(double));
        }
        r += b->n_kept;
        j += nj;
        k++;
    }
    ro[m] = (int64_t)r;
    jo[m] = (int64_t)j;
    if (in_order) {
        rel = p->out;
        judged = p->judged;
        p->out = NULL;
        p->judged = NULL;
    }
    return segment(rel, n_rel, rel_o, judged, n_judged, judged_o, m);
}

/* The evaluated queries' values in byte order of their ids, metric after metric (an
 * Owned of n_metrics x n_evaluated float64), from the parts' `values`: read in the order
 * they were written into one row a metric, then each row put in the ids' order (a gather
 * within a row, which stays in cache). Both are written over the first qrels part's
 * records when they are large enough (they are no longer read): memory already in place,
 * where fresh memory is faulted in page by page. */
static PyObject *values_matrix(Blocks *s, size_t n_evaluated, size_t m) {
    const size_t cells = n_evaluated * m, bytes = cells ? cells * sizeof(double) : 1;
    QPart *q = &s->q[0];
    const int reuse = q->recs.v && 2 * bytes <= q->recs.n * sizeof(Rec);
    void *v = reuse ? (void *)q->recs.v : malloc(bytes);
    double *rows = reuse ? (double *)v + cells : malloc(bytes);
    uint32_t *at = malloc(n_evaluated ? n_evaluated * sizeof *at : 1);
    if (reuse) q->recs.v = NULL; /* v's now */
    if (!v || !rows || !at) {
        free(v);
        if (!reuse) free(rows);
        free(at);
        return PyErr_NoMemory();
    }
    for (size_t e = 0; e < n_evaluated; e++) {
        const Evaluated *x = &s->evaluated[e];
        const double *values = s->r[x->part].values + (size_t)x->block->value_at * m;
        for (size_t k = 0; k < m; k++) rows[k * n_evaluated + e] = values[k];
    }
    for (size_t i = 0; i < n_evaluated; i++) at[i] = s->keys[i].index;
    double *out = v;
    for (size_t k = 0; k < m; k++) {
        const double *row = rows + k * n_evaluated;
        double *to = out + k * n_evaluated;
        for (size_t i = 0; i < n_evaluated; i++) to[i] = row[at[i]];
    }
    if (!reuse) free(rows);
    free(at);
    PyObject *o = owned(&v, cells * sizeof(double)); /* a shrink: the rest is returned */
    free(v);
    return o;
}

/* The block path; NULL with *fallback set when the general path must read the files. */
static PyObject *join_blocks(const char *qbuf, size_t qsize, const char *rbuf, size_t rsize,
                             int keep_best, const CutObject *cut, int n, int mapped,
                             int *fallback) {
    *fallback = 0;
    Blocks *s = calloc(1, sizeof *s);
    if (!s) return PyErr_NoMemory();
#if THREADS
    if (pthread_mutex_init(&s->qpieces.lock, NULL) != 0) {
        free(s);
        return PyErr_NoMemory();
    }
    if (pthread_mutex_init(&s->rpieces.lock, NULL) != 0) {
        pthread_mutex_destroy(&s->qpieces.lock);
        free(s);
        return PyErr_NoMemory();
    }
#endif
    PyObject *result = NULL;
    int status, which = 0;
    size_t n_queries = 0, n_evaluated = 0;
    Py_BEGIN_ALLOW_THREADS
    pieces_init(&s->qpieces, qbuf, qsize, 0, n, mapped);
    for (int t = 0; t < n; t++)
        s->q[t] = (QPart){.part = {.buf = qbuf, .end = qbuf + qsize, .pieces = &s->qpieces,
                                   .read = scan_qrels_part}};
    in_parallel(&s->q[0].part, sizeof *s->q, n);
    status = first_failure(&s->q[0].part, sizeof *s->q, n, &which);
    if (status == OK) status = index_qrels(s, n, &n_queries);
    if (status == OK && n_queries == 0)
        status = decline(&s->q[which].part.declined, qbuf, "no records");
    if (status == OK) {
        const int repeat = first_repeat(&s->q[0].part, sizeof *s->q, n)->found;
        size_t n_judgments = 0;
        for (int t = 0; t < n; t++) n_judgments += s->q[t].recs.n;
        pieces_init(&s->rpieces, rbuf, rsize, 1, n, mapped);
        for (int t = 0; t < n; t++)
            s->r[t] = (RPart){.part = {.buf = rbuf, .end = rbuf + rsize, .pieces = &s->rpieces,
                                       .read = scan_run_part},
                              .queries = s->queries, .qrels = &s->qrels,
                              .keep_best = keep_best, .cut = cut, .skip_join = repeat,
                              .qrels_end = qbuf + qsize, .judged_bound = n_judgments};
        in_parallel(&s->r[0].part, sizeof *s->r, n);
    }
    Py_END_ALLOW_THREADS
    if (status == DECLINE) {
        result = decline_text("qrels", qbuf, &s->q[which].part.declined);
        goto done;
    }
    if (status == NONCONTIGUOUS) goto general;
    if (status != OK) goto nomem;
    status = first_failure(&s->r[0].part, sizeof *s->r, n, &which);
    for (int t = 0; t < n && status == OK; t++) {
        status = join_deferred(&s->r[t]);
        which = t;
    }
    if (status == DECLINE) {
        result = decline_text("run", rbuf, &s->r[which].part.declined);
        goto done;
    }
    if (status != OK) goto nomem;
    /* the kernel as the join ends: the blocks of parts that ended before it came, evaluated */
    const RaggedKernel *kernel = kernel_of(cut);
    int not_finite = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int t = 0; t < n && kernel && status == OK; t++) {
        status = value_rest(&s->r[t], kernel);
        not_finite |= s->r[t].not_finite;
    }
    Py_END_ALLOW_THREADS
    if (status != OK) goto nomem;
    if (not_finite) { /* not from grades this scanner reads: it reads integers */
        result = PyUnicode_FromString("a grade that is not finite");
        goto done;
    }
    size_t n_records = 0;
    for (int t = 0; t < n; t++) n_records += s->r[t].n_records;
    if (n_records == 0) {
        decline(&s->r[0].part.declined, rbuf, "no records");
        result = decline_text("run", rbuf, &s->r[0].part.declined);
        goto done;
    }
    const At *qrels_repeat = first_repeat(&s->q[0].part, sizeof *s->q, n);
    const At *run_repeat = first_repeat(&s->r[0].part, sizeof *s->r, n);
    Py_BEGIN_ALLOW_THREADS
    status = order_run(s, n, &n_evaluated);
    Py_END_ALLOW_THREADS
    if (status == NONCONTIGUOUS) goto general;
    if (status != OK) goto nomem;
    const size_t n_common = n_evaluated;
    if (qrels_repeat->found || run_repeat->found) n_evaluated = 0; /* an error follows */
    /* The parts' grades stay where the threads wrote them (one segment a part, blocks in
     * file order); `order` gives each query's place there, in byte order of the ids. With a
     * kernel, the values instead, in byte order of the ids (and segments None). */
    PyObject *segments = kernel ? Py_NewRef(Py_None) : PyList_New(0);
    PyObject *order = NULL, *qids = NULL, *values = NULL;
    int64_t *where = malloc((n_evaluated ? n_evaluated : 1) * sizeof *where);
    const char **ids = malloc((n_evaluated ? n_evaluated : 1) * sizeof *ids);
    uint32_t *lens = malloc((n_evaluated ? n_evaluated : 1) * sizeof *lens);
    if (segments && where && ids && lens) {
        for (int t = 0; t < n && n_evaluated && !kernel; t++) {
            PyObject *segment = part_segment(&s->r[t], s->queries);
            if (!segment || PyList_Append(segments, segment) < 0) {
                Py_XDECREF(segment);
                Py_CLEAR(segments);
                break;
            }
            Py_DECREF(segment);
        }
        for (size_t k = 0; k < n_evaluated; k++) {
            const RBlock *b = s->evaluated[k].block; /* in part order */
            where[k] = (int64_t)s->keys[k].index;
            ids[k] = s->evaluated[k].id;
            lens[k] = b->key.len;
        }
        qids = segments ? qid_tuple(n_evaluated, ids, lens, where) : NULL;
        if (kernel) {
            values = qids ? values_matrix(s, n_evaluated, (size_t)kernel->n_metrics) : NULL;
            order = values ? Py_NewRef(Py_None) : NULL;
        } else {
            void *w = where;
            order = qids ? owned(&w, n_evaluated * sizeof *where) : NULL;
            where = w;
            values = order ? Py_NewRef(Py_None) : NULL;
        }
        PyObject *qrep = order ? at_tuple(qbuf, qrels_repeat) : NULL;
        PyObject *rrep = qrep ? at_tuple(rbuf, run_repeat) : NULL;
        if (rrep)
            result = result_tuple(qids, n_common, n_queries, segments, order, qrep, rrep, values);
        Py_XDECREF(qrep);
        Py_XDECREF(rrep);
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    free(where);
    free(ids);
    free(lens);
    Py_XDECREF(segments);
    Py_XDECREF(order);
    Py_XDECREF(qids);
    Py_XDECREF(values);
    goto done;
general:
    *fallback = 1;
    goto done;
nomem:
    PyErr_NoMemory();
done:
    blocks_free(s);
    free(s);
    return result;
}

/* The general path: any order of lines, one thread. */
static PyObject *join_general(const char *qbuf, size_t qsize, const char *rbuf, size_t rsize,
                              int keep_best, const CutObject *cut) {
    PyObject *result = NULL, *qids = NULL;
    Registry reg;
    File qrels = {.buf = qbuf, .size = qsize, .run = 0, .contiguous = 1};
    File run = {.buf = rbuf, .size = rsize, .run = 1, .contiguous = 1};
    Join j = {.qrels = &qrels, .run = &run, .reg = &reg, .keep_best = keep_best};
    uint32_t *evaluated = NULL, *lens = NULL;
    const char **ids = NULL;
    int status;
    if (registry_init(&reg) != OK) {
        registry_free(&reg);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    status = scan_file(&qrels, &reg);
    if (status == OK) status = scan_file(&run, &reg);
    Py_END_ALLOW_THREADS
    if (status == OK) status = convert_slow(&run);
    if (status == DECLINE) {
        const File *f = qrels.declined.why ? &qrels : &run;
        result = decline_text(f->run ? "run" : "qrels", f->buf, &f->declined);
        goto done;
    }
    if (status != OK) goto nomem;
    size_t n_queries = reg.n ? reg.n : 1;
    j.rel = malloc(run.recs.n * sizeof(double)); /* not 0: each file has a record */
    j.judged = malloc(qrels.recs.n * sizeof(double));
    j.rel_offsets = malloc((n_queries + 1) * sizeof(int64_t));
    j.judged_offsets = malloc((n_queries + 1) * sizeof(int64_t));
    j.evaluated = evaluated = malloc(n_queries * sizeof *evaluated);
    ids = malloc(n_queries * sizeof *ids);
    lens = malloc(n_queries * sizeof *lens);
    if (!j.rel || !j.judged || !j.rel_offsets || !j.judged_offsets || !evaluated || !ids || !lens)
        goto nomem;
    Py_BEGIN_ALLOW_THREADS
    j.cut = cut_of(cut);
    status = join_queries(&j);
    Py_END_ALLOW_THREADS
    if (status != OK) goto nomem;
    const size_t n_common = j.n_evaluated;
    if (j.qrels_repeat.found || j.run_repeat.found) j.n_evaluated = 0; /* an error follows */
    const size_t n_rel = (size_t)j.rel_offsets[j.n_evaluated];
    const size_t n_judged = (size_t)j.judged_offsets[j.n_evaluated];
    for (size_t i = 0; i < j.n_evaluated; i++) {
        ids[i] = reg.q[evaluated[i]].key.id;
        lens[i] = reg.q[evaluated[i]].key.len;
    }
    if (!(qids = qid_tuple(j.n_evaluated, ids, lens, NULL))) goto done;
    PyObject *one = segment(j.rel, n_rel, j.rel_offsets, j.judged, n_judged, j.judged_offsets,
                            j.n_evaluated);
    j.rel = j.judged = NULL;
    j.rel_offsets = j.judged_offsets = NULL;
    PyObject *qrels_repeat = one ? at_tuple(qbuf, &j.qrels_repeat) : NULL;
    PyObject *run_repeat = qrels_repeat ? at_tuple(rbuf, &j.run_repeat) : NULL;
    PyObject *segments = run_repeat ? Py_BuildValue("[N]", one) : NULL; /* takes `one` */
    if (!run_repeat) Py_XDECREF(one);
    if (segments)
        result = result_tuple(qids, n_common, j.n_qrels_queries, segments, Py_None, qrels_repeat,
                              run_repeat, Py_None);
    Py_XDECREF(segments);
    Py_XDECREF(qrels_repeat);
    Py_XDECREF(run_repeat);
    goto done;
nomem:
    PyErr_NoMemory();
done:
    Py_XDECREF(qids);
    free(j.rel);
    free(j.rel_offsets);
    free(j.judged);
    free(j.judged_offsets);
    free(evaluated);
    free(ids);
    free(lens);
    free(qrels.recs.v);
    free(run.recs.v);
    free(qrels.slow.v);
    free(run.slow.v);
    registry_free(&reg);
    return result;
}

PyDoc_STRVAR(join_doc,
             "join(qrels, run, keep_best, workers=1, cut=None, mapped=False, /)\n--\n\n"
             "Scan a qrels and a run buffer once each and join them (see the module doc),\n"
             "each file in `workers` parts read at the same time (same result); of each\n"
             "ranking, what the Cut `cut` keeps when it is joined (None: all of it).\n"
             "`mapped`: both buffers are shared, read-only file mappings, whose pages each\n"
             "thread maps in as it reads them, and the run's are dropped once read (they\n"
             "stay in the page cache). Never with other memory: dropped pages of anonymous\n"
             "memory would read as zeros.\n\n"
             "Returns (qids, n_common, n_qrels_queries, segments, order, qrels_repeat,\n"
             "run_repeat): qids, a tuple of the ids (str) of the queries in both files\n"
             "in byte order, their number, the number of qrels queries; segments, a list\n"
             "of (rel, rel_offsets, judged, judged_offsets) float64 and int64 buffers\n"
             "(CSR; no segment when a repeat was found), the queries stored end to end\n"
             "across them; order, an int64 buffer with the place there of each query of\n"
             "qids, or None when they are stored in qids' order; each repeat is None or\n"
             "(first line, repeated line, query id, document id); values, None, or when\n"
             "the cut has a kernel, a float64 buffer of its metrics' values (metric after\n"
             "metric, the queries of qids in that order), and then no segment and order\n"
             "None.\n"
             "Returns a str (the reason) when declining.");

static int cut_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"depth", "level", "kernel", NULL};
    Py_ssize_t depth = 0;
    double level = Py_HUGE_VAL;
    PyObject *capsule = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ndO:Cut", names, &depth, &level, &capsule))
        return -1;
    if (depth < 0) {
        PyErr_SetString(PyExc_ValueError, "depth must be >= 0");
        return -1;
    }
    CutObject *c = (CutObject *)self;
    const RaggedKernel *kernel = NULL;
    if (capsule != Py_None) {
        kernel = PyCapsule_GetPointer(capsule, RAGGED_KERNEL_CAPSULE);
        if (!kernel) return -1; /* not a kernel of ragstream.metrics._ragged */
        if (c->capsule && c->capsule != capsule) {
            PyErr_SetString(PyExc_ValueError, "a cut's kernel is set once");
            return -1;
        }
    }
    c->level = level;
    STORE_RELEASE(&c->depth, (size_t)depth);
    if (kernel && !c->capsule) {
        c->capsule = Py_NewRef(capsule); /* held while the cut is: the threads call it */
        STORE_RELEASE(&c->kernel, kernel);
    }
    return 0;
}

static void cut_dealloc(PyObject *self) {
    Py_XDECREF(((CutObject *)self)->capsule);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *cut_set(PyObject *self, PyObject *args) {
    if (cut_init(self, args, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *cut_depth(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(cut_of((CutObject *)self).depth);
}

static PyObject *cut_level(PyObject *self, void *closure) {
    (void)closure;
    return PyFloat_FromDouble(cut_of((CutObject *)self).level);
}

static PyObject *cut_kernel(PyObject *self, void *closure) {
    (void)closure;
    PyObject *capsule = ((CutObject *)self)->capsule;
    return Py_NewRef(capsule ? capsule : Py_None);
}

static PyMethodDef cut_methods[] = {
    {"set", cut_set, METH_VARARGS,
     "set(depth, level=inf, kernel=None)\n--\n\nCut the rankings joined from now on (depth 0: "
     "none); with `kernel` (a capsule of ragstream.metrics._ragged.kernel, set once; None "
     "leaves it), evaluate them."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cut_getset[] = {
    {"depth", cut_depth, NULL, "Grades kept at least (0: all).", NULL},
    {"level", cut_level, NULL, "And on to the first grade at least this (inf: none).", NULL},
    {"kernel", cut_kernel, NULL, "The metrics' kernel the rankings are evaluated with, or None.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CutType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ragstream.trec._trec_reader.Cut",
    .tp_basicsize = sizeof(CutObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Cut(depth=0, level=inf, kernel=None): how much of each ranking a join keeps, "
              "and the kernel that evaluates it; set() changes them while a join runs.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = cut_dealloc,
    .tp_init = cut_init,
    .tp_methods = cut_methods,
    .tp_getset = cut_getset,
};

/* The buffer is a read-only mmap.mmap's (ACCESS_READ: a shared mapping of a file). */
static int file_mapping(const Py_buffer *b) {
    if (!b->readonly || !b->obj) return 0;
    PyTypeObject *type = Py_TYPE(b->obj);
    return strcmp(type->tp_name, "mmap.mmap") == 0;
}

static PyObject *join(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer qbuf, rbuf;
    int keep_best;
    Py_ssize_t workers = 1;
    PyObject *cut = NULL;
    int mapped = 0;
    if (!PyArg_ParseTuple(args, "y*y*p|nOp:join", &qbuf, &rbuf, &keep_best, &workers, &cut,
                          &mapped))
        return NULL;
    if (cut == Py_None) cut = NULL; /* all of each ranking */
    if (cut && !PyObject_TypeCheck(cut, &CutType)) {
        PyErr_Format(PyExc_TypeError, "join() argument 5 must be a Cut or None, not %.50s",
                     Py_TYPE(cut)->tp_name);
        PyBuffer_Release(&qbuf);
        PyBuffer_Release(&rbuf);
        return NULL;
    }
    if (mapped && !(file_mapping(&qbuf) && file_mapping(&rbuf))) {
        /* their pages are dropped as they are read (MADV_DONTNEED): only a read-only
         * mapping of a file gives them back, other memory would come back as zeros */
        PyErr_SetString(PyExc_ValueError, "join(): mapped buffers must be read-only mmap.mmap");
        PyBuffer_Release(&qbuf);
        PyBuffer_Release(&rbuf);
        return NULL;
    }
    Py_XINCREF(cut); /* kept while the threads read it */
    const int n = workers < 1 ? 1 : workers > MAX_PARTS ? MAX_PARTS : (int)workers;
    const char *q = qbuf.buf, *r = rbuf.buf;
    const size_t qsize = (size_t)qbuf.len, rsize = (size_t)rbuf.len;
    int fallback;
    const CutObject *c = (const CutObject *)cut;
    PyObject *result = join_blocks(q, qsize, r, rsize, keep_best, c, n, mapped, &fallback);
    if (fallback) result = join_general(q, qsize, r, rsize, keep_best, c);
    PyBuffer_Release(&qbuf);
    PyBuffer_Release(&rbuf);
    Py_XDECREF(cut);
    return result;
}

static PyMethodDef methods[] = {
    {"join", join, METH_VARARGS, join_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "ragstream.trec._trec_reader",
    "One compiled pass over a qrels and a run file: records, repeats, trec_eval's order\n"
    "and the grades of ranked documents, for the metric kernels of ragstream.trec.",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__trec_reader(void) {
    init_classes();
    if (PyType_Ready(&OwnedType) < 0 || PyType_Ready(&CutType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&CutType);
    if (PyModule_AddObject(m, "Cut", (PyObject *)&CutType) < 0) {
        Py_DECREF(&CutType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
