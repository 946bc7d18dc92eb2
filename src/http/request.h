/* request.h - the request context.
 *
 * A struct req owns everything one request allocates: its arena, the parsed
 * JSON body, and copies of every FastCGI variable it reads (nothing points
 * into the FastCGI envp once req_init returns, because libfcgi frees it in
 * FCGX_Finish_r).  req_finish releases it all. */
#ifndef SLUICE_REQUEST_H
#define SLUICE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <fcgiapp.h>
#include <json-c/json.h>

#include "http/router.h"

struct arena;
struct config;
struct db;

/* Who is calling, filled in by auth/auth.c before the handler runs. */
struct identity {
	/* JWT callers */
	const char *sub;
	const char *customer_id;
	const char *customer_name;
	const char **permissions;
	size_t npermissions;
	/* Basic callers */
	long long user_id;        /* 0 when not a Basic caller */
	const char *user_name;
};

/* The worker's part of req_before_slow_work. */
typedef void (*req_slow_fn)(void *ctx);

struct resp_header {
	const char *name, *value;
	struct resp_header *next;
};

#define REQ_ID_MAX 64                  /* = LOG_REQUEST_ID_MAX */

struct req {
	struct arena *arena;
	const struct config *cfg;
	struct db *db;                 /* the worker's connection (may be down) */
	FCGX_Stream *in, *out;         /* NULL in unit tests */
	FCGX_Request *fcgi;            /* the connection; NULL in unit tests */

	char **env;                    /* arena copies of "NAME=value" */
	size_t nenv;

	const char *method;
	const char *path;              /* percent-decoded, without the query */
	const char *query;             /* raw query string, "" when none */
	const char *content_type;      /* "" when none */
	long long content_length;      /* -1 when absent */

	size_t nparams;                /* path parameters, set by the router */
	const char *param_name[ROUTE_MAX_PARAMS];
	const char *param_value[ROUTE_MAX_PARAMS];

	struct identity id;
	struct json_object *json;      /* parsed body, owned, put by req_finish */

	/* set by the worker: req_before_slow_work calls it */
	req_slow_fn slow_fn;
	void *slow_ctx;

	/* X-Request-Id of the answer and the log lines (req_take_request_id) */
	char request_id[REQ_ID_MAX + 1];

	/* response state */
	int status;                    /* 0 until a response was written */
	struct resp_header *headers;
	double started_ms;

	/* Unit tests only (in/out NULL): the body req_read_body returns and
	 * the bytes the resp_* functions would have sent. */
	const char *test_body;
	size_t test_body_len;
	char *test_out;
	size_t test_out_len;
};

enum req_err {
	REQ_OK = 0,
	REQ_ERR_BAD = -1,              /* malformed request (400) */
	REQ_ERR_TOO_LARGE = -2,        /* 413 */
	REQ_ERR_MEDIA_TYPE = -3,       /* 415 */
	REQ_ERR_IO = -4,               /* client went away */
};

/* Copy the FastCGI environment into r (arena-owned); 0 or REQ_ERR_BAD.
 * Refused: more than 256 variables or 64 KiB of them, no REQUEST_METHOD or
 * path, a path over 2048 bytes or with a bad escape or %00, a malformed
 * CONTENT_LENGTH.  The path is DOCUMENT_URI as given (the web server has
 * already decoded it), else REQUEST_URI up to '?', percent-decoded.  An
 * empty CONTENT_LENGTH or CONTENT_TYPE counts as absent.
 * The caller owns the arena and frees it after req_finish. */
int req_init(struct req *r, struct arena *a, const struct config *cfg,
             struct db *db, FCGX_Request *fr);
/* The request's id into r->request_id: the client's X-Request-Id when it is
 * 1..REQ_ID_MAX characters of [A-Za-z0-9._:-] (safe in a header, a log line
 * and a URI), else a new UUID.  Works on a request req_init refused too. */
void req_take_request_id(struct req *r);

/* Same, from a NULL-terminated "NAME=value" array (unit tests). */
int req_init_env(struct req *r, struct arena *a, const struct config *cfg,
                 char **envp);
/* Put the JSON body and forget the environment; the arena is not freed. */
void req_finish(struct req *r);
/* Unit tests: the body req_read_body returns when r->in is NULL. */
void req_set_test_body(struct req *r, const char *body, size_t len);
/* Copy the router's parameters into r (arena strings) for req_param. */
void req_set_params(struct req *r, const struct route_match *m);

const char *req_env(const struct req *r, const char *name);
/* HTTP header by its wire name, case-insensitive: "Authorization",
 * "customer_name", "Content-Type".  NULL when absent. */
const char *req_header(const struct req *r, const char *name);
/* Path parameter set by the router, NULL when absent. */
const char *req_param(const struct req *r, const char *name);
/* Percent-decoded query value; NULL when absent; REQ_ERR_BAD in *err when
 * malformed (err may be NULL). */
const char *req_query(const struct req *r, const char *name, int *err);
/* The query's pairs in order: start with *cursor = NULL; 1 with *name and
 * *value percent-decoded (arena strings; "" for "?flag"), 0 at the end,
 * REQ_ERR_BAD for a pair with a bad escape or a %00 (*name is then the
 * pair's name when only its value was bad, else NULL).  Empty pairs ("a=1&&b=2") are
 * skipped. */
int req_query_next(const struct req *r, const char **cursor,
                   const char **name, const char **value);

/* Before work that may hold this request for a while (a connection test
 * waiting on a silent host, a password's PBKDF2): the worker gives the other connections it
 * holds to idle workers, so that requests nginx sends on them meanwhile do
 * not wait behind this one.  A message per connection held; nothing in
 * unit tests. */
void req_before_slow_work(struct req *r);

/* Read up to cap bytes of the body into buf; *got is 0 at its end.
 * REQ_ERR_IO when the stream fails.  For parsers that stream the body
 * (multipart) instead of holding it whole. */
int req_read_some(struct req *r, char *buf, size_t cap, size_t *got);

/* Read the whole body, refusing more than max bytes before reading any.
 * *buf is arena-owned and NUL-terminated.  Without CONTENT_LENGTH up to
 * max + 1 bytes are read and more than max is refused.  REQ_ERR_IO when the
 * body ends early or the stream fails. */
int req_read_body(struct req *r, long max, char **buf, size_t *len);

/* Parse JSON text (strict RFC 8259, UTF-8) with a nesting limit: max_depth
 * nested arrays/objects are accepted, one more is refused.  The whole buffer
 * must be one value plus whitespace; NUL bytes are refused.  On failure
 * returns REQ_ERR_BAD and writes "Malformed JSON: <what> at offset <n>" into
 * err. */
int json_parse_bounded(const char *buf, size_t len, int max_depth,
                       struct json_object **out, char *err, size_t errlen);

/* The JSON body of r, checked for content type (415), size (413) and syntax
 * and depth (400).  On failure the error response has been written and NULL
 * is returned.  The object belongs to r.  An empty body is a 400.
 * When the client went away while sending the body nothing can be answered:
 * NULL is returned with r->status set to -1, so no response is written. */
struct json_object *req_json_body_or_reply(struct req *r);

#endif
