/* errors.h - the one place that turns internal failures into HTTP answers.
 *
 * Clients get a short fixed detail; the real cause (which may name tables
 * or hosts) goes to the log only. */
#ifndef SLUICE_ERRORS_H
#define SLUICE_ERRORS_H

struct db;
struct db_stmt;
struct json_object;
struct req;

/* The worker's connection, connected; or NULL once a 503 was answered. */
struct db *req_db_or_reply(struct req *r);

/* A listing's two reads, for st = db_query(r->db, ...) (NULL: the query
 * failed); each finishes st.  The count: the first column of the first row
 * into *n (0 without a row); 0, or -1 after the database error was
 * answered.  The rows: each rendered by row into a new JSON array; the
 * array, or NULL after the database error was answered. */
int req_count_or_reply(struct req *r, struct db_stmt *st, long long *n);
typedef struct json_object *(*req_row_fn)(const struct db_stmt *st);
struct json_object *req_rows_or_reply(struct req *r, struct db_stmt *st,
                                      req_row_fn row);
/* The same, with the caller's arg passed to row. */
typedef struct json_object *(*req_row_arg_fn)(const struct db_stmt *st, void *arg);
struct json_object *req_rows_arg_or_reply(struct req *r, struct db_stmt *st,
                                          req_row_arg_fn row, void *arg);

/* Answer a failed database call: 503 {"detail":"Database unavailable"}
 * with Retry-After when the server cannot be reached or serve (a Galera
 * node without quorum) or a deadlock persisted past db_tx's attempts,
 * else 500.  Returns -1. */
#define DB_RETRY_AFTER_S "1"
int resp_db_error(struct req *r, int db_err);

/* 500 {"detail":"Internal Server Error"} after logging what. Returns -1. */
int resp_internal(struct req *r, const char *what);

#endif
