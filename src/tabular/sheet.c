/* sheet.c - the row rules XLSX and XLS share, and Excel's date serials.
 *
 * Rows are counted as the sheet numbers them (row 1 is index 0, present in
 * the file or not).  skip_rows + header_row of them are dropped; the first
 * non-blank row after that is the header.  A blank row (no non-empty cell)
 * is skipped wherever it is, so blank lines between blocks and the empty,
 * formatted rows at the end of many sheets add no row of NULLs.  A data row
 * shorter than the header is padded with NULLs (an empty cell is a missing
 * value, not a ragged row); one with a non-empty cell right of the header's
 * last column is passed whole and counted as ragged. */
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
}

void sheet_rows_free(struct sheet_rows *s)
{
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
}

static int grow(struct sheet_rows *s, size_t n, char *err, size_t errlen)
{
	if (n <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 16;
	while (cap < n)
		cap *= 2;
	struct tab_cell *b = realloc(s->buf, cap * sizeof *b);
	if (b == NULL) {
		str_errf(err, errlen, "out of memory for a row of %zu cells", n);
		return TAB_ERR_IO;
	}
	s->buf = b;
	s->cap = cap;
	return 0;
}

static int verdict(int r)
{
	if (r < 0)
		return TAB_ERR_STOP;
	return r > 0 ? 1 : 0;
}

static int emit_header(struct sheet_rows *s, const struct tab_cell *cells, size_t n,
                       char *err, size_t errlen)
{
	if (grow(s, n ? n : 1, err, errlen) != 0)
		return TAB_ERR_IO;
	/* empty names are named by tab_read's header (tabular.c) */
	for (size_t i = 0; i < n; i++)
		s->buf[i] = cells[i];
	s->have_header = true;
	s->width = n;
	s->stats->has_header = n > 0;
	return s->sink->header ? verdict(s->sink->header(s->sink->arg, s->buf, n)) : 0;
}

int sheet_row(struct sheet_rows *s, long long index, const struct tab_cell *cells, size_t n,
              char *err, size_t errlen)
{
	size_t used = n, out;

	while (used > 0 && cells[used - 1].kind == TAB_NULL)
		used--;
	if (index >= s->seen)
		s->seen = index + 1;
	if (index < s->drop || used == 0)
		return 0;
	if (!s->have_header)
		return emit_header(s, cells, used, err, errlen);

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

int sheet_rows_end(struct sheet_rows *s, char *err, size_t errlen)
{
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
	return emit_header(s, NULL, 0, err, errlen);
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
