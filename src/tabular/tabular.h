/* tabular.h - data files (CSV, TXT, JSON, XLSX, XLS, Parquet) read as rows
 * of cells, and the schema inferred from them.
 *
 * Shared by the storage explorer (inference, loading a linked dataset into a
 * table) and the runner's file_storage connector, so it lives outside both
 * areas.  Readers stream: a file of any size is read in bounded memory and
 * each row goes to a callback as soon as it is complete.  A malformed file
 * is an error with a reason, never a crash. */
#ifndef SLUICE_TABULAR_H
#define SLUICE_TABULAR_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

enum tab_format {
	TAB_CSV,
	TAB_TXT,            /* delimited text: read exactly as CSV */
	TAB_JSON,           /* an array of objects, or JSON lines */
	TAB_XLSX,
	TAB_XLS,
	TAB_PARQUET,        /* schema from the footer; rows page by page */
};

/* The format a file name's extension names (case-insensitive: .csv .txt
 * .tsv .json .jsonl .ndjson .xlsx .xls .parquet); 0, or -1 for another. */
int tab_format_from_name(const char *file_name, enum tab_format *f);
/* The stored name: "csv" "txt" "json" "xlsx" "xls" "parquet". */
const char *tab_format_name(enum tab_format f);
/* The API's file_format: "csv" (also for txt), "json", "excel", "parquet". */
const char *tab_format_api_name(enum tab_format f);
int tab_format_parse(const char *stored_name, enum tab_format *f);

#define TAB_ENCODING_MAX 32
#define TAB_SHEET_MAX 256
#define TAB_MARKERS_MAX 16                /* missing-value markers */
#define TAB_MARKER_MAX 32                 /* bytes of one, NUL included */

/* Parsing options; tab_opts_init gives the defaults (detect everything). */
struct tab_opts {
	char sheet_name[TAB_SHEET_MAX];   /* "" = the first sheet (XLSX, XLS) */
	long skip_rows;                   /* rows dropped before the header row */
	long header_row;                  /* the header's row after skip_rows;
	                                   * -1 = detect (CSV/TXT) or 0 (others) */
	char encoding[TAB_ENCODING_MAX];  /* "" = detect (BOM, UTF-8, else Latin-1) */
	char delimiter;                   /* 0 = detect among , ; \t | (then
	                                   * runs of spaces); ' ' = runs of
	                                   * spaces and tabs */
	long long max_analyze_rows;       /* rows whose values the inference reads */
	/* CSV/TXT missing-value markers: a field whose value (blanks around it
	 * aside) is one of them is null in a column of any type but VARCHAR,
	 * and text in a VARCHAR column.  The empty field is always null.
	 * tab_opts_init gives NA, N/A, NULL and "." */
	char null_markers[TAB_MARKERS_MAX][TAB_MARKER_MAX];
	int n_null_markers;
};
void tab_opts_init(struct tab_opts *o);

enum tab_cell_kind {
	TAB_NULL,           /* empty field, JSON null, empty cell */
	TAB_TEXT,           /* CSV fields are always text; typed formats may be */
	TAB_NUMBER,
	TAB_BOOL,
	TAB_DATE,           /* text "YYYY-MM-DD" */
	TAB_DATETIME,       /* text "YYYY-MM-DD HH:MM:SS[.ffffff]" */
};

/* One cell.  text is always set, UTF-8 and NUL-terminated, valid until the
 * callback returns: the value as written for TAB_TEXT and TAB_NUMBER (a
 * number without source text as "%.17g"), "true"/"false" for TAB_BOOL,
 * "" for TAB_NULL. */
struct tab_cell {
	enum tab_cell_kind kind;
	const char *text;
	size_t len;
	double num;                       /* TAB_NUMBER, TAB_BOOL (0 or 1) */
	bool marker;                      /* TAB_TEXT of CSV/TXT: a missing-value
	                                   * marker of tab_opts */
};

/* Is c a null in a column whose type is text (VARCHAR) or not?  A
 * TAB_NULL cell always is; in a column of another type so are a
 * missing-value marker and NaN, Inf or -Inf (MariaDB stores no such
 * number). */
bool tab_cell_is_null(const struct tab_cell *c, bool text_column);

/* What a reader reports besides the rows. */
struct tab_stats {
	long long rows;                   /* data rows (header and skipped excluded) */
	long long ragged_rows;            /* rows whose cell count differs from the header */
	long long first_ragged_row;       /* 1-based data row, 0 when none */
	char encoding[TAB_ENCODING_MAX];  /* as read: "utf-8", "utf-16le", "latin-1", ... */
	char delimiter;                   /* CSV/TXT: the one used */
	bool has_header;
	char sheet_name[TAB_SHEET_MAX];   /* XLSX/XLS: the sheet read */
	long long header_line;            /* XLSX/XLS: the header's sheet row (1-based) */
	long long preamble_rows;          /* XLSX/XLS: non-blank rows above a detected
	                                   * header, skipped (a title, notes) */
};

/* Callbacks of tab_read.  header comes once, before any row, with the
 * column names (column0, column1, ... when the file has none; see
 * tabular.c for the rules).  row
 * may carry fewer or more cells than the header (a ragged row).  Each
 * returns 0 to go on, 1 to stop early without error, -1 to abort (its
 * reason is the caller's). */
struct tab_sink {
	int (*header)(void *arg, const struct tab_cell *names, size_t n);
	int (*row)(void *arg, const struct tab_cell *cells, size_t n);
	void *arg;
};

enum tab_err {
	TAB_OK = 0,
	TAB_ERR_FORMAT = -1,              /* malformed or unsupported file: reason in err */
	TAB_ERR_IO = -2,                  /* could not read the file: reason in err */
	TAB_ERR_STOP = -3,                /* a callback returned -1 */
	TAB_ERR_OPTION = -4,              /* an option the format does not take, or a
	                                   * sheet that does not exist: reason in err */
};

/* Stream the file at path through sink.  0 or a negative enum tab_err;
 * stats (may be NULL) is filled either way. */
int tab_read(const char *path, enum tab_format f, const struct tab_opts *o,
             const struct tab_sink *sink, struct tab_stats *stats,
             char *err, size_t errlen);

/* ---- schema inference ---------------------------------------------- */

enum infer_type {
	INFER_INTEGER,      /* fits 32 bits */
	INFER_BIGINT,
	INFER_DECIMAL,      /* precision <= 38 digits, scale digits after the point */
	INFER_DOUBLE,
	INFER_BOOLEAN,
	INFER_DATE,
	INFER_TIMESTAMP,
	INFER_VARCHAR,
};

#define INFER_NAME_MAX 256

struct infer_column {
	char name[INFER_NAME_MAX];
	enum infer_type type;
	int precision, scale;             /* INFER_DECIMAL only */
	bool nullable;                    /* a null or empty value was seen */
	size_t max_len;                   /* longest value in bytes (VARCHAR sizing) */
};

struct infer_result {
	struct infer_column *cols;        /* malloc'd, ncols entries */
	size_t ncols;
	long long row_count;              /* exact: every row is counted */
	long long analyzed_rows;          /* rows whose values were classified */
	struct tab_stats stats;
};

/* Infer the schema of the file at path.  0, or a negative enum tab_err
 * with the reason in err.  Free with infer_result_free. */
int infer_file(const char *path, enum tab_format f, const struct tab_opts *o,
               struct infer_result *out, char *err, size_t errlen);
void infer_result_free(struct infer_result *r);       /* NULL is fine */

/* "INTEGER", "BIGINT", "DECIMAL", ... as the API writes them; 0 or -1 for
 * parse of another name. */
const char *infer_type_name(enum infer_type t);
int infer_type_parse(const char *name, enum infer_type *t);

/* The API's schema object: {"columns": [{"name", "inferred_type",
 * "nullable", "position", "precision"?, "scale"?}], "row_count",
 * "analyzed_rows"}.  A new reference, or NULL on allocation failure. */
struct json_object *infer_result_json(const struct infer_result *r);

/* The MariaDB column type for c into buf ("INT", "BIGINT",
 * "DECIMAL(12,2)", "DOUBLE", "BOOLEAN", "DATE", "DATETIME(6)",
 * "VARCHAR(n)" or "TEXT" when long).  0, or -1 when buf is too small. */
int infer_column_sql_type(const struct infer_column *c, char *buf, size_t cap);

/* Incremental inference, for readers of other sources (and infer_file
 * itself): observe cells one column at a time, then finish. */
struct infer_acc;
struct infer_acc *infer_acc_new(void);
void infer_acc_free(struct infer_acc *a);              /* NULL is fine */
int infer_acc_header(struct infer_acc *a, const struct tab_cell *names, size_t n);
int infer_acc_row(struct infer_acc *a, const struct tab_cell *cells, size_t n);
/* Move the result out of a (which may then only be freed). */
int infer_acc_finish(struct infer_acc *a, struct infer_result *out);

#endif
