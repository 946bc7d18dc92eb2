/* warehouse.h - the destination database where pipelines and linked
 * datasets land their rows (output.plugin "mariadb").
 *
 * A MariaDB server named by the warehouse_* config keys; by default the
 * service's own server, so that a load and the state it covers (a bookmark,
 * a Singer state, a processed file) commit in one transaction.  Loads go
 * through the loader account (warehouse_user), whose grants cover the
 * warehouse databases (`wh\_%`) and the few state tables a load writes.
 *
 * Every customer's data lives in databases of its own: the logical schema
 * a customer names (output.raw.table_schema, a storage table's
 * schema_name) is mapped by wh_schema_physical, the one mapping of both
 * areas, to `wh_<schema>_<16 hex>`.
 *
 * Identifiers are never taken from input unchecked: every schema, table and
 * column name passes wh_ident_ok and is written by wh_quote.  Values travel
 * as bound data, never as SQL text. */
#ifndef SLUICE_WAREHOUSE_H
#define SLUICE_WAREHOUSE_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct wh;
struct wh_batch;

#define WH_IDENT_MAX 64             /* MariaDB's identifier length limit */
#define WH_SCHEMA_PREFIX "wh_"      /* every warehouse database; the grant's pattern */
#define WH_SCHEMA_LOGICAL_CHARS 44  /* of the logical name kept in the physical one */

/* The database where customer_id's logical schema lives:
 *   "wh_" + the logical name in lower case, each character other than
 *   [a-z0-9_] as '_', cut to 44 characters + "_" + the first 16 hex digits
 *   of SHA-256(customer_id "\n" the logical name in ASCII lower case).
 * Two customers never share a database, the name never leaves the
 * `wh\_%` pattern, and `Raw` and `raw` are one schema.  0, or -1 for an
 * empty or over-long (255 bytes) name. */
int wh_schema_physical(const char *customer_id, const char *logical,
                       char out[WH_IDENT_MAX + 1]);
/* A logical schema no customer may name: the service database (db_name)
 * and MariaDB's own, compared without regard to ASCII case. */
bool wh_schema_reserved(const char *logical, const char *service_db);
/* True for a physical name inside the warehouse namespace (WH_SCHEMA_PREFIX). */
bool wh_schema_is_warehouse(const char *physical);

/* Connect.  NULL with the reason in err.  The connection is in autocommit
 * mode until wh_begin. */
struct wh *wh_open(const struct config *cfg, char *err, size_t errlen);
void wh_close(struct wh *w);                       /* NULL is fine */
const char *wh_error(const struct wh *w);

/* True when the warehouse is the service's own server: then the service's
 * tables are reachable on this connection as `<db_name>`.`table` and a
 * state write can join the load's transaction (see wh_app_table). */
bool wh_shares_app_server(const struct wh *w);
/* `<db_name>`.`table` into buf, for statements on the warehouse connection
 * that write the service's own state tables. 0, or -1 when too small. */
int wh_app_table(const struct wh *w, const char *table, char *buf, size_t cap);

/* The default schema for a table whose schema_name is empty. */
const char *wh_default_schema(const struct wh *w);

/* 1..64 characters, no NUL, no trailing space, valid UTF-8; what MariaDB
 * accepts in a quoted identifier.  (The storage explorer's validate-name
 * rules are stricter; this is the last line of defence.) */
bool wh_ident_ok(const char *name);
/* `name` with backticks doubled, into buf.  0, or -1 when name is not
 * wh_ident_ok or buf is too small (2 * WH_IDENT_MAX * 4 + 3 always fits). */
int wh_quote(const char *name, char *buf, size_t cap);

/* Transactions on the warehouse connection.  A load's transaction streams
 * rows from a source and cannot be run again whole (db_tx's way): when its
 * COMMIT fails, a deadlock or (Galera) a certification failure included,
 * the server has rolled back all of it, rows and the state written in it,
 * and wh_commit's -1 fails the task; the run is retried by its pipeline's
 * retry policy and starts from the last state that did commit.  State
 * written after the commit (state_after_commit) is behind the rows at
 * worst, never ahead. */
int wh_begin(struct wh *w);
int wh_commit(struct wh *w);
void wh_rollback(struct wh *w);

/* Run one statement built only from quoted identifiers and constants (DDL,
 * a qualify DELETE); values must go through wh_exec_bound.  Rows matched
 * (>= 0; CLIENT_FOUND_ROWS, as db_exec), or -1 with the reason in err. */
long long wh_exec(struct wh *w, const char *sql, char *err, size_t errlen);
/* The same with bound string parameters (NULL pointer = SQL NULL). */
long long wh_exec_bound(struct wh *w, const char *sql, const char *const *params,
                        size_t nparams, char *err, size_t errlen);

struct wh_column {
	const char *name;
	const char *sql_type;           /* from a fixed vocabulary, never input text */
	bool nullable;
};

enum {
	WH_CREATE_IF_NOT_EXISTS = 1,    /* keep an existing table as it is */
	WH_CREATE_REPLACE = 2,          /* drop an existing table first */
};

/* CREATE SCHEMA IF NOT EXISTS schema; CREATE TABLE schema.table. */
int wh_table_create(struct wh *w, const char *schema, const char *table,
                    const struct wh_column *cols, size_t ncols, int flags,
                    char *err, size_t errlen);
/* 1 exists, 0 not, -1 error. */
int wh_table_exists(struct wh *w, const char *schema, const char *table,
                    char *err, size_t errlen);
int wh_table_drop(struct wh *w, const char *schema, const char *table,
                  char *err, size_t errlen);
/* Call fn for every table (schema, name) of the warehouse whose name is
 * LIKE like and that was created at least min_age_s seconds ago.  How many
 * tables, or -1 with err. */
typedef void (*wh_table_fn)(void *arg, const char *schema, const char *table);
int wh_tables_like(struct wh *w, const char *like, int min_age_s,
                   wh_table_fn fn, void *arg, char *err, size_t errlen);
/* Call fn for every column of schema.table, in table order: its name, its
 * MariaDB COLUMN_TYPE ("varchar(200)", "decimal(12,2)"), whether it is
 * nullable, and its comment ("" for none).  How many columns (0: no such
 * table), or -1 with err. */
typedef void (*wh_column_fn)(void *arg, const char *name, const char *type,
                             bool nullable, const char *comment);
int wh_table_columns(struct wh *w, const char *schema, const char *table,
                     wh_column_fn fn, void *arg, char *err, size_t errlen);
/* Atomically replace schema.table by schema.staging (RENAME TABLE of both
 * in one statement; the old table is dropped after).  When table does not
 * exist the staging table is simply renamed. */
int wh_table_swap(struct wh *w, const char *schema, const char *table,
                  const char *staging, char *err, size_t errlen);

/* Batched loading of rows into schema.table (columns in the given order).
 * Rows are buffered and sent rows_per_batch at a time; the caller decides
 * the transaction around them. */
struct wh_batch *wh_batch_new(struct wh *w, const char *schema, const char *table,
                              const char *const *columns, size_t ncols,
                              size_t rows_per_batch, char *err, size_t errlen);
/* One row: ncols values as text (NULL = SQL NULL), lens their lengths. */
int wh_batch_add(struct wh_batch *b, const char *const *vals, const size_t *lens,
                 char *err, size_t errlen);
/* Send what is buffered. */
int wh_batch_flush(struct wh_batch *b, char *err, size_t errlen);
long long wh_batch_rows(const struct wh_batch *b);  /* rows sent so far */
void wh_batch_free(struct wh_batch *b);             /* NULL is fine; drops unsent rows */

#endif
