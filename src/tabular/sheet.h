/* sheet.h - rows of a spreadsheet (XLSX, XLS) into a tab_sink: the rules
 * both readers share for skipped rows, the header, blank rows, short and
 * long rows, and dates held as day serials.  Internal to src/tabular. */
#ifndef SLUICE_TABULAR_SHEET_H
#define SLUICE_TABULAR_SHEET_H

#include <stdbool.h>
#include <stddef.h>

#include "tabular/tabular.h"

/* Columns of one sheet row: Excel's own limit (XFD) is 16384. */
#define SHEET_COLS_MAX 16384

/* Non-blank rows read before the header is chosen (sheet.c's rule), and
 * the cells and bytes of text they may hold. */
#define SHEET_SNIFF_ROWS 100
#define SHEET_SNIFF_CELLS 262144
#define SHEET_SNIFF_BYTES (8u << 20)

/* A cell of a row held while the header is chosen: text at off in held. */
struct sheet_hcell {
	enum tab_cell_kind kind;
	size_t off, len;
	double num;
};

struct sheet_hrow {
	long long index;
	size_t first, n;            /* its cells in hcells */
};

struct sheet_rows {
	const struct tab_opts *opts;
	const struct tab_sink *sink;
	struct tab_stats *stats;
	long long drop;             /* sheet rows before this index are dropped */
	long long seen;             /* rows the sheet has: the last index + 1 */
	bool have_header;
	size_t width;               /* header cells */
	struct tab_cell *buf;       /* a row padded to width */
	size_t cap;
	/* detecting the header (no skip_rows, no header_row): the first
	 * non-blank rows, held */
	bool sniffing;
	struct sheet_hrow *hrows;
	size_t nhrows, hrows_cap;
	struct sheet_hcell *hcells;
	size_t nhcells, hcells_cap;
	char *htext;
	size_t htext_len, htext_cap;
};

/* opts, sink, stats as tab_read's (stats not NULL). */
void sheet_rows_init(struct sheet_rows *s, const struct tab_opts *o,
                     const struct tab_sink *sink, struct tab_stats *stats);
/* One sheet row: index 0-based as the sheet numbers rows (missing rows are
 * blank: just do not pass them), cells[0..n) with TAB_NULL for empty cells.
 * 0 go on, 1 the sink stopped, TAB_ERR_STOP (abort) or TAB_ERR_IO (memory;
 * reason in err). */
int sheet_row(struct sheet_rows *s, long long index, const struct tab_cell *cells, size_t n,
              char *err, size_t errlen);
/* After the last row: the header (of no columns) if none came yet;
 * TAB_ERR_OPTION when skip_rows + header_row go past the sheet's last row.
 * 1 when the sink stopped. */
int sheet_rows_end(struct sheet_rows *s, char *err, size_t errlen);
void sheet_rows_free(struct sheet_rows *s);

enum sheet_datefmt {
	SHEET_FMT_NONE,             /* a number */
	SHEET_FMT_DATE,
	SHEET_FMT_DATETIME,
	SHEET_FMT_TIME,             /* a time of day */
	SHEET_FMT_ELAPSED,          /* a duration: [h]:mm:ss */
};

/* A number format code's kind: date/time tokens (y m d h s) outside quoted
 * text, backslash escapes and [..] sections ([h] [m] [s] count as time). */
enum sheet_datefmt sheet_format_kind(const char *code);
/* Excel's built-in number formats 14-22 and 45-47. */
enum sheet_datefmt sheet_builtin_kind(long id);

/* Write serial (days, Excel's 1900 system with its 1900-02-29, or the 1904
 * system) as kind says: "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS[.fff]", the
 * time of day as "H:MM:SS[.fff]", or a duration the same way with all its
 * hours.  Returns the cell
 * kind (TAB_DATE, TAB_DATETIME, TAB_TEXT for a time), or -1 when serial is
 * not a date Excel can show (negative, or past 9999-12-31). */
int sheet_serial_text(double serial, bool date1904, enum sheet_datefmt kind, char *buf,
                      size_t cap);

#endif
