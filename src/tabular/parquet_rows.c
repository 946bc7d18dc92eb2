/* parquet_rows.c - the rows of a Parquet file, one row group after another.
 *
 * Each row group opens a cursor (parquet_page.c) on every leaf's column
 * chunk; a row takes the next level entry of each leaf.  So memory holds
 * one page (and the dictionary) per column, never the file, whatever the
 * row group's size.
 *
 * A flat column (a leaf, inside structs or not: no repeated field above it)
 * has one entry a row: its value, or a null when its definition level says
 * the leaf or a struct above it is missing.  A nested column (a LIST, a
 * MAP, or a repeated field) has all the entries up to the next one of
 * repetition level 0, assembled from the levels into JSON text: a LIST or
 * a repeated field is an array, a MAP an object (keys as strings), a
 * struct inside them an object of its fields.
 *
 * Values are written as the inference types them (parquet.c): numbers as
 * digits (decimals with their scale, unsigned integers as such), DATE as
 * YYYY-MM-DD, TIMESTAMP (and INT96) as YYYY-MM-DD HH:MM:SS with the
 * fraction its unit has, trailing zeros dropped, TIME as HH:MM:SS[.f],
 * UUID in its 8-4-4-4-12 form, text as it is when it is valid UTF-8 (and
 * else \xHH for each byte). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tabular/formats.h"
#include "tabular/internal.h"
#include "tabular/parquet.h"
#include "util/str.h"

/* A growable text buffer. */
struct tbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static bool tb_reserve(struct tbuf *b, size_t more)
{
	if (b->oom)
		return false;
	if (more > TAB_ROW_MAX || b->n + more + 1 > TAB_ROW_MAX + 1) {
		b->oom = true;
		return false;
	}
	if (b->n + more + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + more + 1)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (np == NULL) {
			b->oom = true;
			return false;
		}
		b->p = np;
		b->cap = cap;
	}
	return true;
}

static void tb_add(struct tbuf *b, const char *s, size_t n)
{
	if (!tb_reserve(b, n))
		return;
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void tb_addc(struct tbuf *b, char ch)
{
	tb_add(b, &ch, 1);
}

static void tb_printf(struct tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_printf(struct tbuf *b, const char *fmt, ...)
{
	char tmp[96];
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k > 0)
		tb_add(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* ---- values as text ------------------------------------------------------ */

/* The largest decimal read from bytes: 64 bytes are 154 digits. */
#define DECIMAL_BYTES_MAX 64

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Digits of a big-endian two's complement integer, sign first. */
static int bytes_decimal(const uint8_t *s, size_t n, struct tbuf *b)
{
	uint8_t mag[DECIMAL_BYTES_MAX];
	uint32_t chunks[DECIMAL_BYTES_MAX];      /* base 10^9, least first */
	size_t nch = 0, len = n;
	bool neg = n > 0 && (s[0] & 0x80);

	if (n > DECIMAL_BYTES_MAX)
		return -1;
	memcpy(mag, s, n);
	if (neg) {                               /* magnitude: invert, add one */
		int carry = 1;
		for (size_t i = n; i-- > 0;) {
			int v = (uint8_t)~mag[i] + carry;
			mag[i] = (uint8_t)v;
			carry = v >> 8;
		}
	}
	for (;;) {
		size_t first = 0;
		while (first < len && mag[first] == 0)
			first++;
		if (first == len)
			break;
		uint64_t rem = 0;
		for (size_t i = first; i < len; i++) {
			uint64_t cur = rem << 8 | mag[i];
			mag[i] = (uint8_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		chunks[nch++] = (uint32_t)rem;
	}
	if (neg)
		tb_addc(b, '-');
	if (nch == 0) {
		tb_addc(b, '0');
		return 0;
	}
	tb_printf(b, "%" PRIu32, chunks[nch - 1]);
	for (size_t i = nch - 1; i-- > 0;)
		tb_printf(b, "%09" PRIu32, chunks[i]);
	return 0;
}

/* b's text from `from` (an integer, sign first) with the point placed
 * scale digits from the right. */
static void place_point(struct tbuf *b, size_t from, int scale)
{
	char *d = b->p + from;
	size_t neg = d[0] == '-', digits = b->n - from - neg;

	if (scale <= 0)
		return;
	if (digits <= (size_t)scale) {          /* 0.00ddd */
		size_t pad = (size_t)scale - digits + 1;
		if (!tb_reserve(b, pad + 1))
			return;
		d = b->p + from;
		memmove(d + neg + pad, d + neg, digits + 1);
		memset(d + neg, '0', pad);
		b->n += pad;
		digits += pad;
	}
	if (!tb_reserve(b, 1))
		return;
	d = b->p + from;
	size_t at = neg + digits - (size_t)scale;
	memmove(d + at + 1, d + at, (size_t)scale + 1);
	d[at] = '.';
	b->n++;
}

/* The shortest text that reads back as the same float (or double). */
static void real_text(double v, bool is_float, struct tbuf *b)
{
	char tmp[40];

	if (isnan(v)) {
		tb_add(b, "NaN", 3);
		return;
	}
	if (isinf(v)) {
		tb_add(b, v < 0 ? "-Inf" : "Inf", v < 0 ? 4 : 3);
		return;
	}
	for (int prec = is_float ? 6 : 15; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, v);
		double back = strtod(tmp, NULL);
		if (is_float ? (float)back == (float)v : back == v)
			break;
	}
	tb_add(b, tmp, strlen(tmp));
}

static double half_to_double(const uint8_t *p)
{
	unsigned h = (unsigned)p[0] | (unsigned)p[1] << 8;
	int e = (int)(h >> 10) & 0x1f;
	double m = h & 0x3ff, v;

	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m != 0 ? NAN : INFINITY;
	else
		v = ldexp(m + 1024, e - 25);
	return (h & 0x8000) ? -v : v;
}

/* "HH:MM:SS" of sod seconds, and ".fff" of frac units of 1/unit s,
 * trailing zeros dropped. */
static void clock_text(struct tbuf *b, int64_t sod, int64_t frac, int64_t unit)
{
	tb_printf(b, "%02" PRId64 ":%02" PRId64 ":%02" PRId64, sod / 3600, sod / 60 % 60, sod % 60);
	if (frac > 0) {
		int width = unit == 1000 ? 3 : unit == 1000000 ? 6 : 9;
		char f[24];
		snprintf(f, sizeof f, "%0*" PRId64, width, frac);
		size_t n = strlen(f);
		while (n > 0 && f[n - 1] == '0')
			n--;
		tb_addc(b, '.');
		tb_add(b, f, n);
	}
}

static void date_text(struct tbuf *b, int64_t days)
{
	long long y;
	unsigned m, d;

	tab_civil_from_days(days, &y, &m, &d);
	tb_printf(b, "%04lld-%02u-%02u", y, m, d);
}

/* v units of 1/unit s since 1970-01-01 00:00:00 UTC. */
static void timestamp_text(struct tbuf *b, int64_t v, int64_t unit)
{
	int64_t secs = floor_div(v, unit), frac = v - secs * unit;
	int64_t days = floor_div(secs, 86400);

	date_text(b, days);
	tb_addc(b, ' ');
	clock_text(b, secs - days * 86400, frac, unit);
}

static const char hexd[] = "0123456789abcdef";

static uint64_t le_bytes(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void bytes_text(struct tbuf *b, const uint8_t *s, size_t n)
{
	if (str_utf8_valid((const char *)s, n)) {
		tb_add(b, (const char *)s, n);
		return;
	}
	if (!tb_reserve(b, n * 4))
		return;
	for (size_t i = 0; i < n; i++) {
		char x[4] = { '\\', 'x', hexd[s[i] >> 4], hexd[s[i] & 15] };
		tb_add(b, x, 4);
	}
}

/* The value of e (present) of leaf nd as text appended to b: its cell kind
 * (TAB_TEXT, TAB_NUMBER, ...) with *num for numbers, or -1 when the value
 * cannot be (a decimal too long, a wrong length). */
static int value_text(const struct pq_node *nd, const struct pq_entry *e, struct tbuf *b,
                      double *num)
{
	size_t from = b->n;
	int64_t sod, days;

	*num = 0;
	switch (nd->kind) {
	case PQ_BOOL:
		tb_add(b, e->i ? "true" : "false", e->i ? 4 : 5);
		*num = e->i ? 1 : 0;
		return TAB_BOOL;
	case PQ_INT:
		tb_printf(b, "%" PRId64, e->i);
		*num = (double)e->i;
		return TAB_NUMBER;
	case PQ_UINT: {
		uint64_t u = nd->type == PT_INT32 ? (uint32_t)e->i : (uint64_t)e->i;
		tb_printf(b, "%" PRIu64, u);
		*num = (double)u;
		return TAB_NUMBER;
	}
	case PQ_DECIMAL:
		if (nd->type == PT_INT32 || nd->type == PT_INT64)
			tb_printf(b, "%" PRId64, e->i);
		else if (bytes_decimal(e->b, e->n, b) != 0)
			return -1;
		if (!b->oom)
			place_point(b, from, nd->scale);
		*num = b->oom ? 0 : strtod(b->p + from, NULL);
		return TAB_NUMBER;
	case PQ_FLOAT:
	case PQ_DOUBLE:
		real_text(e->d, nd->kind == PQ_FLOAT, b);
		*num = e->d;
		return TAB_NUMBER;
	case PQ_FLOAT16:
		if (e->n != 2)
			return -1;
		*num = half_to_double(e->b);
		real_text(*num, true, b);
		return TAB_NUMBER;
	case PQ_DATE:
		date_text(b, e->i);
		return TAB_DATE;
	case PQ_TIMESTAMP:
		timestamp_text(b, e->i, nd->unit);
		return TAB_DATETIME;
	case PQ_INT96: {
		if (e->n != 12)
			return -1;
		int64_t ns = (int64_t)le_bytes(e->b, 8);
		int32_t julian = (int32_t)(uint32_t)le_bytes(e->b + 8, 4);
		days = (int64_t)julian - 2440588 + floor_div(ns, 86400000000000LL);
		ns -= floor_div(ns, 86400000000000LL) * 86400000000000LL;
		date_text(b, days);
		tb_addc(b, ' ');
		clock_text(b, ns / 1000000000, ns % 1000000000, 1000000000);
		return TAB_DATETIME;
	}
	case PQ_TIME:
		sod = floor_div(e->i, nd->unit);
		clock_text(b, sod, e->i - sod * nd->unit, nd->unit);
		return TAB_TEXT;
	case PQ_UUID:
		if (e->n != 16)
			return -1;
		for (size_t i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				tb_addc(b, '-');
			tb_addc(b, hexd[e->b[i] >> 4]);
			tb_addc(b, hexd[e->b[i] & 15]);
		}
		return TAB_TEXT;
	case PQ_INTERVAL: {
		if (e->n != 12)
			return -1;
		uint32_t mo = (uint32_t)le_bytes(e->b, 4), d = (uint32_t)le_bytes(e->b + 4, 4);
		uint32_t ms = (uint32_t)le_bytes(e->b + 8, 4);
		tb_printf(b, "P%" PRIu32 "M%" PRIu32 "DT%" PRIu32, mo, d, ms / 1000);
		if (ms % 1000)
			tb_printf(b, ".%03" PRIu32, ms % 1000);
		tb_addc(b, 'S');
		return TAB_TEXT;
	}
	case PQ_TEXT:
		if (nd->type == PT_BYTE_ARRAY || nd->type == PT_FLBA || nd->type == PT_INT96)
			bytes_text(b, e->b, e->n);
		else if (nd->type == PT_FLOAT || nd->type == PT_DOUBLE)
			real_text(e->d, nd->type == PT_FLOAT, b);
		else
			tb_printf(b, "%" PRId64, e->i);
		return TAB_TEXT;
	}
	return -1;
}

/* ---- nested columns as JSON ------------------------------------------------ */

/* One entry of a nested cell: its levels and its value's text in the
 * column's arena (off, len), typed for JSON. */
struct jent {
	int rep, def;
	bool present, quoted;            /* quoted: a JSON string */
	size_t off, len;
};

struct leaf_state {
	struct pq_cursor *cur;
	struct pq_entry pend;            /* read ahead: the next row's first */
	bool has_pend;
	struct jent *ents;               /* nested: this row's entries */
	size_t nents, cap;
};

struct rows {
	const struct pq_meta *m;
	struct leaf_state *ls;           /* per leaf */
	struct tbuf *text;               /* per column: the cell's text */
	struct tbuf arena;               /* nested values' text */
	struct tab_cell *cells;
	long long row;                   /* 1-based row of the file */
	size_t nested_values;
	char *err;
	size_t errlen;
};

static int rfail(struct rows *R, size_t node, const char *what)
{
	str_errf(R->err, R->errlen, "Parquet column %s, row %lld: %s",
	         R->m->nodes[node].name, R->row, what);
	return TAB_ERR_FORMAT;
}

static int add_jent(struct rows *R, size_t leaf, const struct pq_entry *e)
{
	struct leaf_state *L = &R->ls[leaf];
	const struct pq_node *nd = &R->m->nodes[R->m->leaves[leaf]];
	struct jent *j;

	if (++R->nested_values > PARQUET_NESTED_VALUES_MAX)
		return rfail(R, R->m->leaves[leaf], "a nested value of more than 1048576 entries");
	if (L->nents == L->cap) {
		size_t cap = L->cap ? L->cap * 2 : 16;
		struct jent *nj = realloc(L->ents, cap * sizeof *nj);
		if (nj == NULL) {
			str_errf(R->err, R->errlen, "out of memory");
			return TAB_ERR_IO;
		}
		L->ents = nj;
		L->cap = cap;
	}
	j = &L->ents[L->nents++];
	*j = (struct jent){ .rep = e->rep, .def = e->def, .present = e->present,
	                    .off = R->arena.n };
	if (e->present) {
		double num;
		int kind = value_text(nd, e, &R->arena, &num);
		if (kind < 0)
			return rfail(R, R->m->leaves[leaf], "a value of the wrong size");
		j->quoted = kind != TAB_BOOL && (kind != TAB_NUMBER || !isfinite(num));
		j->len = R->arena.n - j->off;
	}
	if (R->arena.oom) {
		str_errf(R->err, R->errlen, "Parquet row %lld: a nested value over %u MiB",
		         R->row, TAB_ROW_MAX >> 20);
		return TAB_ERR_FORMAT;
	}
	return 0;
}

/* The next entry of leaf (a row's first when first): 1, 0 at the end. */
static int leaf_next(struct rows *R, size_t leaf, struct pq_entry *e)
{
	struct leaf_state *L = &R->ls[leaf];

	if (L->has_pend) {
		*e = L->pend;
		L->has_pend = false;
		return 1;
	}
	return pq_cursor_next(L->cur, e, R->err, R->errlen);
}

/* This row's entries of a nested column's leaf: up to the next entry of
 * repetition level 0, which is kept for the next row. */
static int gather(struct rows *R, size_t leaf)
{
	struct leaf_state *L = &R->ls[leaf];
	struct pq_entry e;
	int rc;

	L->nents = 0;
	if ((rc = leaf_next(R, leaf, &e)) <= 0)
		return rc < 0 ? rc : rfail(R, R->m->leaves[leaf], "the column ends before the row");
	if (e.rep != 0)
		return rfail(R, R->m->leaves[leaf], "a row starts inside a list");
	if ((rc = add_jent(R, leaf, &e)) != 0)
		return rc;
	while ((rc = pq_cursor_next(L->cur, &e, R->err, R->errlen)) == 1) {
		if (e.rep == 0) {
			L->pend = e;
			L->has_pend = true;
			return 0;
		}
		if ((rc = add_jent(R, leaf, &e)) != 0)
			return rc;
	}
	return rc;
}

static void json_string(struct tbuf *b, const char *s, size_t n)
{
	tb_addc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			tb_addc(b, '\\');
			tb_addc(b, (char)ch);
		} else if (ch < 0x20) {
			tb_printf(b, "\\u%04x", ch);
		} else {
			tb_addc(b, (char)ch);
		}
	}
	tb_addc(b, '"');
}

/* Slices of the leaves of a node: [lo[i], hi[i]) of leaf base + i. */
struct slice {
	size_t base, n;
	size_t *lo, *hi;
};

static int emit_field(struct rows *R, size_t node, const struct slice *s, struct tbuf *out,
                      int depth);

static int leaf_value(struct rows *R, size_t node, const struct slice *s, struct tbuf *out)
{
	const struct jent *j;

	if (s->hi[0] - s->lo[0] != 1)
		return rfail(R, node, "its levels do not agree");
	j = &R->ls[s->base].ents[s->lo[0]];
	if (!j->present) {
		tb_add(out, "null", 4);
	} else if (j->quoted) {
		json_string(out, R->arena.p + j->off, j->len);
	} else {
		tb_add(out, R->arena.p + j->off, j->len);
	}
	return 0;
}

/* The slice of child (a node below node) out of node's slice s. */
static struct slice sub_slice(const struct rows *R, size_t node, size_t child,
                              const struct slice *s)
{
	const struct pq_node *nd = &R->m->nodes[node], *c = &R->m->nodes[child];
	size_t k = c->first_leaf - nd->first_leaf;

	return (struct slice){ .base = s->base + k, .n = c->nleaves, .lo = s->lo + k,
	                       .hi = s->hi + k };
}

/* One instance of node (present): a leaf's value, a list's array, a map's
 * object, a struct's object. */
static int emit_instance(struct rows *R, size_t node, const struct slice *s, struct tbuf *out,
                         int depth)
{
	const struct pq_node *nd = &R->m->nodes[node];
	const struct pq_node *parent = &R->m->nodes[nd->parent];
	size_t child = node + 1;
	int rc;

	if (depth > PARQUET_DEPTH_MAX)
		return rfail(R, node, "nested too deep");
	if (nd->type >= 0)
		return leaf_value(R, node, s, out);
	if (nd->nchildren == 0)
		return rfail(R, node, "a group without fields");
	/* LIST: its repeated field is the array; that field's one child is
	 * each element (the three-level list) */
	if ((nd->is_list && nd->nchildren == 1) ||
	    (nd->rep == REP_REPEATED && parent->is_list && parent->nchildren == 1 &&
	     nd->nchildren == 1)) {
		struct slice cs = sub_slice(R, node, child, s);
		return emit_field(R, child, &cs, out, depth + 1);
	}
	/* MAP's repeated key_value group: an object, the key as a string */
	if (nd->rep == REP_REPEATED && parent->is_map && nd->nchildren <= 2) {
		struct slice ks = sub_slice(R, node, child, s);
		struct tbuf key = { 0 };
		if ((rc = emit_field(R, child, &ks, &key, depth + 1)) != 0) {
			free(key.p);
			return rc;
		}
		if (key.n > 0 && key.p[0] == '"')
			tb_add(out, key.p, key.n);
		else
			json_string(out, key.p != NULL ? key.p : "", key.n);
		free(key.p);
		tb_addc(out, ':');
		if (nd->nchildren == 1) {
			tb_add(out, "null", 4);
			return 0;
		}
		struct slice vs = sub_slice(R, node, R->m->nodes[child].next, s);
		return emit_field(R, R->m->nodes[child].next, &vs, out, depth + 1);
	}
	if (nd->is_map && nd->nchildren == 1) {
		struct slice cs = sub_slice(R, node, child, s);
		return emit_field(R, child, &cs, out, depth + 1);
	}
	tb_addc(out, '{');
	for (int32_t i = 0; i < nd->nchildren; i++, child = R->m->nodes[child].next) {
		struct slice cs = sub_slice(R, node, child, s);
		if (i > 0)
			tb_addc(out, ',');
		json_string(out, R->m->nodes[child].name, strlen(R->m->nodes[child].name));
		tb_addc(out, ':');
		if ((rc = emit_field(R, child, &cs, out, depth + 1)) != 0)
			return rc;
	}
	tb_addc(out, '}');
	return 0;
}

/* Every leaf's slice is one entry (a null or an empty sequence). */
static bool single(const struct slice *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->hi[i] - s->lo[i] != 1)
			return false;
	return true;
}

/* Node in one instance of its parent: null when absent, an array of its
 * instances when repeated (an object when a map's entries), else its one
 * instance. */
static int emit_field(struct rows *R, size_t node, const struct slice *s, struct tbuf *out,
                      int depth)
{
	const struct pq_node *nd = &R->m->nodes[node];
	const struct pq_node *parent = &R->m->nodes[nd->parent];
	bool as_map = nd->rep == REP_REPEATED && parent->is_map;
	const struct jent *first;
	size_t *lo = NULL;
	int rc = 0;

	if (s->n == 0 || s->lo[0] >= s->hi[0])
		return rfail(R, node, "its levels do not agree");
	first = &R->ls[s->base].ents[s->lo[0]];
	if (first->def < nd->def_level) {
		if (!single(s))
			return rfail(R, node, "its levels do not agree");
		if (nd->rep == REP_REPEATED)
			tb_add(out, as_map ? "{}" : "[]", 2);
		else
			tb_add(out, "null", 4);
		return 0;
	}
	if (nd->rep != REP_REPEATED)
		return emit_instance(R, node, s, out, depth);

	/* instances: a new one at each entry of this node's repetition level */
	lo = malloc(2 * s->n * sizeof *lo);
	if (lo == NULL) {
		str_errf(R->err, R->errlen, "out of memory");
		return TAB_ERR_IO;
	}
	struct slice is = { .base = s->base, .n = s->n, .lo = lo, .hi = lo + s->n };
	memcpy(is.lo, s->lo, s->n * sizeof *lo);
	tb_addc(out, as_map ? '{' : '[');
	for (bool any = false; is.lo[0] < s->hi[0]; any = true) {
		for (size_t i = 0; i < s->n; i++) {
			const struct jent *e = R->ls[s->base + i].ents;
			size_t k = is.lo[i] + 1;
			if (is.lo[i] >= s->hi[i]) {
				rc = rfail(R, node, "its levels do not agree");
				goto out;
			}
			while (k < s->hi[i] && e[k].rep > nd->rep_level)
				k++;
			is.hi[i] = k;
		}
		if (any)
			tb_addc(out, ',');
		if ((rc = emit_instance(R, node, &is, out, depth)) != 0)
			goto out;
		memcpy(is.lo, is.hi, s->n * sizeof *lo);
	}
	for (size_t i = 0; i < s->n; i++)
		if (is.lo[i] != s->hi[i]) {
			rc = rfail(R, node, "its levels do not agree");
			goto out;
		}
	tb_addc(out, as_map ? '}' : ']');
out:
	free(lo);
	return rc;
}

/* ---- rows --------------------------------------------------------------- */

static int flat_cell(struct rows *R, size_t col, struct tab_cell *cell)
{
	const struct pq_column *c = &R->m->cols[col];
	const struct pq_node *nd = &R->m->nodes[c->node];
	struct tbuf *b = &R->text[col];
	struct pq_entry e;
	int rc;

	if ((rc = leaf_next(R, nd->first_leaf, &e)) <= 0)
		return rc < 0 ? rc : rfail(R, c->node, "the column ends before the row");
	b->n = 0;
	if (!e.present) {
		*cell = (struct tab_cell){ .kind = TAB_NULL, .text = "" };
		return 0;
	}
	double num;
	int kind = value_text(nd, &e, b, &num);
	if (kind < 0)
		return rfail(R, c->node, "a value of the wrong size, or a decimal over 64 bytes");
	if (b->oom) {
		str_errf(R->err, R->errlen, "Parquet column %s, row %lld: a value over %u MiB, "
		         "or out of memory", nd->name, R->row, TAB_ROW_MAX >> 20);
		return TAB_ERR_FORMAT;
	}
	*cell = (struct tab_cell){ .kind = (enum tab_cell_kind)kind, .text = b->p, .len = b->n,
	                           .num = num };
	return 0;
}

static int nested_cell(struct rows *R, size_t col, struct tab_cell *cell)
{
	const struct pq_column *c = &R->m->cols[col];
	const struct pq_node *nd = &R->m->nodes[c->node];
	struct tbuf *b = &R->text[col];
	size_t bounds[2 * 64], *lo = bounds;
	int rc;

	R->arena.n = 0;
	R->nested_values = 0;
	for (size_t i = 0; i < nd->nleaves; i++)
		if ((rc = gather(R, nd->first_leaf + i)) != 0)
			return rc;
	if (nd->nleaves > 64 && (lo = malloc(2 * nd->nleaves * sizeof *lo)) == NULL) {
		str_errf(R->err, R->errlen, "out of memory");
		return TAB_ERR_IO;
	}
	struct slice s = { .base = nd->first_leaf, .n = nd->nleaves, .lo = lo,
	                   .hi = lo + nd->nleaves };
	for (size_t i = 0; i < nd->nleaves; i++) {
		s.lo[i] = 0;
		s.hi[i] = R->ls[nd->first_leaf + i].nents;
	}
	b->n = 0;
	rc = emit_field(R, c->node, &s, b, 0);
	if (lo != bounds)
		free(lo);
	if (rc != 0)
		return rc;
	if (b->oom) {
		str_errf(R->err, R->errlen, "Parquet column %s, row %lld: a value over %u MiB, "
		         "or out of memory", nd->name, R->row, TAB_ROW_MAX >> 20);
		return TAB_ERR_FORMAT;
	}
	if (b->n == 4 && memcmp(b->p, "null", 4) == 0)
		*cell = (struct tab_cell){ .kind = TAB_NULL, .text = "" };
	else
		*cell = (struct tab_cell){ .kind = TAB_TEXT, .text = b->p, .len = b->n };
	return 0;
}

static void close_group(struct rows *R)
{
	for (size_t i = 0; i < R->m->nleaves; i++) {
		pq_cursor_free(R->ls[i].cur);
		R->ls[i].cur = NULL;
		R->ls[i].has_pend = false;
	}
}

/* The rows of row group g.  0, 1 when the sink stopped, or a negative
 * enum tab_err. */
static int read_group(struct rows *R, const struct pq_src *src, size_t g,
                      const struct tab_sink *sink, struct tab_stats *stats)
{
	const struct pq_meta *m = R->m;
	struct pq_budget budget = { 0 };
	int rc = 0;

	for (size_t i = 0; i < m->nleaves; i++) {
		const struct pq_node *nd = &m->nodes[m->leaves[i]];
		struct pq_leaf_desc d = {
			.name = nd->name, .type = nd->type, .type_length = nd->type_length,
			.max_def = nd->def_level, .max_rep = nd->rep_level,
			.chunk = m->chunks[g * m->nleaves + i],
		};
		if ((rc = pq_cursor_open(&R->ls[i].cur, src, &d, &budget, R->err, R->errlen)) != 0)
			goto out;
	}
	for (int64_t r = 0; r < m->rg_rows[g]; r++) {
		R->row++;
		for (size_t c = 0; c < m->ncols; c++) {
			rc = m->cols[c].nested ? nested_cell(R, c, &R->cells[c])
			                       : flat_cell(R, c, &R->cells[c]);
			if (rc != 0)
				goto out;
		}
		stats->rows++;
		if (sink->row != NULL) {
			int v = sink->row(sink->arg, R->cells, m->ncols);
			if (v < 0) {
				str_errf(R->err, R->errlen, "stopped by the caller");
				rc = TAB_ERR_STOP;
				goto out;
			}
			if (v > 0) {
				rc = 1;
				goto out;
			}
		}
	}
	/* every column chunk read to its end: no value left over */
	for (size_t i = 0; i < m->nleaves; i++) {
		struct pq_entry e;
		int k = leaf_next(R, i, &e);
		if (k < 0) {
			rc = k;
			goto out;
		}
		if (k > 0) {
			rc = rfail(R, m->leaves[i], "more values than the row group has rows");
			goto out;
		}
	}
out:
	close_group(R);
	return rc;
}

int parquet_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
                 struct tab_stats *stats, char *err, size_t errlen)
{
	struct pq_meta m;
	struct rows R = { .m = &m, .err = err, .errlen = errlen };
	struct tab_cell *names = NULL;
	uint64_t size = 0;
	int fd, rc;

	(void)o;
	memset(&m, 0, sizeof m);
	if ((fd = pq_file_open(path, &size, err, errlen)) < 0)
		return fd;
	if ((rc = pq_meta_read(fd, size, true, &m, err, errlen)) != 0)
		goto out;
	R.ls = calloc(m.nleaves ? m.nleaves : 1, sizeof *R.ls);
	R.text = calloc(m.ncols ? m.ncols : 1, sizeof *R.text);
	R.cells = calloc(m.ncols ? m.ncols : 1, sizeof *R.cells);
	names = calloc(m.ncols ? m.ncols : 1, sizeof *names);
	if (R.ls == NULL || R.text == NULL || R.cells == NULL || names == NULL) {
		str_errf(err, errlen, "out of memory");
		rc = TAB_ERR_IO;
		goto out;
	}
	for (size_t i = 0; i < m.ncols; i++)
		names[i] = (struct tab_cell){ .kind = TAB_TEXT, .text = m.cols[i].path,
		                              .len = strlen(m.cols[i].path) };
	stats->has_header = true;
	if (sink->header != NULL) {
		int v = sink->header(sink->arg, names, m.ncols);
		if (v < 0) {
			str_errf(err, errlen, "stopped by the caller");
			rc = TAB_ERR_STOP;
			goto out;
		}
		if (v > 0) {
			rc = 0;
			goto out;
		}
	}
	struct pq_src src = { .fd = fd, .size = size };
	for (size_t g = 0; g < m.nrg; g++) {
		rc = read_group(&R, &src, g, sink, stats);
		if (rc == 1) {
			rc = 0;
			break;
		}
		if (rc != 0)
			goto out;
	}
out:
	if (R.ls != NULL)
		for (size_t i = 0; i < m.nleaves; i++)
			free(R.ls[i].ents);
	if (R.text != NULL)
		for (size_t i = 0; i < m.ncols; i++)
			free(R.text[i].p);
	free(R.ls);
	free(R.text);
	free(R.cells);
	free(R.arena.p);
	free(names);
	pq_meta_free(&m);
	close(fd);
	return rc;
}
