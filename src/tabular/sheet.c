/* sheet.c - the row rules XLSX and XLS share, and Excel's date serials.
 *
 * Rows are counted as the sheet numbers them (row 1 is index 0, present in
 * the file or not).  A blank row (no non-empty cell) is skipped wherever it
 * is, so blank lines between blocks and the empty, formatted rows at the
 * end of many sheets add no row of NULLs.  A data row shorter than the
 * header is padded with NULLs (an empty cell is a missing value, not a
 * ragged row); one with a non-empty cell right of the header's last column
 * is passed whole and counted as ragged.
 *
 * The header: with skip_rows or header_row given, skip_rows + header_row
 * rows are dropped and the first non-blank row after them is the header.
 * Without either it is detected, since a sheet often starts with a title,
 * a date or notes above its table: the first SHEET_SNIFF_ROWS non-blank
 * rows are held, and of the rows with at least two non-empty cells, the
 * usual right edge R (the most common column of the last non-empty cell;
 * a tie to the wider) and the usual count W of non-empty cells (likewise)
 * are taken.  A leading row is preamble, and skipped, while it ends left of
 * R and has fewer than W - W/4 non-empty cells; the first row that is not
 * is the header; but while the row so found holds a number, date or
 * boolean and the row above it is text only, of two cells or more, that
 * row above is the header (names over a table wider than they are).  So a
 * title in A1 over a table of two or more columns is skipped, while a
 * header with an empty first name (a spreadsheet written with its index,
 * as pandas does), a few empty names, or unnamed columns on the right is
 * kept.  The count of skipped rows goes to the stats, for a warning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tabular/internal.h"
#include "tabular/sheet.h"
#include "util/str.h"


void sheet_rows_init(struct sheet_rows *s, const struct tab_opts *o,
                     const struct tab_sink *sink, struct tab_stats *stats)
{
	memset(s, 0, sizeof *s);
	s->opts = o;
	s->sink = sink;
	s->stats = stats;
	s->drop = (o->skip_rows > 0 ? o->skip_rows : 0) + (o->header_row > 0 ? o->header_row : 0);
	s->sniffing = o->skip_rows <= 0 && o->header_row < 0;
}

void sheet_rows_free(struct sheet_rows *s)
{
	free(s->buf);
	free(s->hrows);
	free(s->hcells);
	free(s->htext);
	s->buf = NULL;
	s->hrows = NULL;
	s->hcells = NULL;
	s->htext = NULL;
	s->cap = s->hrows_cap = s->hcells_cap = s->htext_cap = 0;
}

/* *p grown to hold n elements of size elem. */
static int grow_array(void **p, size_t *cap, size_t n, size_t elem, char *err, size_t errlen)
{
	if (n <= *cap)
		return 0;
	size_t cap2 = *cap ? *cap : 16;
	while (cap2 < n)
		cap2 *= 2;
	void *b = realloc(*p, cap2 * elem);
	if (b == NULL) {
		str_errf(err, errlen, "out of memory for a row of %zu cells", n);
		return TAB_ERR_IO;
	}
	*p = b;
	*cap = cap2;
	return 0;
}

static int grow(struct sheet_rows *s, size_t n, char *err, size_t errlen)
{
	return grow_array((void **)&s->buf, &s->cap, n, sizeof *s->buf, err, errlen);
}

static int verdict(int r)
{
	if (r < 0)
		return TAB_ERR_STOP;
	return r > 0 ? 1 : 0;
}

static int emit_header(struct sheet_rows *s, long long index, const struct tab_cell *cells,
                       size_t n, char *err, size_t errlen)
{
	if (grow(s, n ? n : 1, err, errlen) != 0)
		return TAB_ERR_IO;
	/* empty names are named by tab_read's header (tabular.c) */
	for (size_t i = 0; i < n; i++)
		s->buf[i] = cells[i];
	s->have_header = true;
	s->width = n;
	s->stats->has_header = n > 0;
	s->stats->header_line = n > 0 ? index + 1 : 0;
	return s->sink->header ? verdict(s->sink->header(s->sink->arg, s->buf, n)) : 0;
}

/* A non-blank row of used cells past the dropped ones: the header if none
 * came yet, else a data row. */
static int take_row(struct sheet_rows *s, long long index, const struct tab_cell *cells,
                    size_t used, char *err, size_t errlen)
{
	size_t out;

	if (!s->have_header)
		return emit_header(s, index, cells, used, err, errlen);
	out = used > s->width ? used : s->width;
	if (grow(s, out ? out : 1, err, errlen) != 0)
		return TAB_ERR_IO;
	memcpy(s->buf, cells, used * sizeof *cells);
	for (size_t i = used; i < out; i++)
		s->buf[i] = (struct tab_cell){ .kind = TAB_NULL, .text = "", .len = 0 };
	s->stats->rows++;
	if (used > s->width) {
		s->stats->ragged_rows++;
		if (s->stats->first_ragged_row == 0)
			s->stats->first_ragged_row = s->stats->rows;
	}
	return s->sink->row ? verdict(s->sink->row(s->sink->arg, s->buf, out)) : 0;
}

/* ---- detecting the header ---------------------------------------------- */

static int hold_row(struct sheet_rows *s, long long index, const struct tab_cell *cells,
                    size_t used, char *err, size_t errlen)
{
	size_t text = 0;

	for (size_t i = 0; i < used; i++)
		text += cells[i].kind == TAB_NULL ? 0 : cells[i].len + 1;
	if (grow_array((void **)&s->hrows, &s->hrows_cap, s->nhrows + 1, sizeof *s->hrows, err,
	               errlen) != 0 ||
	    grow_array((void **)&s->hcells, &s->hcells_cap, s->nhcells + used,
	               sizeof *s->hcells, err, errlen) != 0 ||
	    grow_array((void **)&s->htext, &s->htext_cap, s->htext_len + text + 1, 1, err,
	               errlen) != 0)
		return TAB_ERR_IO;
	s->hrows[s->nhrows++] = (struct sheet_hrow){ .index = index, .first = s->nhcells,
	                                             .n = used };
	for (size_t i = 0; i < used; i++) {
		struct sheet_hcell *h = &s->hcells[s->nhcells++];
		*h = (struct sheet_hcell){ .kind = cells[i].kind, .off = s->htext_len,
		                           .num = cells[i].num };
		if (cells[i].kind == TAB_NULL)
			continue;
		memcpy(s->htext + s->htext_len, cells[i].text, cells[i].len);
		s->htext[s->htext_len + cells[i].len] = '\0';
		h->len = cells[i].len;
		s->htext_len += cells[i].len + 1;
	}
	return 0;
}

static void row_shape(const struct sheet_rows *s, const struct sheet_hrow *r, size_t *edge,
                      size_t *filled)
{
	*edge = r->n;                      /* the last cell held is non-empty */
	*filled = 0;
	for (size_t i = 0; i < r->n; i++)
		*filled += s->hcells[r->first + i].kind != TAB_NULL;
}

/* The most common of v[0..n) (a tie to the larger); 0 when n is 0. */
static size_t mode_of(size_t *v, size_t n)
{
	size_t best = 0, best_n = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		for (size_t j = 0; j < n; j++)
			k += v[j] == v[i];
		if (k > best_n || (k == best_n && v[i] > best)) {
			best = v[i];
			best_n = k;
		}
	}
	return best;
}

/* Has held row r a non-empty cell that is not text (a number, a date, a
 * boolean)? */
static bool has_typed(const struct sheet_rows *s, const struct sheet_hrow *r)
{
	for (size_t i = 0; i < r->n; i++) {
		enum tab_cell_kind k = s->hcells[r->first + i].kind;
		if (k != TAB_NULL && k != TAB_TEXT)
			return true;
	}
	return false;
}

/* The held row that is the header, by the rule at the top. */
static size_t header_of_held(const struct sheet_rows *s)
{
	size_t edges[SHEET_SNIFF_ROWS], counts[SHEET_SNIFF_ROWS], n = 0, R, W, k;

	for (size_t i = 0; i < s->nhrows && n < SHEET_SNIFF_ROWS; i++) {
		size_t e, f;
		row_shape(s, &s->hrows[i], &e, &f);
		if (f >= 2) {
			edges[n] = e;
			counts[n++] = f;
		}
	}
	if (n == 0)
		return 0;
	R = mode_of(edges, n);
	W = mode_of(counts, n);
	for (k = 0; k < s->nhrows; k++) {
		size_t e, f;
		row_shape(s, &s->hrows[k], &e, &f);
		if (e >= R || f >= W - W / 4)
			break;
	}
	if (k >= s->nhrows)
		return 0;
	/* a row of names narrower than its table (unnamed columns on the
	 * right) over a row with numbers or dates is the header after all */
	while (k > 0 && has_typed(s, &s->hrows[k]) && !has_typed(s, &s->hrows[k - 1])) {
		size_t e, f;
		row_shape(s, &s->hrows[k - 1], &e, &f);
		if (f < 2)
			break;
		k--;
	}
	return k;
}

/* Choose the header among the held rows, then pass them on: 0, 1 when
 * the sink stopped, or a negative enum tab_err. */
static int release_held(struct sheet_rows *s, char *err, size_t errlen)
{
	size_t h = header_of_held(s), widest = 1;
	struct tab_cell *row = NULL;
	int rc = 0;

	s->sniffing = false;
	s->stats->preamble_rows = (long long)h;
	for (size_t i = h; i < s->nhrows; i++)
		widest = s->hrows[i].n > widest ? s->hrows[i].n : widest;
	row = malloc(widest * sizeof *row);
	if (row == NULL) {
		str_errf(err, errlen, "out of memory for a row of %zu cells", widest);
		rc = TAB_ERR_IO;
	}
	for (size_t i = h; i < s->nhrows && rc == 0; i++) {
		const struct sheet_hrow *r = &s->hrows[i];

		for (size_t j = 0; j < r->n; j++) {
			const struct sheet_hcell *c = &s->hcells[r->first + j];
			row[j] = (struct tab_cell){ .kind = c->kind, .len = c->len, .num = c->num,
			                            .text = c->kind == TAB_NULL ? "" : s->htext + c->off };
		}
		rc = take_row(s, r->index, row, r->n, err, errlen);
	}
	free(row);
	free(s->hrows);
	free(s->hcells);
	free(s->htext);
	s->hrows = NULL;
	s->hcells = NULL;
	s->htext = NULL;
	s->nhrows = s->nhcells = s->htext_len = 0;
	s->hrows_cap = s->hcells_cap = s->htext_cap = 0;
	return rc;
}

int sheet_row(struct sheet_rows *s, long long index, const struct tab_cell *cells, size_t n,
              char *err, size_t errlen)
{
	size_t used = n;
	int rc;

	while (used > 0 && cells[used - 1].kind == TAB_NULL)
		used--;
	if (index >= s->seen)
		s->seen = index + 1;
	if (index < s->drop || used == 0)
		return 0;
	if (!s->sniffing)
		return take_row(s, index, cells, used, err, errlen);
	if ((rc = hold_row(s, index, cells, used, err, errlen)) != 0)
		return rc;
	if (s->nhrows >= SHEET_SNIFF_ROWS || s->nhcells >= SHEET_SNIFF_CELLS ||
	    s->htext_len >= SHEET_SNIFF_BYTES)
		return release_held(s, err, errlen);
	return 0;
}

int sheet_rows_end(struct sheet_rows *s, char *err, size_t errlen)
{
	if (s->sniffing) {
		int rc = release_held(s, err, errlen);
		if (rc != 0)
			return rc;
	}
	if (s->have_header)
		return 0;
	if (s->drop > s->seen) {
		if (s->opts->header_row > 0)
			str_errf(err, errlen, "the sheet has only %lld rows to skip (skip_rows %ld, "
			         "header_row %ld)", s->seen, s->opts->skip_rows, s->opts->header_row);
		else
			str_errf(err, errlen, "the sheet has only %lld rows to skip (skip_rows %ld)",
			         s->seen, s->opts->skip_rows);
		return TAB_ERR_OPTION;
	}
	return emit_header(s, 0, NULL, 0, err, errlen);
}

/* ---- number formats --------------------------------------------------- */

enum sheet_datefmt sheet_builtin_kind(long id)
{
	if (id >= 14 && id <= 17)
		return SHEET_FMT_DATE;
	if ((id >= 18 && id <= 21) || id == 45 || id == 47)
		return SHEET_FMT_TIME;
	if (id == 22)
		return SHEET_FMT_DATETIME;
	if (id == 46)
		return SHEET_FMT_ELAPSED;
	return SHEET_FMT_NONE;
}

static int lc(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool prefix_nocase(const char *s, const char *p)
{
	for (; *p; s++, p++)
		if (lc((unsigned char)*s) != *p)
			return false;
	return true;
}

enum sheet_datefmt sheet_format_kind(const char *code)
{
	bool date = false, time = false, month = false, elapsed = false;

	for (const char *p = code; *p && *p != ';'; p++) {
		int c = lc((unsigned char)*p);
		if (c == '"') {
			while (p[1] && p[1] != '"')
				p++;
			if (p[1])
				p++;
		} else if (c == '\\' || c == '_' || c == '*') {
			if (p[1])
				p++;
		} else if (c == '[') {
			const char *q = p + 1;
			int first = lc((unsigned char)*q);
			size_t k = 0;
			while (lc((unsigned char)q[k]) == first && first != 0)
				k++;
			if (k > 0 && q[k] == ']' && (first == 'h' || first == 'm' || first == 's'))
				time = elapsed = true;
			while (p[1] && p[1] != ']')
				p++;
			if (p[1])
				p++;
		} else if (prefix_nocase(p, "am/pm")) {
			time = true;
			p += 4;
		} else if (prefix_nocase(p, "a/p")) {
			time = true;
			p += 2;
		} else if (prefix_nocase(p, "general")) {
			p += 6;
		} else if (c == 'y' || c == 'd') {
			date = true;
		} else if (c == 'h' || c == 's') {
			time = true;
		} else if (c == 'm') {
			month = true;
		}
	}
	if (date && time)
		return SHEET_FMT_DATETIME;
	if (date)
		return SHEET_FMT_DATE;
	if (time)
		return elapsed ? SHEET_FMT_ELAPSED : SHEET_FMT_TIME;
	return month ? SHEET_FMT_DATE : SHEET_FMT_NONE;
}

/* ---- serials ------------------------------------------------------------ */

/* Days since 1970-01-01 of a civil date (H. Hinnant's algorithm). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	y -= m <= 2;
	long long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

#define MS_PER_DAY 86400000LL
/* 9999-12-31 in the 1900 system; Excel shows nothing past it. */
#define SERIAL_MAX 2958465.0

static void hms(char *buf, size_t cap, long long ms)
{
	long long h = ms / 3600000, mi = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;

	if (f)
		snprintf(buf, cap, "%lld:%02lld:%02lld.%03lld", h, mi, s, f);
	else
		snprintf(buf, cap, "%lld:%02lld:%02lld", h, mi, s);
}

int sheet_serial_text(double serial, bool date1904, enum sheet_datefmt kind, char *buf,
                      size_t cap)
{
	long long day, ms, z, y;
	unsigned m, d;

	if (!isfinite(serial) || serial < 0 || serial > SERIAL_MAX)
		return -1;
	/* to the millisecond, as Excel keeps times */
	long long total = llround(serial * (double)MS_PER_DAY);
	day = total / MS_PER_DAY;
	ms = total % MS_PER_DAY;

	if (kind == SHEET_FMT_ELAPSED) {
		hms(buf, cap, total);
		return TAB_TEXT;
	}
	if (kind == SHEET_FMT_TIME) {
		hms(buf, cap, ms);
		return TAB_TEXT;
	}
	if (date1904) {
		z = days_from_civil(1904, 1, 1) + day;
	} else if (day == 60) {
		/* Excel's 1900-02-29, a day that never was (Lotus 1-2-3's leap
		 * year bug, kept for compatibility): read as 1900-02-28. */
		z = days_from_civil(1900, 2, 28);
	} else if (day < 60) {
		z = days_from_civil(1899, 12, 31) + day;      /* serial 1 = 1900-01-01 */
	} else {
		z = days_from_civil(1899, 12, 30) + day;      /* past the phantom day */
	}
	tab_civil_from_days(z, &y, &m, &d);
	if (y > 9999)
		return -1;
	if (kind == SHEET_FMT_DATE) {
		snprintf(buf, cap, "%04lld-%02u-%02u", y, m, d);
		return TAB_DATE;
	}
	long long f = ms % 1000;
	if (f)
		snprintf(buf, cap, "%04lld-%02u-%02u %02lld:%02lld:%02lld.%03lld", y, m, d,
		         ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, f);
	else
		snprintf(buf, cap, "%04lld-%02u-%02u %02lld:%02lld:%02lld", y, m, d,
		         ms / 3600000, ms / 60000 % 60, ms / 1000 % 60);
	return TAB_DATETIME;
}
