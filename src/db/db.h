/* db.h - one MariaDB connection, its prepared statements, and typed binding.
 *
 * A worker owns one struct db.  Statements are prepared once per connection
 * and cached by their SQL text; when the server goes away the connection and
 * every cached statement are dropped and rebuilt on the next db_ensure().
 *
 * Parameters are bound from a type string, one letter per placeholder:
 *   's'  const char *            (NULL binds SQL NULL)
 *   'i'  long long
 *   'd'  double
 *   'b'  const void *, size_t    (blob; NULL pointer binds SQL NULL)
 * There is no way to splice text into SQL: every value is bound. */
#ifndef SLUICE_DB_H
#define SLUICE_DB_H

#include <stdbool.h>
#include <stddef.h>

struct config;
struct db;
struct db_stmt;

enum db_err {
	DB_OK = 0,
	DB_ERR = -1,              /* a query failed for another reason */
	DB_ERR_UNAVAILABLE = -2,  /* cannot reach the server: answer 503 */
	DB_ERR_DUPLICATE = -3,    /* unique key violated */
	DB_ERR_DEADLOCK = -4,     /* deadlock or lock wait timeout: retry */
	DB_ERR_FOREIGN_KEY = -5,  /* a referenced row is missing */
	DB_ERR_ACCESS = -6,       /* bad credentials or grants: fatal at start */
};

struct db *db_new(const struct config *cfg);
void db_free(struct db *db);                     /* NULL is fine */

/* Connect when not connected.  0, DB_ERR_UNAVAILABLE or DB_ERR_ACCESS. */
int db_ensure(struct db *db);
/* A round trip to the server (COM_PING); reconnects once when it went away. */
int db_ping(struct db *db);
void db_disconnect(struct db *db);
bool db_connected(const struct db *db);
/* The last error text, for logs (never for clients: it may name tables). */
const char *db_error(const struct db *db);

/* Run a statement that returns no rows.  Returns the affected row count
 * (>= 0) or a negative enum db_err. */
long long db_exec(struct db *db, const char *sql, const char *types, ...);
long long db_last_insert_id(struct db *db);

/* Run a query; fetch rows with db_fetch, then db_done.  NULL on error (see
 * db_last_err).  Column values are text (as the server formats them) and
 * stay valid until the next db_fetch or db_done. */
struct db_stmt *db_query(struct db *db, const char *sql, const char *types, ...);
int db_fetch(struct db_stmt *st);                /* 1 row, 0 end, < 0 error */
bool db_col_null(const struct db_stmt *st, unsigned col);
const char *db_col_str(const struct db_stmt *st, unsigned col);  /* "" if NULL */
size_t db_col_len(const struct db_stmt *st, unsigned col);
long long db_col_ll(const struct db_stmt *st, unsigned col);     /* 0 if NULL */
double db_col_double(const struct db_stmt *st, unsigned col);
unsigned db_col_count(const struct db_stmt *st);
void db_done(struct db_stmt *st);                /* NULL is fine */
int db_last_err(const struct db *db);

/* Transactions.  db_rollback is safe to call when none is open. */
int db_begin(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db);

/* Run a whole script of static SQL (migrations only: never request input). */
int db_exec_script(struct db *db, const char *sql, size_t len);

#endif
