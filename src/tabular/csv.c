/* csv.c - delimited text (CSV, TXT, TSV) read as rows, streaming.
 *
 * Records (RFC 4180, read leniently):
 *   - a record ends at LF or CRLF outside quotes (or at the end of the
 *     file, a CR just before it being part of the line end); a lone CR is
 *     data, except in a file whose first 256 KiB hold CRs and no LF (old
 *     Mac text): there every CR is a line end;
 *   - a field that starts with '"' is quoted: it runs to the next '"' not
 *     doubled, may hold delimiters and newlines, and "" is one quote; text
 *     between the closing quote and the next delimiter is kept as written;
 *     a '"' anywhere else is an ordinary character;
 *   - a quote still open at the end of the file is an error;
 *   - an empty line is no record (it is skipped), except among the
 *     skip_rows/header_row rows, which count every line; so is a comment,
 *     a line starting with '#', when the sample says '#' lines are comments
 *     (sniff_comments);
 *   - a record is at most TAB_ROW_MAX bytes and TAB_COLUMNS_MAX fields.
 * An empty field, quoted or not, is a null cell; every other cell is text,
 * flagged when it is one of the options' missing-value markers.
 *
 * Delimiter (unless given): the one of , ; TAB | that splits the first 100
 * records (after skip_rows) into the same number (>= 2) of fields most
 * often, then into the most fields; a tie goes to the earlier in that
 * list.  With none of them: runs of blanks when they split every sampled
 * record into the same number (>= 2) of fields and some column below the
 * first record is numeric or every field is quoted (space-separated and
 * fixed-width numbers, R's write.table), else
 * ','.  Delimiter ' ' means runs of spaces and tabs, blanks at the line's
 * ends aside.
 *
 * Preamble (neither skip_rows nor header_row given): leading records of
 * fewer fields than the rest of the sample, which all split alike, are
 * skipped (a title, a line of counts); so are notes over a table however
 * many (notes_over_table), which also decide the delimiter when the one
 * chosen splits the sample's end short.
 *
 * Header (header_row -1), DuckDB's rule: the types of the columns are
 * taken from the records below the first (up to 2048 of the sample; of a
 * file of one record, from its own values), and the first record is the
 * header when every column is VARCHAR, when all its fields are empty, or
 * when one of its values does not fit its column's type (an empty value
 * or a missing-value marker fits any; a column of nulls takes no value; a
 * quoted number does not fit a column of bare numbers: it was written as
 * a name).
 * header_row N >= 0 makes record N after skip_rows the header (the records
 * before it are dropped).  Without a header the columns are named by
 * tab_read (column0, column1, ...) after the first record's field count.
 *
 * Reading: the decoded text is parsed in a buffer of about TAB_READ_CHUNK
 * bytes (it grows to hold one record of at most TAB_ROW_MAX); fields are
 * cut in place.  When the row callback answers TAB_ROW_COUNT_ONLY the rest
 * is only counted: a scan that jumps from quote to newline with memchr,
 * keeping the record rules above, so row_count stays exact at a fraction of
 * the cost of splitting fields (runs of blanks go on record by record). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tabular/formats.h"
#include "tabular/internal.h"
#include "util/str.h"

#define SNIFF_RECORDS 100
#define SNIFF_HEADER_RECORDS 2048
#define HEADER_LINES_MAX 3
#define SNIFF_BYTES (256u << 10)

struct field {
	size_t off, len;         /* raw span in buf (quotes included) */
	bool quoted;
};

struct csv {
	struct tab_dec *dec;
	char *buf;
	size_t cap, len, pos;    /* unconsumed text is buf[pos..len) */
	size_t chunk;            /* bytes read at a time */
	long long base;          /* text offset of buf[0] */
	bool eof;
	char delim;
	long long line;          /* 1-based line of buf[pos] */
	struct field *f;
	size_t nf, fcap;
	struct tab_cell *cells;
	size_t ccap;
	const struct tab_opts *o;
	size_t marker_max;       /* longest missing-value marker */
	bool cr;                 /* lines end with CR alone: read as LF */
	bool comments;           /* a line starting with '#' is a comment */
	bool short_header;       /* blank runs: the first record is one field
	                          * short (R's unnamed row names) */
	char *err;
	size_t errlen;
};

static inline bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t';
}

static size_t count_newlines(const char *s, size_t n)
{
	size_t k = 0;

	for (const char *p = s; (p = memchr(p, '\n', (size_t)(s + n - p))) != NULL; p++)
		k++;
	return k;
}

/* Old Mac text: every CR of buf[from..to) becomes the LF it means. */
static void cr_to_lf(char *buf, size_t from, size_t to)
{
	for (char *p = buf + from; (p = memchr(p, '\r', (size_t)(buf + to - p))) != NULL; p++)
		*p = '\n';
}

/* Read more text behind the unconsumed part.  0, or a negative tab_err. */
static int fill(struct csv *c)
{
	long n;

	if (c->eof)
		return 0;
	if (c->pos > 0) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->base += (long long)c->pos;
		c->len -= c->pos;
		c->pos = 0;
	}
	if (c->cap - c->len < c->chunk + 1) {
		size_t want = c->len + c->chunk + 1;
		char *nb;

		if (want > TAB_ROW_MAX + 2 * c->chunk + 1)
			want = TAB_ROW_MAX + 2 * c->chunk + 1;
		if (want > c->cap) {
			nb = realloc(c->buf, want);
			if (nb == NULL) {
				str_errf(c->err, c->errlen, "out of memory");
				return TAB_ERR_IO;
			}
			c->buf = nb;
			c->cap = want;
		}
	}
	n = tab_dec_read(c->dec, c->buf + c->len, c->cap - c->len - 1, c->err, c->errlen);
	if (n < 0)
		return (int)n;
	if (n == 0)
		c->eof = true;
	if (c->cr)
		cr_to_lf(c->buf, c->len, c->len + (size_t)n);
	c->len += (size_t)n;
	return 0;
}

static int add_field(struct csv *c, size_t off, size_t len, bool quoted)
{
	if (c->nf == c->fcap) {
		size_t ncap = c->fcap ? c->fcap * 2 : 64;
		struct field *nf;

		if (c->nf >= TAB_COLUMNS_MAX)
			return -1;
		nf = realloc(c->f, ncap * sizeof *nf);
		if (nf == NULL)
			return -1;
		c->f = nf;
		c->fcap = ncap;
	}
	c->f[c->nf].off = off;
	c->f[c->nf].len = len;
	c->f[c->nf].quoted = quoted;
	c->nf++;
	return 0;
}

/* Where the line end at b[j] ('\n', or '\r' before '\n' or the end of
 * the file) is over: the next record's start.  0 when b[j] is no line end
 * or more must be read to know. */
static size_t line_end_after(const struct csv *c, size_t j)
{
	const char *b = c->buf;

	if (j == c->len)
		return c->eof ? j : 0;
	if (b[j] == '\n')
		return j + 1;
	if (b[j] != '\r')
		return 0;
	if (j + 1 == c->len)
		return c->eof ? j + 1 : 0;
	return b[j + 1] == '\n' ? j + 2 : 0;
}

/* Scan the record at buf[from..] with delimiter d, recording its fields.
 * d ' ' splits at runs of spaces and tabs, blanks at the line's ends
 * aside.  1 with *next after its end, 0 when the text ends before the
 * record does (more must be read; at the end of the file the record ends
 * there), -1 on an error (an open quote at the end of the file, too many
 * fields). */
static int scan_record(struct csv *c, size_t from, char d, size_t *next, size_t *newlines)
{
	const char *b = c->buf;
	size_t i = from, end = c->len;
	bool ws = d == ' ';

	c->nf = 0;
	*newlines = 0;
	if (c->comments && i < end && b[i] == '#') {
		/* a comment: read as a blank line */
		const char *nl = memchr(b + i, '\n', end - i);

		if (nl == NULL && !c->eof)
			return 0;
		if (add_field(c, i, 0, false) != 0)
			return -1;
		*next = nl == NULL ? end : (size_t)(nl - b) + 1;
		return 1;
	}
	if (ws) {
		while (i < end && is_ws(b[i]))
			i++;
		if ((i == end || b[i] == '\r') && !c->eof && i + 1 >= end)
			return 0;
		if ((*next = line_end_after(c, i)) > 0 || i == end) {
			/* blanks only: a blank line */
			if (add_field(c, i, 0, false) != 0)
				return -1;
			*next = i == end ? end : *next;
			return 1;
		}
	}
	for (;;) {
		size_t start = i;
		bool quoted = false;

		if (i < end && b[i] == '"') {
			quoted = true;
			i++;
			for (;;) {
				const char *q = memchr(b + i, '"', end - i);

				if (q == NULL) {
					if (!c->eof)
						return 0;
					str_errf(c->err, c->errlen,
					         "line %lld: a quoted field is not closed before the end of the file",
					         c->line);
					return -1;
				}
				for (const char *p = b + i; (p = memchr(p, '\n', (size_t)(q - p))) != NULL; p++)
					(*newlines)++;
				i = (size_t)(q - b) + 1;
				if (i == end && !c->eof)
					return 0;          /* "" or a closing quote? */
				if (i < end && b[i] == '"') {
					i++;
					continue;
				}
				break;
			}
		}
		if (ws)
			while (i < end && !is_ws(b[i]) && b[i] != '\n')
				i++;
		else
			while (i < end && b[i] != d && b[i] != '\n')
				i++;
		if (i == end && !c->eof)
			return 0;
		if (add_field(c, start, i - start, quoted) != 0) {
			str_errf(c->err, c->errlen, "line %lld: more than %d fields", c->line,
			         TAB_COLUMNS_MAX);
			return -1;
		}
		if (ws && i < end && is_ws(b[i])) {
			/* a run of blanks: before the next field, or the line's end */
			size_t j = i;

			while (j < end && is_ws(b[j]))
				j++;
			if (j + 1 >= end && !c->eof)
				return 0;
			if ((*next = line_end_after(c, j)) > 0 || j == end) {
				*next = j == end ? end : *next;
				break;
			}
			i = j;
			continue;
		}
		if (i == end || b[i] == '\n') {
			struct field *last = &c->f[c->nf - 1];
			/* CRLF: the CR belongs to the line end (so does a CR that
			 * ends the file) */
			if (last->len > 0 && b[i - 1] == '\r' && i - 1 >= start + (quoted ? 1 : 0))
				last->len--;
			*next = i == end ? end : i + 1;
			break;
		}
		i++;                           /* the delimiter */
	}
	return 1;
}

/* The value of a raw field into dst (room for len bytes): quotes removed,
 * "" as one quote.  Its length. */
static size_t unquote(const char *raw, size_t len, char *dst)
{
	size_t i = 1, o = 0;

	for (; i < len; i++) {
		if (raw[i] == '"') {
			if (i + 1 < len && raw[i + 1] == '"') {
				dst[o++] = '"';
				i++;
				continue;
			}
			i++;
			break;                 /* closed: the rest as written */
		}
		dst[o++] = raw[i];
	}
	for (; i < len; i++)
		dst[o++] = raw[i];
	return o;
}

static bool is_blank(const struct csv *c)
{
	return c->nf == 1 && c->f[0].len == 0 && !c->f[0].quoted;
}

/* Next record, with blank lines skipped unless keep_blank.  1 with the
 * fields in c->f (positions in buf valid until the next call), 0 at the
 * end of the text, negative tab_err. */
static int next_record(struct csv *c, bool keep_blank)
{
	for (;;) {
		size_t next = 0, nl = 0;
		int r = scan_record(c, c->pos, c->delim, &next, &nl);

		if (r < 0)
			return TAB_ERR_FORMAT;
		if (r == 0) {
			if (c->len - c->pos > TAB_ROW_MAX) {
				str_errf(c->err, c->errlen,
				         "line %lld: a record longer than %u bytes (a quote not closed?)",
				         c->line, TAB_ROW_MAX);
				return TAB_ERR_FORMAT;
			}
			r = fill(c);
			if (r < 0)
				return r;
			continue;
		}
		if (next - c->pos > TAB_ROW_MAX) {
			str_errf(c->err, c->errlen, "line %lld: a record longer than %u bytes",
			         c->line, TAB_ROW_MAX);
			return TAB_ERR_FORMAT;
		}
		if (c->pos == c->len)
			return 0;              /* nothing left */
		c->pos = next;
		c->line += 1 + (long long)nl;
		if (!keep_blank && is_blank(c))
			continue;
		return 1;
	}
}

/* Is the value s[0..len) one of the options' missing-value markers?
 * Most values are longer than any marker and have no blank to trim. */
static bool is_marker(const struct csv *c, const char *s, size_t len)
{
	if (len == 0 || (len > c->marker_max && !is_ws(s[0]) && !is_ws(s[len - 1])))
		return false;
	return tab_opts_is_marker(c->o, s, len);
}

/* Cut the fields of the record just read in place (NUL-terminated) and
 * make the cells.  0 or -1. */
static int cells_reserve(struct csv *c, size_t n)
{
	if (n > c->ccap) {
		size_t ncap = n < 64 ? 64 : n;
		struct tab_cell *nc = realloc(c->cells, ncap * sizeof *nc);

		if (nc == NULL)
			return -1;
		c->cells = nc;
		c->ccap = ncap;
	}
	return 0;
}

static int make_cells(struct csv *c)
{
	if (cells_reserve(c, c->nf) != 0)
		return -1;
	for (size_t i = 0; i < c->nf; i++) {
		struct field *f = &c->f[i];
		char *p = c->buf + f->off;
		size_t len = f->len;

		if (f->quoted)
			len = unquote(p, len, p);
		/* the byte after a field (a delimiter, CR, LF, or the spare byte
		 * at the end of the buffer) is no longer needed */
		p[len] = '\0';
		c->cells[i].kind = len == 0 ? TAB_NULL : TAB_TEXT;
		c->cells[i].text = p;
		c->cells[i].len = len;
		c->cells[i].num = 0;
		c->cells[i].marker = is_marker(c, p, len);
	}
	return 0;
}

/* ---- sniffing (non-destructive) ------------------------------------------- */

/* Field counts of the first records with delimiter d, from buf[pos].
 * *all_quoted (unless NULL): every field of them is quoted. */
static size_t sample_counts(struct csv *c, char d, size_t *counts, size_t max, bool *all_quoted)
{
	size_t at = c->pos, n = 0;
	char save = c->delim;
	bool quoted = true;

	c->delim = d;
	while (n < max && at < c->len) {
		size_t next = 0, nl = 0;
		int r = scan_record(c, at, d, &next, &nl);

		if (r <= 0)
			break;                 /* the sample's last record is cut */
		at = next;
		if (is_blank(c))
			continue;
		counts[n++] = c->nf;
		for (size_t i = 0; i < c->nf && quoted; i++)
			quoted = c->f[i].quoted;
	}
	if (all_quoted != NULL)
		*all_quoted = quoted && n > 0;
	c->delim = save;
	return n;
}

/* The field count most of counts[0..n) have (the larger on a tie), and
 * how many have it. */
static size_t counts_mode(const size_t *counts, size_t n, size_t *mode_n)
{
	size_t mode = 0;

	*mode_n = 0;
	for (size_t i = 0; i < n; i++) {
		size_t same = 0;
		for (size_t j = 0; j < n; j++)
			same += counts[j] == counts[i];
		if (same > *mode_n || (same == *mode_n && counts[i] > mode)) {
			mode = counts[i];
			*mode_n = same;
		}
	}
	return mode;
}

/* The value of field f of the record just scanned, unquoted into *tmp
 * (grown as needed) when quoted.  NULL when out of memory. */
static const char *field_value(const struct csv *c, const struct field *f, char **tmp,
                               size_t *tmpcap, size_t *len)
{
	const char *v = c->buf + f->off;

	*len = f->len;
	if (!f->quoted)
		return v;
	if (f->len + 1 > *tmpcap) {
		char *t = realloc(*tmp, f->len + 1);

		if (t == NULL)
			return NULL;
		*tmp = t;
		*tmpcap = f->len + 1;
	}
	*len = unquote(v, f->len, *tmp);
	return *tmp;
}

/* The types of the columns of the records from buf[at], up to max of
 * them, into a new accumulator (NULL when out of memory); *n counts them.
 * quoted (NULL, or nq flags): which of the first nq columns hold a quoted
 * value. */
static struct infer_acc *sample_types(struct csv *c, size_t at, size_t max, size_t *n,
                                      bool *quoted, size_t nq)
{
	struct infer_acc *acc = infer_acc_new();
	char *vals = NULL;
	size_t vcap = 0;

	*n = 0;
	if (acc == NULL)
		return NULL;
	while (*n < max && at < c->len) {
		size_t next = 0, nl = 0, need, rec = at;
		int r = scan_record(c, at, c->delim, &next, &nl);

		if (r <= 0)
			break;                 /* the sample's last record is cut */
		at = next;
		if (is_blank(c))
			continue;
		need = next - rec;         /* room for every value, unquoted */
		if (c->nf > c->ccap) {
			struct tab_cell *nc = realloc(c->cells, c->nf * sizeof *nc);

			if (nc == NULL)
				goto fail;
			c->cells = nc;
			c->ccap = c->nf;
		}
		if (need + 1 > vcap) {
			char *nv = realloc(vals, need + 1);

			if (nv == NULL)
				goto fail;
			vals = nv;
			vcap = need + 1;
		}
		for (size_t i = 0, o = 0; i < c->nf; i++) {
			const struct field *f = &c->f[i];
			char *dst = vals + o;
			size_t len = f->quoted ? unquote(c->buf + f->off, f->len, dst) : f->len;

			if (!f->quoted)
				memcpy(dst, c->buf + f->off, len);
			c->cells[i] = (struct tab_cell){ .kind = len ? TAB_TEXT : TAB_NULL, .text = dst,
			                                 .len = len, .marker = is_marker(c, dst, len) };
			if (f->quoted && len > 0 && i < nq)
				quoted[i] = true;
			o += len;
		}
		if (infer_acc_row(acc, c->cells, c->nf) != 0)
			goto fail;
		(*n)++;
	}
	free(vals);
	return acc;
fail:
	free(vals);
	infer_acc_free(acc);
	return NULL;
}

/* Space-separated text (R's write.table, fixed-width numbers): every
 * record of the sample splits at runs of blanks into the same number (>= 2)
 * of fields (the first may have one fewer: R's names over rows that start
 * with a row name), and some column below the first record holds only
 * numbers, or every field is quoted. */
static bool sniff_blank_runs(struct csv *c)
{
	size_t counts[SNIFF_RECORDS], n, rows = 0;
	struct infer_acc *acc;
	bool numeric = false, quoted;
	size_t next = 0, nl = 0;

	n = sample_counts(c, ' ', counts, SNIFF_RECORDS, &quoted);
	if (n < 2 || counts[1] < 2)
		return false;
	for (size_t i = 2; i < n; i++)
		if (counts[i] != counts[1])
			return false;
	/* R's write.table names no row-names column: one name fewer */
	if (counts[0] != counts[1] && counts[0] + 1 != counts[1])
		return false;
	c->short_header = counts[0] + 1 == counts[1];
	if (quoted)
		return true;           /* R's write.table quotes every text */
	c->delim = ' ';
	if (scan_record(c, c->pos, ' ', &next, &nl) <= 0 ||
	    (acc = sample_types(c, next, SNIFF_RECORDS, &rows, NULL, 0)) == NULL) {
		c->delim = 0;
		return false;
	}
	for (size_t i = 0; i < counts[1]; i++) {
		int t = infer_acc_type(acc, i);
		if (infer_is_number(t))
			numeric = true;
	}
	infer_acc_free(acc);
	c->delim = 0;
	return numeric;
}

/* Comments (as DuckDB's sniffer takes them): the sample has lines that
 * start with '#', and most of them (60%) split into another number of
 * fields with delimiter d than the other lines most often do. */
static bool sniff_comments(struct csv *c, char d)
{
	size_t at = c->pos, n = 0, ncomm = 0, odd = 0, mode = 0, mode_n = 0;
	size_t counts[SNIFF_RECORDS];
	bool comm[SNIFF_RECORDS];
	bool save = c->comments;

	c->comments = false;
	while (n < SNIFF_RECORDS && at < c->len) {
		size_t next = 0, nl = 0;
		bool is_comm = c->buf[at] == '#';

		if (scan_record(c, at, d, &next, &nl) <= 0)
			break;
		at = next;
		if (is_blank(c))
			continue;
		comm[n] = is_comm;
		counts[n++] = c->nf;
		ncomm += is_comm;
	}
	c->comments = save;
	if (ncomm == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t same = 0;

		if (comm[i])
			continue;
		for (size_t j = 0; j < n; j++)
			same += !comm[j] && counts[j] == counts[i];
		if (same > mode_n) {
			mode = counts[i];
			mode_n = same;
		}
	}
	for (size_t i = 0; i < n; i++)
		odd += comm[i] && counts[i] != mode;
	return odd * 10 >= ncomm * 6;
}

/* A table under notes: counts[0..n) end with a block of at least 3
 * records alike in at least 2 fields, every record above it has fewer,
 * and most of those (more than half) are a single field (prose notes).
 * *k: how many records are above the block.  FreeCAD's LineGroup.csv has
 * 30 lines of notes over a table of 8. */
static bool notes_over_table(const size_t *counts, size_t n, size_t *k)
{
	size_t i, single = 0;

	if (n < 4 || counts[n - 1] < 2)
		return false;
	for (i = n - 1; i > 0 && counts[i - 1] == counts[n - 1]; i--)
		;
	if (i == 0 || n - i < 3)
		return false;
	for (size_t j = 0; j < i; j++) {
		if (counts[j] >= counts[n - 1])
			return false;
		single += counts[j] == 1;
	}
	*k = i;
	return single * 2 > i;
}

static char sniff_delimiter(struct csv *c)
{
	static const char cands[] = { ',', ';', '\t', '|' };
	size_t counts[SNIFF_RECORDS];
	size_t best_consistent = 0, best_fields = 0, best_last = 0, above;
	char best = ',';
	char err_save[1] = { 0 };
	char *err = c->err;
	size_t errlen = c->errlen;

	/* errors here only end the sample */
	c->err = err_save;
	c->errlen = 0;
	for (size_t k = 0; k < sizeof cands; k++) {
		size_t n = sample_counts(c, cands[k], counts, SNIFF_RECORDS, NULL), mode_n;
		size_t mode = counts_mode(counts, n, &mode_n);

		if (mode < 2)
			continue;
		if (mode_n > best_consistent || (mode_n == best_consistent && mode > best_fields)) {
			best_consistent = mode_n;
			best_fields = mode;
			best_last = counts[n - 1];
			best = cands[k];
		}
	}
	/* the choice splits the sample's end short: maybe a table under notes
	 * that another candidate splits alike */
	for (size_t i = 0; best_consistent > 0 && best_last < best_fields && i < sizeof cands; i++) {
		size_t n = sample_counts(c, cands[i], counts, SNIFF_RECORDS, NULL);

		if (cands[i] != best && notes_over_table(counts, n, &above)) {
			best = cands[i];
			break;
		}
	}
	if (best_consistent == 0 && sniff_blank_runs(c))
		best = ' ';
	c->err = err;
	c->errlen = errlen;
	return best;
}

/* A preamble (a title, a line of counts before the table: DuckDB's
 * sniffer calls them dirty lines) is the leading records that split into
 * fewer fields than the rest of the sample, which all split alike: skip
 * them.  0 or a negative tab_err. */
static int skip_preamble(struct csv *c)
{
	size_t counts[SNIFF_RECORDS], mode_n, k = 0;
	size_t n = sample_counts(c, c->delim, counts, SNIFF_RECORDS, NULL);
	size_t mode = counts_mode(counts, n, &mode_n);

	if (c->delim == ' ' && c->short_header)
		return 0;
	if (!notes_over_table(counts, n, &k)) {
		while (k < n && counts[k] < mode)
			k++;
		if (mode < 2 || k == 0 || k * 2 >= n)
			return 0;
		for (size_t i = k; i < n; i++)
			if (counts[i] != mode)
				return 0;      /* ragged throughout: no table to find */
	}
	while (k-- > 0) {
		int r = next_record(c, false);
		if (r < 0)
			return r;
	}
	return 0;
}

enum header_verdict {
	HEADER_NO,               /* its values fit the types below: a row */
	HEADER_TEXT,             /* every column text, or all its fields empty */
	HEADER_TYPES,            /* a value that does not fit the type below */
};

/* What the first non-blank record from buf[at] is (the rule at the top);
 * *at moves to it and *next past it.  *names: it is a line of names for
 * sure, none of its values fitting its typed column (a column of numbers,
 * dates, ... below, 2 rows at least).  The types are those of the
 * records from buf[below], or right after the record when below is 0.
 * 0, or TAB_ERR_IO; *v HEADER_NO when there is no record. */
static int header_verdict(struct csv *c, size_t *at, size_t *next, size_t below,
                          enum header_verdict *v, bool *names)
{
	size_t nl = 0, rows = 0, nfirst, tmpcap = 0, typed = 0, misfits = 0;
	struct infer_acc *acc = NULL;
	struct field *first = NULL;
	bool *quoted_below = NULL;     /* a column's values below: some quoted */
	char *tmp = NULL;
	bool all_text = true, all_null = true, consistent = true;
	int rc = 0;

	*v = HEADER_NO;
	*names = false;
	for (;; *at = *next) {
		if (*at >= c->len || scan_record(c, *at, c->delim, next, &nl) <= 0)
			return 0;              /* errors surface when read for real */
		if (!is_blank(c))
			break;
	}
	nfirst = c->nf;
	first = malloc(nfirst * sizeof *first);
	if (first == NULL)
		return TAB_ERR_IO;
	memcpy(first, c->f, nfirst * sizeof *first);
	quoted_below = calloc(nfirst, sizeof *quoted_below);
	acc = quoted_below == NULL ? NULL
	      : sample_types(c, below ? below : *next, SNIFF_HEADER_RECORDS, &rows, quoted_below,
	                     nfirst);
	if (acc == NULL) {
		rc = TAB_ERR_IO;
		goto out;
	}
	for (size_t i = 0; i < nfirst; i++) {
		size_t len;
		const char *val = field_value(c, &first[i], &tmp, &tmpcap, &len);
		int t, id, sc;

		if (val == NULL) {
			rc = TAB_ERR_IO;
			goto out;
		}
		/* a file of one record: the types of its own values */
		t = rows > 0 ? infer_acc_type(acc, i)
		    : len > 0 ? (int)infer_classify_text(val, len, &id, &sc) : -1;
		if (len > 0)
			all_null = false;
		if (t == INFER_VARCHAR)
			continue;
		all_text = false;
		if (len == 0 || is_marker(c, val, len))
			continue;              /* a null fits any type */
		typed += t >= 0;
		/* a quoted number over bare ones was written as text: a name */
		if (t < 0 || !infer_type_holds((enum infer_type)t, val, len) ||
		    (first[i].quoted && !quoted_below[i] && infer_is_number(t))) {
			consistent = false;
			misfits += t >= 0;
		}
	}
	*v = all_text || all_null ? HEADER_TEXT : consistent ? HEADER_NO : HEADER_TYPES;
	*names = rows >= 2 && typed > 0 && misfits == typed;
out:
	free(first);
	free(quoted_below);
	free(tmp);
	infer_acc_free(acc);
	return rc;
}

/* Is the record at buf[pos] a header?  See the rule at the top.  A header
 * of several lines: when the next line is a line of names for sure (none
 * of its values fits its typed column below), the line before it is not
 * the header but a line over it, skipped (at most HEADER_LINES_MAX - 1 of
 * them), if it follows comments (geoknife's "# variable", feature names,
 * then statistics' names: DuckDB reads them so) or fits the types below as
 * data does (scikit-learn's line of counts over its names).  A line of
 * names over a line of units keeps its names. */
static int sniff_header(struct csv *c, bool *header, bool skip_extra)
{
	enum header_verdict v, v1, v2;
	size_t at = c->pos, next = 0, at1, next1, at2, next2 = 0;
	bool names;
	int rc = header_verdict(c, &at, &next, 0, &v, &names);

	for (int k = 1; rc == 0 && skip_extra && v != HEADER_NO && k < HEADER_LINES_MAX; k++) {
		bool commented = c->comments && at != c->pos;

		at2 = next;
		if ((rc = header_verdict(c, &at2, &next2, 0, &v2, &names)) != 0 || !names)
			break;
		at1 = at;
		if (!commented && ((rc = header_verdict(c, &at1, &next1, next2, &v1, &names)) != 0 ||
		                   v1 != HEADER_NO))
			break;
		/* the record at `at` is a line over the header: skip it */
		c->line += (long long)count_newlines(c->buf + c->pos, at2 - c->pos);
		c->pos = at2;
		at = at2;
		next = next2;
	}
	*header = v != HEADER_NO;
	return rc;
}

/* Before the delimiter is known, a row is skipped with quotes opening at a
 * line start or after any candidate (or the given) delimiter. */
static int skip_lines(struct csv *c, long long n, char given)
{
	for (long long k = 0; k < n; k++) {
		size_t i = c->pos;
		bool in_quote = false;

		for (;;) {
			if (i == c->len) {
				if (c->eof) {
					if (c->pos == c->len) {
						str_errf(c->err, c->errlen,
						         "the file has only %lld rows to skip (skip_rows %lld)",
						         k, n);
						return TAB_ERR_OPTION;
					}
					break;
				}
				if (i - c->pos > TAB_ROW_MAX) {
					str_errf(c->err, c->errlen,
					         "line %lld: a record longer than %u bytes", c->line,
					         TAB_ROW_MAX);
					return TAB_ERR_FORMAT;
				}
				size_t rel = i - c->pos;
				int r = fill(c);
				if (r < 0)
					return r;
				i = c->pos + rel;
				continue;
			}
			char ch = c->buf[i];
			if (in_quote) {
				if (ch == '"') {
					if (i + 1 == c->len && !c->eof) {
						size_t rel = i - c->pos;
						int r = fill(c);
						if (r < 0)
							return r;
						i = c->pos + rel;
						continue;
					}
					if (i + 1 < c->len && c->buf[i + 1] == '"')
						i++;
					else
						in_quote = false;
				} else if (ch == '\n') {
					c->line++;
				}
			} else if (ch == '"') {
				char prev = i == c->pos ? '\n' : c->buf[i - 1];
				if (prev == '\n' ||
				    (given ? prev == given
				           : (prev == ',' || prev == ';' || prev == '\t' || prev == '|')))
					in_quote = true;
			} else if (ch == '\n') {
				i++;
				break;
			}
			i++;
		}
		c->pos = i;
		c->line++;
	}
	return 0;
}

/* ---- counting the rest --------------------------------------------------- */

/* Count the records from buf[pos] to the end of the file without cutting
 * fields.  Same record rules as scan_record. */
static int count_rest(struct csv *c, long long *rows)
{
	const char d = c->delim;
	bool in_quote = false, close_pending = false, in_comment = false;
	/* text offset of the current record's start (outside quotes every
	 * newline ends a record, so it is also the current line's) */
	long long rec = c->base + (long long)c->pos;
	long long rec_line = c->line;      /* the line it starts on */
	char prev = '\n';                  /* byte before buf[pos] */
	int r;

	for (;;) {
		const char *b = c->buf, *p = b + c->pos, *end = b + c->len;
		const char *nq = NULL;         /* next quote at or after p, or end */

		if (close_pending && p < end) {
			close_pending = false;
			if (*p == '"')
				p++;           /* "" inside quotes */
			else
				in_quote = false;
		}
		while (p < end) {
			if (in_comment) {
				const char *nl = memchr(p, '\n', (size_t)(end - p));

				if (nl == NULL) {
					p = end;
					break;
				}
				in_comment = false;
				c->line++;
				rec = c->base + (nl - b) + 1;
				rec_line = c->line;
				p = nl + 1;
				continue;
			}
			if (c->comments && *p == '#' && c->base + (p - b) == rec) {
				in_comment = true;
				continue;
			}
			if (in_quote) {
				const char *q = memchr(p, '"', (size_t)(end - p));
				const char *s = p;

				if (q == NULL)
					q = end;
				while ((s = memchr(s, '\n', (size_t)(q - s))) != NULL) {
					c->line++;
					s++;
				}
				if (q == end) {
					p = end;
					break;
				}
				p = q + 1;
				if (p == end) {
					close_pending = true;
					break;
				}
				if (*p == '"')
					p++;
				else
					in_quote = false;
				continue;
			}
			if (nq == NULL || nq < p) {
				nq = memchr(p, '"', (size_t)(end - p));
				if (nq == NULL)
					nq = end;
			}
			const char *nl = memchr(p, '\n', (size_t)(nq - p));
			if (nl != NULL) {
				long long at = c->base + (nl - b);
				char before = nl > b ? nl[-1] : prev;
				bool blank = at == rec || (at == rec + 1 && before == '\r');

				if (!blank)
					(*rows)++;
				if (at - rec > TAB_ROW_MAX) {
					str_errf(c->err, c->errlen, "line %lld: a record longer than %u bytes",
					         rec_line, TAB_ROW_MAX);
					return TAB_ERR_FORMAT;
				}
				c->line++;
				rec = at + 1;
				rec_line = c->line;
				p = nl + 1;
				continue;
			}
			if (nq == end) {
				p = end;
				break;
			}
			/* a quote: it opens a quoted field at a field's start */
			{
				char before = nq > b ? nq[-1] : prev;

				if (c->base + (nq - b) == rec || before == d)
					in_quote = true;
			}
			p = nq + 1;
		}
		if (c->len > 0)
			prev = c->buf[c->len - 1];
		c->pos = c->len;
		if (c->eof)
			break;
		r = fill(c);
		if (r < 0)
			return r;
	}
	if (in_quote && !close_pending) {
		str_errf(c->err, c->errlen,
		         "line %lld: a quoted field is not closed before the end of the file",
		         rec_line);
		return TAB_ERR_FORMAT;
	}
	{
		long long at = c->base + (long long)c->len;
		bool blank = at == rec || (at == rec + 1 && prev == '\r') || in_comment;

		if (!blank)
			(*rows)++;
		if (at - rec > TAB_ROW_MAX) {
			str_errf(c->err, c->errlen, "line %lld: a record longer than %u bytes",
			         rec_line, TAB_ROW_MAX);
			return TAB_ERR_FORMAT;
		}
	}
	return 0;
}

/* ---- the reader ---------------------------------------------------------- */

int csv_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
             struct tab_stats *stats, char *err, size_t errlen)
{
	struct csv c = { .err = err, .errlen = errlen, .line = 1 };
	bool header = false;
	long long skip;
	int rc, r;

	rc = tab_dec_open(&c.dec, path, o->encoding, err, errlen);
	if (rc != 0)
		return rc;
	c.chunk = tab_dec_chunk(c.dec);
	do {
		rc = fill(&c);
		if (rc < 0)
			goto out;
	} while (!c.eof && c.len < SNIFF_BYTES);
	str_copy(stats->encoding, sizeof stats->encoding, tab_dec_encoding(c.dec));
	if (c.len == 0) {
		str_errf(err, errlen, "file is empty");
		rc = TAB_ERR_FORMAT;
		goto out;
	}
	/* no LF in the sample, but CRs: lines end with CR (old Mac text) */
	if (memchr(c.buf, '\n', c.len) == NULL && memchr(c.buf, '\r', c.len) != NULL) {
		c.cr = true;
		cr_to_lf(c.buf, 0, c.len);
	}
	c.o = o;
	for (int i = 0; i < o->n_null_markers; i++)
		if (strlen(o->null_markers[i]) > c.marker_max)
			c.marker_max = strlen(o->null_markers[i]);

	skip = o->skip_rows + (o->header_row > 0 ? o->header_row : 0);
	rc = skip_lines(&c, skip, o->delimiter);
	if (rc < 0)
		goto out;
	/* the sniffers look at what is buffered: make it a fair sample */
	while (!c.eof && c.len - c.pos < SNIFF_BYTES) {
		rc = fill(&c);
		if (rc < 0)
			goto out;
	}
	/* blank lines before the first record are no record */
	while (c.pos < c.len && (c.buf[c.pos] == '\n' ||
	                         (c.buf[c.pos] == '\r' && c.pos + 1 < c.len &&
	                          c.buf[c.pos + 1] == '\n'))) {
		c.pos += c.buf[c.pos] == '\r' ? 2 : 1;
		c.line++;
	}
	if (c.pos == c.len) {
		str_errf(err, errlen, skip > 0 ? "no rows after the skipped rows"
		                               : "the file has only empty lines");
		rc = TAB_ERR_FORMAT;
		goto out;
	}
	/* '#' lines are taken as comments to find the delimiter, then kept as
	 * comments when they look like comments with it */
	c.comments = true;
	c.delim = o->delimiter ? o->delimiter : sniff_delimiter(&c);
	c.comments = sniff_comments(&c, c.delim);
	if (!c.comments && !o->delimiter)
		c.delim = sniff_delimiter(&c);
	stats->delimiter = c.delim;
	str_copy(stats->encoding, sizeof stats->encoding, tab_dec_encoding(c.dec));

	if (o->header_row == -1 && o->skip_rows == 0 && (rc = skip_preamble(&c)) < 0)
		goto out;
	if (o->header_row >= 0) {
		header = true;
	} else {
		rc = sniff_header(&c, &header, o->skip_rows == 0);
		if (rc < 0)
			goto out;
	}
	stats->has_header = header;

	r = next_record(&c, false);
	if (r < 0) {
		rc = r;
		goto out;
	}
	if (r == 0) {
		str_errf(err, errlen, "the file has only empty lines");
		rc = TAB_ERR_FORMAT;
		goto out;
	}
	size_t ncols = c.nf;
	bool have_row = false, counting = false;
	if (header) {
		/* a header one name short: the first column (row names) has none */
		size_t lead = c.delim == ' ' && c.short_header ? 1 : 0;

		if (make_cells(&c) != 0 || cells_reserve(&c, c.nf + lead) != 0) {
			str_errf(err, errlen, "out of memory");
			rc = TAB_ERR_IO;
			goto out;
		}
		if (lead) {
			memmove(c.cells + 1, c.cells, c.nf * sizeof *c.cells);
			c.cells[0] = (struct tab_cell){ .kind = TAB_NULL, .text = "" };
		}
		ncols = c.nf + lead;
		r = sink->header(sink->arg, c.cells, ncols);
	} else {
		/* the first record is a row: tab_read names its fields */
		struct tab_cell *none = calloc(ncols, sizeof *none);
		if (none == NULL) {
			str_errf(err, errlen, "out of memory");
			rc = TAB_ERR_IO;
			goto out;
		}
		for (size_t i = 0; i < ncols; i++) {
			none[i].kind = TAB_NULL;
			none[i].text = "";
		}
		r = sink->header(sink->arg, none, ncols);
		free(none);
		have_row = true;
	}
	if (r < 0) {
		rc = TAB_ERR_STOP;
		goto out;
	}
	if (r == 1)
		goto out;

	for (;;) {
		if (!have_row) {
			r = next_record(&c, false);
			if (r < 0) {
				rc = r;
				goto out;
			}
			if (r == 0)
				break;
		}
		have_row = false;
		stats->rows++;
		if (counting)
			continue;
		if (c.nf != ncols) {
			stats->ragged_rows++;
			if (stats->first_ragged_row == 0)
				stats->first_ragged_row = stats->rows;
		}
		if (make_cells(&c) != 0) {
			str_errf(err, errlen, "out of memory");
			rc = TAB_ERR_IO;
			goto out;
		}
		r = sink->row(sink->arg, c.cells, c.nf);
		if (r < 0) {
			rc = TAB_ERR_STOP;
			goto out;
		}
		if (r == 1)
			break;
		if (r == TAB_ROW_COUNT_ONLY) {
			/* runs of blanks are not the fast scan's kind of field:
			 * such (rare, small) files go on record by record */
			if (c.delim == ' ') {
				counting = true;
				continue;
			}
			rc = count_rest(&c, &stats->rows);
			break;
		}
	}
out:
	/* detection may have decided late (at the first non-ASCII byte) */
	if (c.dec != NULL)
		str_copy(stats->encoding, sizeof stats->encoding, tab_dec_encoding(c.dec));
	tab_dec_close(c.dec);
	free(c.buf);
	free(c.f);
	free(c.cells);
	return rc;
}
