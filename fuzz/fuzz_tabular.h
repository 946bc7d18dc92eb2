/* fuzz_tabular.h - what the tabular fuzz targets share: the input as a
 * file (the readers take a path), and a sink that checks every cell. */
#ifndef SLUICE_FUZZ_TABULAR_H
#define SLUICE_FUZZ_TABULAR_H

#include <stdint.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tabular/internal.h"
#include "tabular/tabular.h"

/* The bytes as an in-memory file; path receives a name open(2) takes.
 * The descriptor, or -1. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t cap)
{
	int fd = memfd_create("sluice-fuzz", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

/* The spreadsheet options from one byte: the sheet (one of four names),
 * skip_rows 0 to 3, header_row 0 or 1. */
static inline void fuzz_sheet_opts(struct tab_opts *o, uint8_t b, const char *const sheets[4])
{
	tab_opts_init(o);
	strcpy(o->sheet_name, sheets[b & 3]);
	o->skip_rows = (b >> 2) & 3;
	o->header_row = (b >> 4) & 1;
}

struct fuzz_seen {
	long long rows;
	size_t ncols;
	bool header;
};

/* Every cell: text NUL-terminated at len, valid UTF-8, a known kind. */
static inline void fuzz_check_cells(const struct tab_cell *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (c[i].text == NULL || strlen(c[i].text) != c[i].len ||
		    tab_utf8_invalid_at((const unsigned char *)c[i].text, c[i].len) != c[i].len ||
		    (unsigned)c[i].kind > TAB_DATETIME)
			abort();
	}
}

static inline int fuzz_header(void *arg, const struct tab_cell *names, size_t n)
{
	struct fuzz_seen *s = arg;

	if (s->header || s->rows != 0)
		abort();                       /* once, before any row */
	s->header = true;
	s->ncols = n;
	fuzz_check_cells(names, n);
	for (size_t i = 0; i < n; i++)
		if (names[i].len == 0 || names[i].len >= INFER_NAME_MAX)
			abort();               /* tab_read names every column */
	return 0;
}

static inline int fuzz_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct fuzz_seen *s = arg;

	if (!s->header)
		abort();
	s->rows++;
	fuzz_check_cells(cells, n);
	return 0;
}

/* Read the file whole, infer it with 1 analysed row (the counting path),
 * and insist both agree on success and on the row count. */
static inline void fuzz_read_and_infer(const char *path, enum tab_format f,
                                       struct tab_opts *o)
{
	struct fuzz_seen seen = { 0 };
	struct tab_sink sink = { fuzz_header, fuzz_row, &seen };
	struct tab_stats st;
	struct infer_result r;
	char err[512];
	int rc1, rc2;

	rc1 = tab_read(path, f, o, &sink, &st, err, sizeof err);
	if (rc1 == 0 && st.rows != seen.rows)
		abort();
	if (rc1 != 0 && err[0] == '\0')
		abort();                       /* every failure has a reason */
	o->max_analyze_rows = 1;
	rc2 = infer_file(path, f, o, &r, err, sizeof err);
	if (rc2 == 0) {
		struct json_object *j = infer_result_json(&r);
		if (j == NULL)
			abort();
		json_object_put(j);
		if (rc1 == 0 && (r.row_count != seen.rows || r.ncols != seen.ncols))
			abort();
		infer_result_free(&r);
	}
	if ((rc1 == 0) != (rc2 == 0))
		abort();
}

#endif
