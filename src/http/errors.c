/* errors.c - internal failures to HTTP status and body. */
#include <json-c/json.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "util/log.h"

struct db *req_db_or_reply(struct req *r)
{
	int rc = db_ensure(r->db);

	if (rc == DB_OK)
		return r->db;
	resp_db_error(r, rc);
	return NULL;
}

int req_count_or_reply(struct req *r, struct db_stmt *st, long long *n)
{
	int rc;

	*n = 0;
	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	if ((rc = db_fetch(st)) == 1)
		*n = db_col_ll(st, 0);
	db_done(st);
	return rc < 0 ? resp_db_error(r, db_last_err(r->db)) : 0;
}

static struct json_object *row_plain(const struct db_stmt *st, void *row)
{
	return (*(req_row_fn *)row)(st);
}

struct json_object *req_rows_or_reply(struct req *r, struct db_stmt *st,
                                      req_row_fn row)
{
	return req_rows_arg_or_reply(r, st, row_plain, &row);
}

struct json_object *req_rows_arg_or_reply(struct req *r, struct db_stmt *st,
                                          req_row_arg_fn row, void *arg)
{
	struct json_object *arr;
	int rc;

	if (st == NULL) {
		resp_db_error(r, db_last_err(r->db));
		return NULL;
	}
	arr = json_object_new_array();
	while ((rc = db_fetch(st)) == 1)
		json_object_array_add(arr, row(st, arg));
	db_done(st);
	if (rc < 0) {
		json_object_put(arr);
		resp_db_error(r, db_last_err(r->db));
		return NULL;
	}
	return arr;
}

int resp_db_error(struct req *r, int db_err)
{
	char q[512];

	/* Transient, all three: the server is down or (Galera) has no quorum;
	 * the credentials are refused (fixed by an operator, not the client);
	 * or a deadlock or certification failure outlasted db_tx's attempts. */
	if (db_err == DB_ERR_UNAVAILABLE || db_err == DB_ERR_ACCESS ||
	    db_err == DB_ERR_DEADLOCK) {
		log_kv(LOG_WARN, db_err == DB_ERR_DEADLOCK ? "database busy"
		       : "database unavailable", "error=%s",
		       log_quote(q, sizeof q, db_error(r->db)));
		resp_header(r, "Retry-After", DB_RETRY_AFTER_S);
		resp_detail(r, 503, "Database unavailable");
		return -1;
	}
	return resp_internal(r, db_error(r->db));
}

int resp_internal(struct req *r, const char *what)
{
	char qpath[256], qwhat[512];

	log_kv(LOG_ERROR, "internal error", "path=%s error=%s",
	       log_quote(qpath, sizeof qpath, r->path != NULL ? r->path : "-"),
	       log_quote(qwhat, sizeof qwhat, what));
	resp_detail(r, 500, "Internal Server Error");
	return -1;
}
