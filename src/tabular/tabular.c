/* tabular.c - format names, options, and the two entry points (tab_read,
 * infer_file) that dispatch to the per-format readers of formats.h.
 *
 * Every reader's header goes through one place here, so the column names
 * are the same whatever the format, and the same as DuckDB's sniffer
 * gives: Unicode spaces (category Zs) around a name are dropped; an empty
 * name becomes columnN (N the 0-based position, zero-padded to as many
 * digits as the last column's: column00 .. column11), as do all names of
 * a file without a header; a name is cut to INFER_NAME_MAX - 1 bytes
 * (never inside a UTF-8 sequence); a name already taken (ignoring ASCII
 * case, as MariaDB compares column names) gets _1, _2, ... appended, K
 * counting the clashes with that name. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tabular/formats.h"
#include "tabular/internal.h"
#include "tabular/parquet.h"
#include "util/str.h"

#define MAX_ANALYZE_ROWS_DEFAULT 100000

/* ---- formats --------------------------------------------------------------- */

static const struct {
	const char *ext;
	enum tab_format f;
} extensions[] = {
	{ ".csv", TAB_CSV }, { ".txt", TAB_TXT }, { ".tsv", TAB_TXT },
	{ ".json", TAB_JSON }, { ".jsonl", TAB_JSON }, { ".ndjson", TAB_JSON },
	{ ".xlsx", TAB_XLSX }, { ".xls", TAB_XLS }, { ".parquet", TAB_PARQUET },
};

static const char *const stored_names[] = {
	[TAB_CSV] = "csv", [TAB_TXT] = "txt", [TAB_JSON] = "json",
	[TAB_XLSX] = "xlsx", [TAB_XLS] = "xls", [TAB_PARQUET] = "parquet",
};

int tab_format_from_name(const char *file_name, enum tab_format *f)
{
	const char *dot = file_name != NULL ? strrchr(file_name, '.') : NULL;

	if (dot == NULL || strchr(dot, '/') != NULL)
		return -1;
	for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
		if (str_eq_nocase(dot, extensions[i].ext)) {
			*f = extensions[i].f;
			return 0;
		}
	return -1;
}

const char *tab_format_name(enum tab_format f)
{
	if ((unsigned)f >= sizeof stored_names / sizeof stored_names[0])
		return "csv";
	return stored_names[f];
}

const char *tab_format_api_name(enum tab_format f)
{
	switch (f) {
	case TAB_JSON:
		return "json";
	case TAB_XLSX:
	case TAB_XLS:
		return "excel";
	case TAB_PARQUET:
		return "parquet";
	default:
		return "csv";
	}
}

int tab_format_parse(const char *stored_name, enum tab_format *f)
{
	if (stored_name == NULL)
		return -1;
	for (size_t i = 0; i < sizeof stored_names / sizeof stored_names[0]; i++)
		if (strcmp(stored_name, stored_names[i]) == 0) {
			*f = (enum tab_format)i;
			return 0;
		}
	return -1;
}

static const char *const default_markers[] = { "NA", "N/A", "NULL", "." };

void tab_opts_init(struct tab_opts *o)
{
	memset(o, 0, sizeof *o);
	o->header_row = -1;
	o->max_analyze_rows = MAX_ANALYZE_ROWS_DEFAULT;
	for (size_t i = 0; i < sizeof default_markers / sizeof default_markers[0]; i++)
		str_copy(o->null_markers[o->n_null_markers++], TAB_MARKER_MAX, default_markers[i]);
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

const char *tab_trim_blanks(const char *s, size_t *n)
{
	while (*n > 0 && is_blank(s[*n - 1]))
		(*n)--;
	while (*n > 0 && is_blank(*s)) {
		s++;
		(*n)--;
	}
	return s;
}

bool tab_opts_is_marker(const struct tab_opts *o, const char *s, size_t n)
{
	s = tab_trim_blanks(s, &n);
	if (n == 0 || n >= TAB_MARKER_MAX)
		return false;
	for (int i = 0; i < o->n_null_markers; i++)
		if (o->null_markers[i][n] == '\0' && memcmp(o->null_markers[i], s, n) == 0)
			return true;
	return false;
}

/* H. Hinnant's civil_from_days. */
void tab_civil_from_days(long long z, long long *y, unsigned *m, unsigned *d)
{
	z += 719468;
	long long era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (long long)yoe + era * 400 + (*m <= 2);
}

bool tab_is_nan_inf(const char *s, size_t n)
{
	s = tab_trim_blanks(s, &n);
	if (n > 0 && (*s == '-' || *s == '+')) {
		s++;
		n--;
	}
	return (n == 3 && (strncasecmp(s, "nan", 3) == 0 || strncasecmp(s, "inf", 3) == 0)) ||
	       (n == 8 && strncasecmp(s, "infinity", 8) == 0);
}

bool tab_cell_is_null(const struct tab_cell *c, bool text_column)
{
	if (c->kind == TAB_NULL)
		return true;
	if (text_column)
		return false;
	if (c->kind == TAB_NUMBER)
		return !isfinite(c->num);
	return c->kind == TAB_TEXT && (c->marker || tab_is_nan_inf(c->text, c->len));
}

/* ---- a set of names: open addressing, FNV-1a ---------------------------- */

struct tab_names {
	char **names;            /* by index */
	size_t *lens;
	size_t n, cap;
	long *slots;             /* index + 1, 0 = empty */
	size_t nslots;           /* a power of two, >= 2 * cap */
};

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

struct tab_names *tab_names_new(void)
{
	return calloc(1, sizeof(struct tab_names));
}

void tab_names_free(struct tab_names *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->lens);
	free(s->slots);
	free(s);
}

size_t tab_names_count(const struct tab_names *s)
{
	return s->n;
}

const char *tab_names_at(const struct tab_names *s, size_t i, size_t *len)
{
	if (len != NULL)
		*len = s->lens[i];
	return s->names[i];
}

static size_t slot_of(const struct tab_names *s, const char *name, size_t len)
{
	size_t mask = s->nslots - 1, i = (size_t)hash(name, len) & mask;

	for (;;) {
		long v = s->slots[i];
		if (v == 0)
			return i;
		if (s->lens[v - 1] == len && memcmp(s->names[v - 1], name, len) == 0)
			return i;
		i = (i + 1) & mask;
	}
}

long tab_names_find(const struct tab_names *s, const char *name, size_t len)
{
	if (s->nslots == 0)
		return -1;
	return s->slots[slot_of(s, name, len)] - 1;
}

static int names_grow(struct tab_names *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16, nslots = cap * 2;
	char **names = realloc(s->names, cap * sizeof *names);
	size_t *lens;
	long *slots;

	if (names == NULL)
		return -1;
	s->names = names;
	lens = realloc(s->lens, cap * sizeof *lens);
	if (lens == NULL)
		return -1;
	s->lens = lens;
	slots = calloc(nslots, sizeof *slots);
	if (slots == NULL)
		return -1;
	free(s->slots);
	s->slots = slots;
	s->nslots = nslots;
	s->cap = cap;
	for (size_t i = 0; i < s->n; i++)
		s->slots[slot_of(s, s->names[i], s->lens[i])] = (long)i + 1;
	return 0;
}

long tab_names_put(struct tab_names *s, const char *name, size_t len, bool *added)
{
	size_t slot;
	char *copy;

	*added = false;
	if (s->nslots > 0) {
		slot = slot_of(s, name, len);
		if (s->slots[slot] != 0)
			return s->slots[slot] - 1;
	}
	if (s->n >= TAB_COLUMNS_MAX)
		return -1;
	if (s->n == s->cap && names_grow(s) != 0)
		return -1;
	copy = malloc(len + 1);
	if (copy == NULL)
		return -1;
	memcpy(copy, name, len);
	copy[len] = '\0';
	slot = slot_of(s, name, len);
	s->names[s->n] = copy;
	s->lens[s->n] = len;
	s->slots[slot] = (long)s->n + 1;
	*added = true;
	return (long)s->n++;
}

/* ---- column names ------------------------------------------------------------ */

/* Cut s (n bytes) to at most max bytes, not inside a UTF-8 sequence. */
size_t tab_utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* Bytes of the Unicode space separator (category Zs) at s[0..n), or 0. */
static size_t space_at(const unsigned char *s, size_t n)
{
	if (s[0] == ' ')
		return 1;
	if (n >= 2 && s[0] == 0xC2 && s[1] == 0xA0)
		return 2;                                  /* U+00A0 */
	if (n >= 3 && s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80)
		return 3;                                  /* U+1680 */
	if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] <= 0x8A || s[2] == 0xAF))
		return 3;                                  /* U+2000..200A, U+202F */
	if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
		return 3;                                  /* U+205F */
	if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
		return 3;                                  /* U+3000 */
	return 0;
}

/* s[0..*n) without the space separators around it. */
static const char *trim_spaces(const char *s, size_t *n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t b = 0, e = 0, k;

	while (b < *n && (k = space_at(u + b, *n - b)) > 0)
		b += k;
	for (size_t i = b; i < *n;) {
		k = space_at(u + i, *n - i);
		if (k == 0) {
			i++;
			e = i;
		} else {
			i += k;
		}
	}
	*n = e > b ? e - b : 0;
	return s + b;
}

struct tab_namer {
	struct tab_names *seen;          /* names given, ASCII lower case */
	unsigned *taken;                 /* per name: suffixes handed out */
	size_t cap, ncols;
};

struct tab_namer *tab_namer_new(size_t ncols)
{
	struct tab_namer *m = calloc(1, sizeof *m);

	if (m == NULL || (m->seen = tab_names_new()) == NULL) {
		free(m);
		return NULL;
	}
	m->ncols = ncols;
	return m;
}

void tab_namer_free(struct tab_namer *m)
{
	if (m == NULL)
		return;
	tab_names_free(m->seen);
	free(m->taken);
	free(m);
}

/* Remember name (len bytes) as given; its index, -1 on failure. */
static long namer_put(struct tab_namer *m, const char *name, size_t len, bool *added)
{
	char key[INFER_NAME_MAX];
	long k;

	memcpy(key, name, len);
	for (size_t i = 0; i < len; i++)
		if (key[i] >= 'A' && key[i] <= 'Z')
			key[i] = (char)(key[i] - 'A' + 'a');
	k = tab_names_put(m->seen, key, len, added);
	if (k >= 0 && (size_t)k >= m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		unsigned *t = realloc(m->taken, cap * sizeof *t);

		if (t == NULL)
			return -1;
		memset(t + m->cap, 0, (cap - m->cap) * sizeof *t);
		m->taken = t;
		m->cap = cap;
	}
	return k;
}

int tab_namer_name(struct tab_namer *m, size_t i, const char *raw, size_t rawlen,
                   char out[INFER_NAME_MAX])
{
	size_t len = rawlen;
	const char *s = raw != NULL ? trim_spaces(raw, &len) : "";
	long k;
	bool added;

	if (raw == NULL)
		len = 0;
	len = tab_utf8_cut(s, len, INFER_NAME_MAX - 1);
	memcpy(out, s, len);
	if (len == 0) {
		/* column0, column1, ...: as many digits for every column */
		int w = snprintf(NULL, 0, "%zu", m->ncols > 0 ? m->ncols - 1 : 0);
		len = (size_t)snprintf(out, INFER_NAME_MAX, "column%0*zu", w, i);
	}
	out[len] = '\0';
	/* Taken: base_K with K counting per base, until the name is free. */
	while ((k = namer_put(m, out, len, &added)) >= 0 && !added) {
		char suffix[16];
		int sl = snprintf(suffix, sizeof suffix, "_%u", ++m->taken[k]);
		size_t b = tab_utf8_cut(out, len, INFER_NAME_MAX - 1 - (size_t)sl);

		memcpy(out + b, suffix, (size_t)sl + 1);
		len = b + (size_t)sl;
	}
	return k < 0 ? -1 : 0;
}

/* ---- the header every reader hands out ------------------------------------ */

struct header_fix {
	const struct tab_sink *sink;
	bool header_seen;
};

static int fixed_header(void *arg, const struct tab_cell *in, size_t n)
{
	struct header_fix *h = arg;
	struct tab_namer *m = tab_namer_new(n);
	struct tab_cell *cells = calloc(n ? n : 1, sizeof *cells);
	char (*names)[INFER_NAME_MAX] = calloc(n ? n : 1, INFER_NAME_MAX);
	int rc = -1;

	h->header_seen = true;
	if (m == NULL || cells == NULL || names == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		bool none = in[i].kind == TAB_NULL || in[i].len == 0;

		if (tab_namer_name(m, i, none ? NULL : in[i].text, none ? 0 : in[i].len,
		                   names[i]) != 0)
			goto out;
		cells[i].kind = TAB_TEXT;
		cells[i].text = names[i];
		cells[i].len = strlen(names[i]);
	}
	rc = h->sink->header != NULL ? h->sink->header(h->sink->arg, cells, n) : 0;
out:
	tab_namer_free(m);
	free(cells);
	free(names);
	return rc;
}

static int passed_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct header_fix *h = arg;

	return h->sink->row != NULL ? h->sink->row(h->sink->arg, cells, n) : 0;
}

/* ---- options each format takes ---------------------------------------------- */

static int check_opts(enum tab_format f, const struct tab_opts *o, char *err, size_t errlen)
{
	bool text = f == TAB_CSV || f == TAB_TXT;
	bool sheet = f == TAB_XLSX || f == TAB_XLS;
	const char *name = tab_format_api_name(f);

	if (o->skip_rows < 0 || o->header_row < -1) {
		str_errf(err, errlen, "skip_rows and header_row must not be negative");
		return TAB_ERR_OPTION;
	}
	if (o->sheet_name[0] != '\0' && !sheet) {
		str_errf(err, errlen, "sheet_name applies to excel files, not %s", name);
		return TAB_ERR_OPTION;
	}
	if (o->delimiter != 0 && !text) {
		str_errf(err, errlen, "delimiter applies to csv files, not %s", name);
		return TAB_ERR_OPTION;
	}
	if (o->encoding[0] != '\0' && !text && f != TAB_JSON) {
		str_errf(err, errlen, "encoding applies to csv and json files, not %s", name);
		return TAB_ERR_OPTION;
	}
	if (o->encoding[0] != '\0' && !tab_dec_known(o->encoding)) {
		str_errf(err, errlen,
		         "unknown encoding '%s' (utf-8, utf-16, utf-16le, utf-16be, latin-1, "
		         "iso-8859-1, windows-1252)", o->encoding);
		return TAB_ERR_OPTION;
	}
	if (text && o->delimiter != 0) {
		unsigned char d = (unsigned char)o->delimiter;

		if (d == '"' || d == '\r' || d == '\n' || d >= 0x80) {
			str_errf(err, errlen, "a delimiter cannot be a quote, a newline or non-ASCII");
			return TAB_ERR_OPTION;
		}
	}
	if ((f == TAB_JSON || f == TAB_PARQUET) && (o->skip_rows != 0 || o->header_row > 0)) {
		str_errf(err, errlen, "skip_rows and header_row do not apply to %s files", name);
		return TAB_ERR_OPTION;
	}
	return 0;
}

/* ---- entry points -------------------------------------------------------------- */

static int dispatch(const char *path, enum tab_format f, const struct tab_opts *o,
                    const struct tab_sink *sink, struct tab_stats *stats, char *err,
                    size_t errlen)
{
	switch (f) {
	case TAB_CSV:
	case TAB_TXT:
		return csv_read(path, o, sink, stats, err, errlen);
	case TAB_JSON:
		return json_read(path, o, sink, stats, err, errlen);
	case TAB_XLSX:
		return xlsx_read(path, o, sink, stats, err, errlen);
	case TAB_XLS:
		return xls_read(path, o, sink, stats, err, errlen);
	case TAB_PARQUET:
		return parquet_read(path, o, sink, stats, err, errlen);
	}
	str_errf(err, errlen, "unknown format");
	return TAB_ERR_FORMAT;
}

int tab_read(const char *path, enum tab_format f, const struct tab_opts *o,
             const struct tab_sink *sink, struct tab_stats *stats,
             char *err, size_t errlen)
{
	struct tab_opts defaults;
	struct tab_stats local;
	struct header_fix h = { .sink = sink };
	struct tab_sink fixed = { .header = fixed_header, .row = passed_row, .arg = &h };
	int rc;

	if (o == NULL) {
		tab_opts_init(&defaults);
		o = &defaults;
	}
	if (stats == NULL)
		stats = &local;
	memset(stats, 0, sizeof *stats);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	rc = check_opts(f, o, err, errlen);
	if (rc != 0)
		return rc;
	return dispatch(path, f, o, &fixed, stats, err, errlen);
}

/* infer_file's sink: the first max_analyze_rows rows are classified, the
 * rest only counted (csv_read and json_read then stop splitting fields). */
struct infer_run {
	struct infer_acc *acc;
	long long limit, analyzed;
	bool count_only_ok;
};

static int infer_header(void *arg, const struct tab_cell *names, size_t n)
{
	struct infer_run *r = arg;

	return infer_acc_header(r->acc, names, n) == 0 ? 0 : -1;
}

static int infer_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct infer_run *r = arg;

	if (r->analyzed >= r->limit)
		return r->count_only_ok ? TAB_ROW_COUNT_ONLY : 0;
	if (infer_acc_row(r->acc, cells, n) != 0)
		return -1;
	r->analyzed++;
	if (r->analyzed >= r->limit && r->count_only_ok)
		return TAB_ROW_COUNT_ONLY;
	return 0;
}

int infer_file(const char *path, enum tab_format f, const struct tab_opts *o,
               struct infer_result *out, char *err, size_t errlen)
{
	struct tab_opts defaults;
	struct infer_run run = { 0 };
	struct tab_sink sink = { .header = infer_header, .row = infer_row, .arg = &run };
	struct tab_stats stats;
	int rc;

	memset(out, 0, sizeof *out);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (o == NULL) {
		tab_opts_init(&defaults);
		o = &defaults;
	}
	if (f == TAB_PARQUET) {
		rc = check_opts(f, o, err, errlen);
		if (rc != 0)
			return rc;
		rc = parquet_infer(path, out, err, errlen);
		if (rc != 0)
			infer_result_free(out);
		return rc;
	}
	run.acc = infer_acc_new();
	if (run.acc == NULL) {
		str_errf(err, errlen, "out of memory");
		return TAB_ERR_IO;
	}
	run.limit = o->max_analyze_rows > 0 ? o->max_analyze_rows : MAX_ANALYZE_ROWS_DEFAULT;
	run.count_only_ok = f == TAB_CSV || f == TAB_TXT || f == TAB_JSON;
	rc = tab_read(path, f, o, &sink, &stats, err, errlen);
	if (rc == TAB_ERR_STOP) {
		str_errf(err, errlen, "out of memory, or more than %d columns", TAB_COLUMNS_MAX);
		rc = TAB_ERR_FORMAT;
	}
	if (rc == 0) {
		infer_acc_finish(run.acc, out);
		out->row_count = stats.rows;
		out->analyzed_rows = run.analyzed;
		out->stats = stats;
	}
	infer_acc_free(run.acc);
	return rc;
}
