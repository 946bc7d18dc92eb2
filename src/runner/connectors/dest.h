/* dest.h - what the singer and file_storage connectors share about the
 * destination tables they write: column types from a fixed vocabulary,
 * creating a table or giving an existing one the columns it lacks, a row
 * writer (plain batches, or upserts on a primary key), and source values
 * turned into text MariaDB accepts for the column's type.
 *
 * Every table and column name passes wh_ident_ok and is written by
 * wh_quote; types come from enum dest_kind, never from input text. */
#ifndef SLUICE_DEST_H
#define SLUICE_DEST_H

#include <stdbool.h>
#include <stddef.h>

#include "db/warehouse.h"
#include "db/wh_evolve.h"
#include "util/strbuf.h"

struct wh;

/* A name that wh_ident_ok accepts fits here (64 characters of UTF-8). */
#define DEST_NAME_MAX (WH_IDENT_MAX * 4 + 1)
/* Longest VARCHAR of a text primary-key column (utf8mb4: 4 bytes each). */
#define DEST_KEY_VARCHAR_MAX 255

enum dest_kind {
	DEST_BIGINT,
	DEST_DOUBLE,
	DEST_DECIMAL,       /* DECIMAL(38, scale) */
	DEST_BOOL,
	DEST_DATE,
	DEST_DATETIME,      /* DATETIME(6), UTC */
	DEST_TEXT,          /* LONGTEXT, or VARCHAR(varchar_len) when > 0 (keys) */
	DEST_JSON,          /* LONGTEXT holding JSON text */
};

struct dest_col {
	char name[DEST_NAME_MAX];
	enum dest_kind kind;
	int scale;          /* DEST_DECIMAL */
	int varchar_len;    /* DEST_TEXT: 0 = LONGTEXT */
	bool nullable;
};

/* The column's SQL type into buf ("BIGINT", "DECIMAL(38,2)", ...). */
void dest_sql_type(const struct dest_col *c, char *buf, size_t cap);

/* ---- SQL text (util/strbuf.h) ------------------------------------------ */

/* A quoted identifier; marks the buffer bad (oom) when name is not valid. */
void dest_ident(struct strbuf *b, const char *name);

/* ---- tables ----------------------------------------------------------- */

/* How an existing table follows its source's types (db/wh_evolve.h):
 * wh_table_evolve's flags, and the function told of each widened or
 * absent column (with arg). */
struct dest_evolve {
	int flags;
	wh_evolve_fn fn;
	void *arg;
};

/* Make schema.table hold cols: CREATE SCHEMA IF NOT EXISTS, then CREATE
 * TABLE IF NOT EXISTS with the columns (PRIMARY KEY over keys when nkeys >
 * 0, an index over index_col when not NULL), then, for a table that already
 * existed, wh_table_evolve of the columns (ev, which may be NULL: widened
 * where cols' types are wider; an incompatible type fails before any DDL)
 * and ADD COLUMN IF NOT EXISTS of each column (added columns are always
 * nullable).  DDL: the caller has no transaction open.  1 created, 0
 * already there, -1 error in err. */
int dest_table_ensure(struct wh *w, const char *schema, const char *table,
                      const struct dest_col *cols, size_t ncols,
                      const char *const *keys, size_t nkeys,
                      const char *index_col, const struct dest_evolve *ev,
                      char *err, size_t errlen);

/* ---- row writer --------------------------------------------------------- */

struct dest_writer;

/* Rows into schema.table's columns.  With upsert, each row replaces the row
 * of the same primary key (INSERT ... ON DUPLICATE KEY UPDATE, later rows
 * winning); otherwise rows go through wh_batch.  NULL with err on failure. */
struct dest_writer *dest_writer_new(struct wh *w, const char *schema,
                                    const char *table,
                                    const char *const *cols, size_t ncols,
                                    bool upsert, size_t rows_per_batch,
                                    char *err, size_t errlen);
/* One row of ncols values (NULL = SQL NULL).  Values are copied. */
int dest_writer_add(struct dest_writer *d, const char *const *vals,
                    const size_t *lens, char *err, size_t errlen);
int dest_writer_flush(struct dest_writer *d, char *err, size_t errlen);
/* Rows sent to the server so far. */
long long dest_writer_rows(const struct dest_writer *d);
void dest_writer_free(struct dest_writer *d);          /* NULL is fine */

/* ---- values --------------------------------------------------------------- */

#define DEST_DATETIME_LEN 27   /* "YYYY-MM-DD HH:MM:SS.ffffff" + NUL */

/* ISO 8601 date-time ("2026-01-02T03:04:05.123Z", "...+02:00", a space for
 * the T, no zone = UTC, or a date alone) as UTC "YYYY-MM-DD HH:MM:SS[.f]"
 * (up to 6 fraction digits) in out (DEST_DATETIME_LEN bytes).  0 or -1. */
int dest_datetime_norm(const char *s, size_t n, char *out);
/* "YYYY-MM-DD", alone or followed by 'T' or ' ' and a time, as the date
 * written ("YYYY-MM-DD"); out holds 11 bytes.  0 or -1. */
int dest_date_norm(const char *s, size_t n, char *out);
/* true/false/t/f/yes/no/y/n/1/0 (any case) as "1" or "0".  0 or -1. */
int dest_bool_norm(const char *s, size_t n, const char **out);

#endif
