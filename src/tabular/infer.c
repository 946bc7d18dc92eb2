/* infer.c - the type of each column from the values it holds.
 *
 * A text value, blanks (spaces, tabs) around it aside, is, in this order
 * of checks:
 *   BOOLEAN    true, false, t, f, yes or no, any case (y/n and 0/1 are
 *              not: 0/1 are INTEGER, y/n VARCHAR)
 *   INTEGER    [+-]digits fitting 32 bits; BIGINT when it fits 64 bits;
 *              DECIMAL(n,0) up to 38 digits; DOUBLE beyond
 *   DECIMAL    [+-]digits.digits or [+-].digits: precision = digits before
 *              the point (a lone 0 counts none) + digits after it, scale =
 *              digits after it, as written (trailing zeros count); DOUBLE
 *              when the precision passes 38
 *   DOUBLE     a number with an exponent (1e5, -2.5E-3), digits and a
 *              point with none after it (5.), and NaN, Inf, Infinity
 *              (signed or not, any case)
 *   DATE       YYYY-MM-DD or YYYY/MM/DD, a real calendar day, the month and
 *              day of one or two digits (1988-4-21)
 *   TIMESTAMP  a DATE of 10 characters, 'T' or one space, HH:MM[:SS[.fraction of 1-9
 *              digits]], then optionally Z or an offset +HH, +HHMM, +HH:MM
 *   VARCHAR    anything else
 * Numbers are written plainly: no thousands separators, and no leading
 * zero before another digit ("007" is a code and stays VARCHAR; "0", "0.5"
 * and "-0.25" are numbers).
 *
 * A column takes the narrowest type that holds all its values: INTEGER
 * widens to BIGINT, DECIMAL and DOUBLE (DECIMAL keeps the most digits
 * before the point and the largest scale seen, and becomes DOUBLE past 38
 * digits); DATE and TIMESTAMP make TIMESTAMP; any other mix is VARCHAR.
 * An empty value (or a null cell) only makes the column nullable; a column
 * with no value at all is a nullable VARCHAR.  A missing-value marker
 * (tab_cell.marker) has no type: in a column whose other values make it
 * anything but VARCHAR it is a null (the column is nullable), else it is
 * text like any other (a column of markers only is VARCHAR).
 *
 * Typed cells of spreadsheets and JSON are taken by kind: TAB_NUMBER as its
 * written text when that reads as a number (else INTEGER, BIGINT or DOUBLE
 * from its value), TAB_BOOL BOOLEAN, TAB_DATE DATE, TAB_DATETIME
 * TIMESTAMP. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "tabular/internal.h"
#include "util/str.h"

#define DECIMAL_MAX_PRECISION 38

/* ---- classification of one value ----------------------------------------- */

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Digits at s[i..]: how many. */
static inline size_t digits(const unsigned char *s, size_t i, size_t n)
{
	size_t j = i;
	while (j < n && is_digit(s[j]))
		j++;
	return j - i;
}

static enum infer_type classify_number(const unsigned char *s, size_t n, int *int_digits,
                                       int *scale)
{
	size_t i = 0, nint, nfrac = 0;
	bool neg = false;

	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		i = 1;
	}
	nint = digits(s, i, n);
	/* no leading zero before another digit */
	if (nint > 1 && s[i] == '0')
		return INFER_VARCHAR;
	if (i + nint == n) {
		if (nint == 0)
			return INFER_VARCHAR;
		*int_digits = (int)nint;
		*scale = 0;
		if (nint <= 9)
			return INFER_INTEGER;
		if (nint <= 19) {
			uint64_t v = 0;
			for (size_t k = i; k < n; k++)
				v = v * 10 + (uint64_t)(s[k] - '0');
			if (nint == 10 && (neg ? v <= 2147483648ULL : v <= 2147483647ULL))
				return INFER_INTEGER;
			if (nint <= 18 || (neg ? v <= 9223372036854775808ULL
			                       : v <= 9223372036854775807ULL))
				return INFER_BIGINT;
		}
		return nint <= DECIMAL_MAX_PRECISION ? INFER_DECIMAL : INFER_DOUBLE;
	}
	i += nint;
	if (s[i] == '.') {
		nfrac = digits(s, i + 1, n);
		if (nfrac == 0)                /* "5." is a float, "." is not */
			return nint > 0 && i + 1 == n ? INFER_DOUBLE : INFER_VARCHAR;
		i += 1 + nfrac;
	} else if (nint == 0) {
		return INFER_VARCHAR;
	}
	if (i == n) {
		/* a lone 0 before the point is no digit of precision */
		int id = nint == 1 && s[n - nfrac - 2] == '0' ? 0 : (int)nint;

		*int_digits = id;
		*scale = (int)nfrac;
		return id + (int)nfrac <= DECIMAL_MAX_PRECISION ? INFER_DECIMAL : INFER_DOUBLE;
	}
	if (s[i] != 'e' && s[i] != 'E')
		return INFER_VARCHAR;
	i++;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (digits(s, i, n) == 0 || i + digits(s, i, n) != n)
		return INFER_VARCHAR;
	*int_digits = 0;
	*scale = 0;
	return INFER_DOUBLE;
}

static bool two_digits(const unsigned char *s, int *v)
{
	if (!is_digit(s[0]) || !is_digit(s[1]))
		return false;
	*v = (s[0] - '0') * 10 + (s[1] - '0');
	return true;
}

/* 1 or 2 digits at s[0..n): the value, and how many (0: none). */
static size_t one_or_two(const unsigned char *s, size_t n, int *v)
{
	if (n == 0 || !is_digit(s[0]))
		return 0;
	if (n == 1 || !is_digit(s[1])) {
		*v = s[0] - '0';
		return 1;
	}
	*v = (s[0] - '0') * 10 + (s[1] - '0');
	return 2;
}

/* The length of the date that s[0..n) starts with, 0 when none: YYYY-MM-DD
 * or YYYY/MM/DD (a real calendar day), the month and day of one or two
 * digits, one separator throughout. */
static size_t date_len(const unsigned char *s, size_t n)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int c, y2, m, d, year;
	size_t i = 5, k;
	unsigned char sep;

	if (n < 8 || !two_digits(s, &c) || !two_digits(s + 2, &y2) || (s[4] != '-' && s[4] != '/'))
		return 0;
	sep = s[4];
	if ((k = one_or_two(s + i, n - i, &m)) == 0 || i + k >= n || s[i + k] != sep)
		return 0;
	i += k + 1;
	if ((k = one_or_two(s + i, n - i, &d)) == 0)
		return 0;
	i += k;
	year = c * 100 + y2;
	if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return 0;
	if (m == 2 && d == 29 && !(year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)))
		return 0;
	return i;
}

/* s[0..n) after the date: [T ]HH:MM[:SS[.f]][Z|+HH|+HHMM|+HH:MM]. */
static bool is_time_part(const unsigned char *s, size_t n)
{
	size_t i = 6;
	int h, mi, se;

	if (n < 6 || (s[0] != 'T' && s[0] != ' ') || !two_digits(s + 1, &h) || s[3] != ':' ||
	    !two_digits(s + 4, &mi) || h > 23 || mi > 59)
		return false;
	if (i < n && s[i] == ':') {
		if (i + 3 > n || !two_digits(s + i + 1, &se) || se > 59)
			return false;
		i += 3;
		if (i < n && s[i] == '.') {
			size_t f = digits(s, i + 1, n);
			if (f < 1 || f > 9)
				return false;
			i += 1 + f;
		}
	}
	if (i == n)
		return true;
	if (s[i] == 'Z')
		return i + 1 == n;
	if (s[i] != '+' && s[i] != '-')
		return false;
	i++;
	if (i + 2 > n || !two_digits(s + i, &h) || h > 23)
		return false;
	i += 2;
	if (i == n)
		return true;
	if (s[i] == ':')
		i++;
	return i + 2 == n && two_digits(s + i, &mi) && mi <= 59;
}

static bool word_is(const unsigned char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp((const char *)s, w, n) == 0;
}

enum infer_type infer_classify_text(const char *text, size_t n, int *int_digits, int *scale)
{
	const unsigned char *s;
	unsigned char c;

	*int_digits = 0;
	*scale = 0;
	text = tab_trim_blanks(text, &n);
	if (n == 0)
		return INFER_VARCHAR;
	s = (const unsigned char *)text;
	c = s[0];
	if (is_digit(c) || c == '-' || c == '+' || c == '.') {
		if (n >= 8 && is_digit(c) && (s[4] == '-' || s[4] == '/')) {
			size_t d = date_len(s, n);

			if (d == n)
				return INFER_DATE;
			if (d == 10 && is_time_part(s + 10, n - 10))
				return INFER_TIMESTAMP;
			/* else maybe a number: "3.3E-010" has its '-' there too */
		}
		if (n > 1 && (c == '-' || c == '+') && !is_digit(s[1]) && s[1] != '.')
			return tab_is_nan_inf(text, n) ? INFER_DOUBLE : INFER_VARCHAR;
		return classify_number(s, n, int_digits, scale);
	}
	switch (c | 0x20) {
	case 't': case 'f': case 'y': case 'n':
		if (word_is(s, n, "true") || word_is(s, n, "false") || word_is(s, n, "t") ||
		    word_is(s, n, "f") || word_is(s, n, "yes") || word_is(s, n, "no"))
			return INFER_BOOLEAN;
		break;
	}
	if (n <= 8 && tab_is_nan_inf(text, n))
		return INFER_DOUBLE;
	return INFER_VARCHAR;
}

/* ---- the accumulator --------------------------------------------------- */

#define TYPE_NONE ((int)INFER_VARCHAR + 1)   /* no value seen yet */

struct col_acc {
	int type;                /* enum infer_type, or TYPE_NONE */
	int int_digits, scale;   /* largest seen among numbers */
	bool nullable;           /* a null seen */
	bool marker;             /* a missing-value marker seen */
	size_t max_len;
};

struct infer_acc {
	struct infer_column *cols;   /* names */
	struct col_acc *acc;
	size_t ncols;
	bool have_header;
	long long rows;
};

static int merge(int cur, int v)
{
	if (cur == TYPE_NONE || cur == v)
		return v;
	if (infer_is_number(cur) && infer_is_number(v))
		return cur > v ? cur : v;      /* the enum is in widening order */
	if ((cur == INFER_DATE && v == INFER_TIMESTAMP) ||
	    (cur == INFER_TIMESTAMP && v == INFER_DATE))
		return INFER_TIMESTAMP;
	return INFER_VARCHAR;
}

static enum infer_type classify_number_cell(const struct tab_cell *c, int *id, int *sc)
{
	enum infer_type t = INFER_VARCHAR;

	if (c->len > 0)
		t = infer_classify_text(c->text, c->len, id, sc);
	if (infer_is_number((int)t))
		return t;
	*id = 0;
	*sc = 0;
	if (isfinite(c->num) && c->num == floor(c->num)) {
		if (c->num >= -2147483648.0 && c->num <= 2147483647.0)
			return INFER_INTEGER;
		if (c->num >= -9223372036854775808.0 && c->num < 9223372036854775808.0)
			return INFER_BIGINT;
	}
	return INFER_DOUBLE;
}

static void observe(struct col_acc *a, const struct tab_cell *c)
{
	int t, id = 0, sc = 0;

	if (c->kind == TAB_NULL || (c->kind == TAB_TEXT && c->len == 0)) {
		a->nullable = true;
		return;
	}
	if (c->len > a->max_len)
		a->max_len = c->len;
	if (c->kind == TAB_TEXT && c->marker) {
		a->marker = true;       /* typed by the other values */
		return;
	}
	if (a->type == INFER_VARCHAR)
		return;                 /* nothing can change it now */
	switch (c->kind) {
	case TAB_NUMBER:
		t = (int)classify_number_cell(c, &id, &sc);
		break;
	case TAB_BOOL:
		t = INFER_BOOLEAN;
		break;
	case TAB_DATE:
		t = INFER_DATE;
		break;
	case TAB_DATETIME:
		t = INFER_TIMESTAMP;
		break;
	default:
		t = (int)infer_classify_text(c->text, c->len, &id, &sc);
		break;
	}
	a->type = merge(a->type, t);
	if (infer_is_number(t)) {
		if (id > a->int_digits)
			a->int_digits = id;
		if (sc > a->scale)
			a->scale = sc;
	}
}

struct infer_acc *infer_acc_new(void)
{
	return calloc(1, sizeof(struct infer_acc));
}

void infer_acc_free(struct infer_acc *a)
{
	if (a == NULL)
		return;
	free(a->cols);
	free(a->acc);
	free(a);
}

static int acc_grow(struct infer_acc *a, size_t n)
{
	struct infer_column *cols;
	struct col_acc *acc;

	if (n <= a->ncols)
		return 0;
	if (n > TAB_COLUMNS_MAX)
		return -1;
	cols = realloc(a->cols, n * sizeof *cols);
	if (cols == NULL)
		return -1;
	a->cols = cols;
	acc = realloc(a->acc, n * sizeof *acc);
	if (acc == NULL)
		return -1;
	a->acc = acc;
	for (size_t i = a->ncols; i < n; i++) {
		memset(&cols[i], 0, sizeof cols[i]);
		snprintf(cols[i].name, sizeof cols[i].name, "column%zu", i);
		memset(&acc[i], 0, sizeof acc[i]);
		acc[i].type = TYPE_NONE;
		/* a column that appears after some rows lacked it */
		acc[i].nullable = a->rows > 0;
	}
	a->ncols = n;
	return 0;
}

int infer_acc_header(struct infer_acc *a, const struct tab_cell *names, size_t n)
{
	if (a->have_header || a->rows > 0)
		return -1;
	if (acc_grow(a, n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t len = names[i].len;

		if (len == 0)
			continue;              /* keeps columnN */
		if (len >= INFER_NAME_MAX)
			len = INFER_NAME_MAX - 1;
		while (len > 0 && len < names[i].len &&
		       ((unsigned char)names[i].text[len] & 0xC0) == 0x80)
			len--;                 /* never cut a UTF-8 sequence */
		memcpy(a->cols[i].name, names[i].text, len);
		a->cols[i].name[len] = '\0';
	}
	a->have_header = true;
	return 0;
}

int infer_acc_row(struct infer_acc *a, const struct tab_cell *cells, size_t n)
{
	size_t i;

	/* Without a header the widest row names the columns. */
	if (!a->have_header && n > a->ncols && acc_grow(a, n) != 0)
		return -1;
	for (i = 0; i < n && i < a->ncols; i++)
		observe(&a->acc[i], &cells[i]);
	for (; i < a->ncols; i++)
		a->acc[i].nullable = true;     /* a short row: the rest are null */
	a->rows++;
	return 0;
}

int infer_acc_type(const struct infer_acc *a, size_t i)
{
	return i < a->ncols && a->acc[i].type != TYPE_NONE ? a->acc[i].type : -1;
}

bool infer_type_holds(enum infer_type t, const char *s, size_t n)
{
	int id, sc, v = (int)infer_classify_text(s, n, &id, &sc);

	/* a DECIMAL or DOUBLE column holds any number, an integer column
	 * only integers of its width */
	if (infer_is_number((int)t) && infer_is_number(v))
		return t >= INFER_DECIMAL || v <= (int)t;
	return merge((int)t, v) == (int)t;
}

int infer_acc_finish(struct infer_acc *a, struct infer_result *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < a->ncols; i++) {
		struct infer_column *c = &a->cols[i];
		const struct col_acc *s = &a->acc[i];

		c->nullable = s->nullable;
		c->max_len = s->max_len;
		c->precision = c->scale = 0;
		if (s->type != TYPE_NONE && s->type != INFER_VARCHAR && s->marker)
			c->nullable = true;    /* its markers are nulls */
		if (s->type == TYPE_NONE) {
			c->type = INFER_VARCHAR;
			c->nullable = s->nullable || !s->marker;
		} else if (s->type == INFER_DECIMAL) {
			int p = s->int_digits + s->scale;

			if (p > DECIMAL_MAX_PRECISION) {
				c->type = INFER_DOUBLE;
			} else {
				c->type = INFER_DECIMAL;
				c->precision = p > 0 ? p : 1;
				c->scale = s->scale;
			}
		} else {
			c->type = (enum infer_type)s->type;
		}
	}
	out->cols = a->cols;
	out->ncols = a->ncols;
	out->row_count = a->rows;
	out->analyzed_rows = a->rows;
	a->cols = NULL;
	a->ncols = 0;
	return 0;
}

void infer_result_free(struct infer_result *r)
{
	if (r == NULL)
		return;
	free(r->cols);
	r->cols = NULL;
	r->ncols = 0;
}

/* ---- names, JSON, SQL ---------------------------------------------------- */

static const char *const type_names[] = {
	[INFER_INTEGER] = "INTEGER", [INFER_BIGINT] = "BIGINT",
	[INFER_DECIMAL] = "DECIMAL", [INFER_DOUBLE] = "DOUBLE",
	[INFER_BOOLEAN] = "BOOLEAN", [INFER_DATE] = "DATE",
	[INFER_TIMESTAMP] = "TIMESTAMP", [INFER_VARCHAR] = "VARCHAR",
};

const char *infer_type_name(enum infer_type t)
{
	if ((unsigned)t >= sizeof type_names / sizeof type_names[0])
		return "VARCHAR";
	return type_names[t];
}

int infer_type_parse(const char *name, enum infer_type *t)
{
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
		if (str_eq_nocase(name, type_names[i])) {
			*t = (enum infer_type)i;
			return 0;
		}
	return -1;
}

static int add(struct json_object *o, const char *k, struct json_object *v)
{
	if (v == NULL)
		return -1;
	if (json_object_object_add(o, k, v) != 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

struct json_object *infer_result_json(const struct infer_result *r)
{
	struct json_object *o = json_object_new_object(), *cols = json_object_new_array();

	if (o == NULL || cols == NULL)
		goto fail;
	for (size_t i = 0; i < r->ncols; i++) {
		const struct infer_column *c = &r->cols[i];
		struct json_object *col = json_object_new_object();

		if (col == NULL || json_object_array_add(cols, col) != 0) {
			json_object_put(col);
			goto fail;
		}
		if (add(col, "name", json_object_new_string(c->name)) != 0 ||
		    add(col, "inferred_type", json_object_new_string(infer_type_name(c->type))) != 0 ||
		    add(col, "nullable", json_object_new_boolean(c->nullable)) != 0 ||
		    add(col, "position", json_object_new_int64((int64_t)i)) != 0)
			goto fail;
		if (c->type == INFER_DECIMAL &&
		    (add(col, "precision", json_object_new_int(c->precision)) != 0 ||
		     add(col, "scale", json_object_new_int(c->scale)) != 0))
			goto fail;
	}
	if (add(o, "columns", cols) != 0) {
		cols = NULL;
		goto fail;
	}
	cols = NULL;
	if (add(o, "row_count", json_object_new_int64(r->row_count)) != 0 ||
	    add(o, "analyzed_rows", json_object_new_int64(r->analyzed_rows)) != 0)
		goto fail;
	if (r->stats.preamble_rows > 0) {
		struct json_object *w = json_object_new_array();
		char msg[256];

		snprintf(msg, sizeof msg, "the header is row %lld of the sheet: %lld non-blank "
		         "row%s above it (a title or notes) %s skipped; refresh the schema with "
		         "header_row to take another row", r->stats.header_line,
		         r->stats.preamble_rows, r->stats.preamble_rows == 1 ? "" : "s",
		         r->stats.preamble_rows == 1 ? "was" : "were");
		if (add(o, "warnings", w) != 0 ||
		    json_object_array_add(w, json_object_new_string(msg)) != 0)
			goto fail;
	}
	return o;
fail:
	json_object_put(cols);
	json_object_put(o);
	return NULL;
}

int infer_column_sql_type(const struct infer_column *c, char *buf, size_t cap)
{
	int n;

	switch (c->type) {
	case INFER_INTEGER:
		n = snprintf(buf, cap, "INT");
		break;
	case INFER_BIGINT:
		n = snprintf(buf, cap, "BIGINT");
		break;
	case INFER_DECIMAL:
		n = snprintf(buf, cap, "DECIMAL(%d,%d)", c->precision, c->scale);
		break;
	case INFER_DOUBLE:
		n = snprintf(buf, cap, "DOUBLE");
		break;
	case INFER_BOOLEAN:
		n = snprintf(buf, cap, "BOOLEAN");
		break;
	case INFER_DATE:
		n = snprintf(buf, cap, "DATE");
		break;
	case INFER_TIMESTAMP:
		n = snprintf(buf, cap, "DATETIME(6)");
		break;
	default:
		/* Sized from the analysed rows, with room: up to 255 bytes is
		 * VARCHAR(255) (no row-size trouble, later longer values still
		 * fit), up to 64 KiB TEXT, beyond MEDIUMTEXT. */
		if (c->max_len <= 255)
			n = snprintf(buf, cap, "VARCHAR(255)");
		else if (c->max_len <= 65535)
			n = snprintf(buf, cap, "TEXT");
		else
			n = snprintf(buf, cap, "MEDIUMTEXT");
		break;
	}
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}
