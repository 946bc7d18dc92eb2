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

/* Statements cached per connection; past it the oldest that is not being
 * read is closed (round-robin). */
#define DB_STMT_CACHE 96
/* Placeholders of a type string (db_exec_params takes any number). */
#define DB_MAX_PARAMS 64

struct config;
struct db;
struct db_stmt;

enum db_err {
	DB_OK = 0,
	DB_ERR = -1,              /* a query failed for another reason */
	DB_ERR_UNAVAILABLE = -2,  /* cannot reach the server, or (Galera) the node
	                           * has no quorum or is not synced: answer 503 */
	DB_ERR_DUPLICATE = -3,    /* unique key violated */
	DB_ERR_DEADLOCK = -4,     /* deadlock or lock wait timeout: retry */
	DB_ERR_FOREIGN_KEY = -5,  /* a referenced row is missing */
	DB_ERR_ACCESS = -6,       /* bad credentials or grants: fatal at start */
};

/* SQL for a DATETIME column as ISO 8601 UTC with milliseconds
 * ("2026-11-22T10:00:00.123Z"); NULL stays NULL.  Every connection runs in
 * time_zone +00:00.  col is a literal column name, never input. */
#define DB_ISO_MS(col) \
	"CONCAT(LEFT(DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%f'), 23), 'Z')"

/* The class of a server or client error number (mysql_errno): one of the
 * negative enum db_err values above. */
int db_classify(unsigned int no);

struct db *db_new(const struct config *cfg);
void db_free(struct db *db);                     /* NULL is fine */

/* Connect when not connected, and check the server answers a query (a
 * Galera node without quorum accepts connections but no query).  0,
 * DB_ERR_UNAVAILABLE or DB_ERR_ACCESS. */
int db_ensure(struct db *db);
/* A round trip to the server (COM_PING); reconnects once when it went away. */
int db_ping(struct db *db);
void db_disconnect(struct db *db);
bool db_connected(const struct db *db);
/* Rows this session's statements have read so far (the sum of its
 * Handler_read_* counters): what a step costs MariaDB, as a count a test can
 * bound where a time could not be.  -1 on error; a reconnect starts again
 * from 0. */
long long db_rows_read(struct db *db);
/* The last error text, for logs (never for clients: it may name tables). */
const char *db_error(const struct db *db);

/* Run a statement that returns no rows.  Returns the number of rows the
 * statement matched (>= 0; the connection asks for CLIENT_FOUND_ROWS, so an
 * UPDATE that sets a row to the values it already has still counts it, and
 * INSERT ... ON DUPLICATE KEY UPDATE answers 1 or 2), or a negative enum
 * db_err.  Never take "no row changed" from it: read the row. */
long long db_exec(struct db *db, const char *sql, const char *types, ...);
long long db_last_insert_id(struct db *db);

/* db_exec for statements whose placeholders are counted at run time (a
 * multi-row INSERT): one struct db_param per placeholder, any number (the
 * server's max_allowed_packet bounds the bytes).  p is the string ('s',
 * NUL-terminated) or the blob ('b', len bytes); NULL binds SQL NULL. */
struct db_param {
	char type;                /* 's', 'i', 'd' or 'b', as in the type strings */
	const void *p;
	size_t len;
	long long i;
	double d;
};
long long db_exec_params(struct db *db, const char *sql,
                         const struct db_param *ps, size_t n);

/* A multi-row INSERT of nrows rows of ncols placeholders each: head is
 * the statement up to VALUES ("INSERT INTO t (a, b) VALUES "), tuple one
 * row's placeholders ("(?, ?)"), ps the rows' parameters in order.  Sent
 * in statements of a power of two rows, at most DB_ROWS_MAX, so a
 * connection prepares (and caches) only a handful of distinct statements
 * whatever nrows is.  The caller bounds the bytes of one call (the
 * server's max_allowed_packet).  0, or < 0 enum db_err. */
#define DB_ROWS_MAX 64
int db_exec_rows(struct db *db, const char *head, const char *tuple, size_t ncols,
                 const struct db_param *ps, size_t nrows);

/* Run a query; fetch rows with db_fetch, then db_done.  NULL on error (see
 * db_last_err).  Column values are text (as the server formats them) and
 * stay valid until the next db_fetch or db_done. */
struct db_stmt *db_query(struct db *db, const char *sql, const char *types, ...);
int db_fetch(struct db_stmt *st);                /* 1 row, 0 end, < 0 error */
/* One row's text (a claim's SELECT ... LIMIT 1 FOR UPDATE SKIP LOCKED, a
 * lookup): for st = db_query(db, ...) (NULL: it failed), the first n
 * columns of the first row copied into out[i] (cut to fit), then st is
 * done.  1 copied, 0 no row, < 0 enum db_err. */
struct db_text {
	char *buf;
	size_t cap;
};
int db_first_row(struct db *db, struct db_stmt *st, const struct db_text *out, size_t n);
bool db_col_null(const struct db_stmt *st, unsigned col);
const char *db_col_str(const struct db_stmt *st, unsigned col);  /* "" if NULL */
size_t db_col_len(const struct db_stmt *st, unsigned col);
long long db_col_ll(const struct db_stmt *st, unsigned col);     /* 0 if NULL */
double db_col_double(const struct db_stmt *st, unsigned col);
unsigned db_col_count(const struct db_stmt *st);
void db_done(struct db_stmt *st);                /* NULL is fine */
int db_last_err(const struct db *db);

/* Which of ids[0..n) (n <= DB_IN_BATCH) the query returns in its first
 * column: found[i].  sql ends in an IN list of exactly DB_IN_BATCH string
 * placeholders (DB_IN_LIST); the places past n repeat ids[0].  0 or < 0
 * enum db_err. */
#define DB_IN_BATCH 16
#define DB_IN_LIST "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"  /* DB_IN_BATCH */
int db_in_batch(struct db *db, const char *sql, const char *const *ids, size_t n,
                bool *found);

/* db_exec of sql for ids[0..n), any n: sql ends in DB_IN_LIST, its
 * DB_IN_BATCH placeholders integers, after the nhead of head[]; it runs
 * once per DB_IN_BATCH ids (a list's places past its ids repeat its
 * first).  The rows affected in all, or < 0 enum db_err. */
long long db_exec_in(struct db *db, const char *sql, const struct db_param *head,
                     size_t nhead, const long long *ids, size_t n);

/* Transactions.  db_rollback is safe to call when none is open. */
int db_begin(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db);

/* A transaction run whole, and again (at most DB_TX_ATTEMPTS times) when
 * the server answers a deadlock, a lock wait timeout or a Galera
 * certification failure, at any statement or at COMMIT, and the attempts
 * so far took at most DB_TX_BUDGET_MS; each waits a random 0-20 ms times
 * the attempts made before it starts.  body returns >= 0
 * (handed back once the COMMIT succeeded) or a negative enum db_err (the
 * transaction is rolled back).  body may run more than once: it must start
 * from its arguments each time and keep nothing of an attempt that did not
 * commit.  Retries are logged with what and counted (db_tx_retries). */
#define DB_TX_ATTEMPTS 4
#define DB_TX_BUDGET_MS 10000.0   /* no attempt starts after this long */
typedef int (*db_tx_fn)(struct db *db, void *arg);
int db_tx(struct db *db, const char *what, db_tx_fn body, void *arg);
/* Transactions this process retried since it started. */
unsigned long long db_tx_retries(void);

/* Run a whole script of static SQL (migrations only: never request input). */
int db_exec_script(struct db *db, const char *sql, size_t len);

#endif
