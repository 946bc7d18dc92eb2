/* request.c - the request context: environment, headers, query, body.
 *
 * Everything is copied into the request's arena, so nothing points into the
 * FastCGI envp (freed by FCGX_Finish_r) and a handler never frees anything.
 * Every size is capped before the work it would cost. */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/request.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/str.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#define REQ_ENV_MAX_VARS   256
#define REQ_ENV_MAX_BYTES  (64 * 1024)
#define REQ_PATH_MAX       2048
#define REQ_HEADER_NAME_MAX 128
#define REQ_READ_CHUNK     (64 * 1024)

/* Used only when a request has no configuration (never in the server). */
#define REQ_DEFAULT_BODY_MAX  (1024L * 1024)
#define REQ_DEFAULT_JSON_DEPTH 32

static void req_reset(struct req *r, struct arena *a, const struct config *cfg,
                      struct db *db)
{
	memset(r, 0, sizeof *r);
	r->arena = a;
	r->cfg = cfg;
	r->db = db;
	/* Never NULL, so the access log and the router can always use them. */
	r->method = "";
	r->path = "";
	r->query = "";
	r->content_type = "";
	r->content_length = -1;
	r->started_ms = time_mono_ms();
}

static int copy_env(struct req *r, char **envp)
{
	size_t n = 0, total = 0;

	if (envp == NULL)
		return REQ_ERR_BAD;
	for (; envp[n] != NULL; n++) {
		if (n == REQ_ENV_MAX_VARS)
			return REQ_ERR_BAD;
		total += strlen(envp[n]) + 1;
		if (total > REQ_ENV_MAX_BYTES)
			return REQ_ERR_BAD;
	}
	r->env = arena_alloc(r->arena, (n + 1) * sizeof r->env[0]);
	for (size_t i = 0; i < n; i++)
		r->env[i] = arena_strdup(r->arena, envp[i]);
	r->env[n] = NULL;
	r->nenv = n;
	return REQ_OK;
}

/* The request path: DOCUMENT_URI is already decoded by the web server (nginx
 * passes $document_uri), so decoding it again would turn "%25" into a
 * different path; REQUEST_URI is raw and gets decoded here. */
static int parse_path(struct req *r)
{
	const char *doc = req_env(r, "DOCUMENT_URI");
	const char *uri, *q;
	char *buf;
	size_t n;

	if (doc != NULL && doc[0] != '\0') {
		if (strlen(doc) > REQ_PATH_MAX)
			return REQ_ERR_BAD;
		r->path = doc;
		return REQ_OK;
	}
	uri = req_env(r, "REQUEST_URI");
	if (uri == NULL || uri[0] == '\0')
		return REQ_ERR_BAD;
	q = strchr(uri, '?');
	n = q != NULL ? (size_t)(q - uri) : strlen(uri);
	/* Each decoded byte takes at most three raw ones. */
	if (n > 3 * (size_t)REQ_PATH_MAX)
		return REQ_ERR_BAD;
	buf = arena_alloc(r->arena, n + 1);
	if (str_url_decode(buf, n + 1, uri, n, false) < 0)
		return REQ_ERR_BAD;
	if (strlen(buf) > REQ_PATH_MAX)
		return REQ_ERR_BAD;
	r->path = buf;
	return REQ_OK;
}

static int parse_env(struct req *r, char **envp)
{
	const char *s;
	long long cl;
	int rc;

	if ((rc = copy_env(r, envp)) != REQ_OK)
		return rc;
	s = req_env(r, "REQUEST_METHOD");
	if (s == NULL || s[0] == '\0')
		return REQ_ERR_BAD;
	r->method = s;
	if ((rc = parse_path(r)) != REQ_OK)
		return rc;
	if ((s = req_env(r, "QUERY_STRING")) != NULL)
		r->query = s;
	if ((s = req_env(r, "CONTENT_TYPE")) != NULL)
		r->content_type = s;
	/* nginx's stock fastcgi_params send an empty CONTENT_LENGTH when the
	 * request has no body; that is "absent", not malformed. */
	s = req_env(r, "CONTENT_LENGTH");
	if (s != NULL && s[0] != '\0') {
		if (str_to_ll(s, 0, LLONG_MAX, &cl) != 0)
			return REQ_ERR_BAD;
		r->content_length = cl;
	}
	return REQ_OK;
}

int req_init(struct req *r, struct arena *a, const struct config *cfg,
             struct db *db, FCGX_Request *fr)
{
	req_reset(r, a, cfg, db);
	r->in = fr->in;
	r->out = fr->out;
	r->fcgi = fr;
	return parse_env(r, fr->envp);
}

int req_init_env(struct req *r, struct arena *a, const struct config *cfg,
                 char **envp)
{
	req_reset(r, a, cfg, NULL);
	return parse_env(r, envp);
}

static bool request_id_ok(const char *s)
{
	size_t n = 0;

	for (; s[n] != '\0'; n++)
		if (n == REQ_ID_MAX ||
		    !(isalnum((unsigned char)s[n]) || strchr("._:-", s[n]) != NULL))
			return false;
	return n > 0;
}

void req_take_request_id(struct req *r)
{
	const char *given = req_header(r, "X-Request-Id");

	if (given != NULL && request_id_ok(given)) {
		strcpy(r->request_id, given);
		return;
	}
	/* The CSPRNG failing leaves no id rather than a guessable one. */
	if (uuid_v4(r->request_id, '-') != 0)
		r->request_id[0] = '\0';
}

void req_finish(struct req *r)
{
	json_object_put(r->json);
	r->json = NULL;
	r->env = NULL;
	r->nenv = 0;
}

void req_set_test_body(struct req *r, const char *body, size_t len)
{
	r->test_body = body;
	r->test_body_len = len;
}

void req_set_params(struct req *r, const struct route_match *m)
{
	size_t n = m->nparams < ROUTE_MAX_PARAMS ? m->nparams : ROUTE_MAX_PARAMS;

	for (size_t i = 0; i < n; i++) {
		r->param_name[i] = arena_strndup(r->arena, m->params[i].name,
		                                 m->params[i].name_len);
		r->param_value[i] = arena_strndup(r->arena, m->params[i].value,
		                                  m->params[i].value_len);
	}
	r->nparams = n;
}

const char *req_env(const struct req *r, const char *name)
{
	size_t n;

	if (r->env == NULL || name == NULL)
		return NULL;
	n = strlen(name);
	for (size_t i = 0; i < r->nenv; i++)
		if (strncmp(r->env[i], name, n) == 0 && r->env[i][n] == '=')
			return r->env[i] + n + 1;
	return NULL;
}

const char *req_header(const struct req *r, const char *name)
{
	char var[sizeof "HTTP_" + REQ_HEADER_NAME_MAX];
	size_t n, i;
	const char *v;

	if (name == NULL)
		return NULL;
	n = strlen(name);
	if (n == 0 || n > REQ_HEADER_NAME_MAX)
		return NULL;
	memcpy(var, "HTTP_", 5);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '-')
			c = '_';
		else if (c >= 'a' && c <= 'z')
			c = (unsigned char)(c - 'a' + 'A');
		var[5 + i] = (char)c;
	}
	var[5 + n] = '\0';
	/* The CGI spec passes these two without the HTTP_ prefix. */
	if (strcmp(var + 5, "CONTENT_TYPE") == 0 ||
	    strcmp(var + 5, "CONTENT_LENGTH") == 0) {
		v = req_env(r, var + 5);
		return v != NULL && v[0] != '\0' ? v : NULL;
	}
	return req_env(r, var);
}

const char *req_param(const struct req *r, const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < r->nparams && i < ROUTE_MAX_PARAMS; i++)
		if (r->param_name[i] != NULL && strcmp(r->param_name[i], name) == 0)
			return r->param_value[i];
	return NULL;
}

/* Decode src[0..n) into the arena (form encoding: '+' is a space). */
static char *query_decode(const struct req *r, const char *src, size_t n)
{
	char *dst = arena_alloc(r->arena, n + 1);

	if (str_url_decode(dst, n + 1, src, n, true) < 0)
		return NULL;
	return dst;
}

int req_query_next(const struct req *r, const char **cursor,
                   const char **name, const char **value)
{
	const char *q = *cursor != NULL ? *cursor : r->query;

	while (q != NULL && *q != '\0') {
		const char *amp = strchr(q, '&');
		size_t len = amp != NULL ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', len);
		size_t nlen = eq != NULL ? (size_t)(eq - q) : len;
		const char *pair = q;

		q = amp != NULL ? amp + 1 : pair + len;
		*cursor = q;
		if (len == 0)
			continue;
		*name = query_decode(r, pair, nlen);
		*value = NULL;
		if (*name == NULL)
			return REQ_ERR_BAD;
		*value = eq != NULL ? query_decode(r, eq + 1, len - nlen - 1) : "";
		return *value != NULL ? 1 : REQ_ERR_BAD;
	}
	*cursor = q;
	return 0;
}

const char *req_query(const struct req *r, const char *name, int *err)
{
	const char *cursor = NULL, *pname, *val;
	int rc;

	if (err != NULL)
		*err = REQ_OK;
	if (name == NULL)
		return NULL;
	while ((rc = req_query_next(r, &cursor, &pname, &val)) == 1)
		if (strcmp(pname, name) == 0)
			return val;   /* the first occurrence wins */
	/* A pair we cannot decode makes the whole query malformed: it might
	 * have been the one asked for. */
	if (rc != 0 && err != NULL)
		*err = REQ_ERR_BAD;
	return NULL;
}

/* Read up to want bytes into dst; *got says how many came.  -1 when the
 * stream failed. */
static int body_read(struct req *r, char *dst, size_t want, size_t *got)
{
	*got = 0;
	if (r->in == NULL) {
		size_t n = r->test_body_len < want ? r->test_body_len : want;

		if (n > 0)
			memcpy(dst, r->test_body, n);
		*got = n;
		return 0;
	}
	while (*got < want) {
		size_t chunk = want - *got;
		int n;

		if (chunk > REQ_READ_CHUNK)
			chunk = REQ_READ_CHUNK;
		n = FCGX_GetStr(dst + *got, (int)chunk, r->in);
		if (n <= 0)
			break;
		*got += (size_t)n;
	}
	return FCGX_GetError(r->in) != 0 ? -1 : 0;
}

void req_before_slow_work(struct req *r)
{
	if (r->slow_fn != NULL)
		r->slow_fn(r->slow_ctx);
}

int req_read_some(struct req *r, char *buf, size_t cap, size_t *got)
{
	int n;

	*got = 0;
	if (cap == 0)
		return REQ_OK;
	if (r->in == NULL) {
		/* unit tests: hand out the test body piece by piece */
		size_t k = r->test_body_len < cap ? r->test_body_len : cap;

		if (k > 0)
			memcpy(buf, r->test_body, k);
		r->test_body += k;
		r->test_body_len -= k;
		*got = k;
		return REQ_OK;
	}
	if (cap > REQ_READ_CHUNK)
		cap = REQ_READ_CHUNK;
	n = FCGX_GetStr(buf, (int)cap, r->in);
	if (n < 0 || FCGX_GetError(r->in) != 0)
		return REQ_ERR_IO;
	*got = (size_t)n;
	return REQ_OK;
}

int req_read_body(struct req *r, long max, char **buf, size_t *len)
{
	size_t want, got;
	char *b;

	*buf = NULL;
	*len = 0;
	if (max < 0)
		max = 0;
	if (r->content_length > max)
		return REQ_ERR_TOO_LARGE;
	/* Without a length read one byte more than allowed to tell "exactly
	 * max" from "too much". */
	want = r->content_length >= 0 ? (size_t)r->content_length
	                               : (size_t)max + 1;
	b = arena_alloc(r->arena, want + 1);
	if (body_read(r, b, want, &got) != 0)
		return REQ_ERR_IO;
	if (r->content_length >= 0 && got < want)
		return REQ_ERR_IO;
	if (got > (size_t)max)
		return REQ_ERR_TOO_LARGE;
	b[got] = '\0';
	*buf = b;
	*len = got;
	return REQ_OK;
}

/* The characters valid JSON may have outside strings. */
static bool json_outside_char(unsigned char c)
{
	return strchr(" \t\r\n[]{},:-+.0123456789eEtrufalsn", c) != NULL && c != '\0';
}

enum scan_result { SCAN_OK, SCAN_DEPTH, SCAN_BAD };

/* A second look at text json-c has accepted (or accepted up to an error):
 * measures the nesting the same way for empty and non-empty containers, and
 * refuses what json-c lets through even in strict mode (NaN, Infinity,
 * single quotes, "1.", raw control characters in strings, and "\u0000",
 * which would cut a C string short).  With depth_only set only the nesting
 * is checked. */
static enum scan_result json_scan(const char *s, size_t len, int max_depth,
                                  bool depth_only, size_t *off,
                                  const char **what)
{
	bool in_str = false;
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (in_str) {
			if (c == '"') {
				in_str = false;
			} else if (c == '\\') {
				if (!depth_only && i + 5 < len &&
				    memcmp(s + i + 1, "u0000", 5) == 0) {
					*off = i;
					*what = "\\u0000 in a string";
					return SCAN_BAD;
				}
				i++;
			} else if (c < 0x20 && !depth_only) {
				*off = i;
				*what = "control character in a string";
				return SCAN_BAD;
			}
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			break;
		case '[':
		case '{':
			if (++depth > max_depth) {
				*off = i;
				return SCAN_DEPTH;
			}
			break;
		case ']':
		case '}':
			depth--;
			break;
		case '.':
			if (!depth_only && (i + 1 == len ||
			    s[i + 1] < '0' || s[i + 1] > '9')) {
				*off = i;
				*what = "digit expected after '.'";
				return SCAN_BAD;
			}
			break;
		default:
			if (!depth_only && !json_outside_char(c)) {
				*off = i;
				*what = "unexpected character";
				return SCAN_BAD;
			}
			break;
		}
	}
	return SCAN_OK;
}

static int json_fail(char *err, size_t errlen, const char *what, size_t off)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "Malformed JSON: %s at offset %zu", what, off);
	return REQ_ERR_BAD;
}

static int json_fail_depth(char *err, size_t errlen, int max_depth, size_t off)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen,
		         "Malformed JSON: nesting deeper than %d at offset %zu",
		         max_depth, off);
	return REQ_ERR_BAD;
}

int json_parse_bounded(const char *buf, size_t len, int max_depth,
                       struct json_object **out, char *err, size_t errlen)
{
	struct json_tokener *tok = NULL;
	struct json_object *obj = NULL;
	enum json_tokener_error jerr = json_tokener_success;
	const char *nul, *what = NULL;
	size_t off = 0, end = 0;
	int flags = JSON_TOKENER_STRICT, rc = REQ_ERR_BAD;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (max_depth < 0)
		max_depth = 0;
	if (max_depth > INT_MAX - 1)
		max_depth = INT_MAX - 1;
	if (buf == NULL)
		len = 0;
	if (len > 0 && (nul = memchr(buf, '\0', len)) != NULL)
		return json_fail(err, errlen, "NUL byte", (size_t)(nul - buf));

	/* json-c counts a scalar inside the innermost container as a level of
	 * its own, so max_depth containers holding a value need one more; empty
	 * containers one too deep get past it and json_scan catches them. */
	tok = json_tokener_new_ex(max_depth + 1);
	if (tok == NULL)
		return json_fail(err, errlen, "out of memory", 0);
#ifdef JSON_TOKENER_VALIDATE_UTF8
	flags |= JSON_TOKENER_VALIDATE_UTF8;
#endif
	json_tokener_set_flags(tok, flags);

	/* json_tokener_parse_ex takes an int length: feed it in pieces. */
	while (off < len) {
		size_t chunk = len - off;

		if (chunk > INT_MAX)
			chunk = INT_MAX;
		obj = json_tokener_parse_ex(tok, buf + off, (int)chunk);
		jerr = json_tokener_get_error(tok);
		end = off + json_tokener_get_parse_end(tok);
		if (jerr != json_tokener_continue)
			break;
		off += chunk;
	}
	if (len == 0 || jerr == json_tokener_continue) {
		/* A number or literal at the very end waits for a terminator;
		 * the NUL says there is no more. */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		end = len;
	}

	if (jerr == json_tokener_error_depth) {
		/* json-c stops somewhere inside the level too deep; name the
		 * bracket that opened it. */
		if (json_scan(buf, end + 1 < len ? end + 1 : len, max_depth,
		              true, &off, &what) != SCAN_DEPTH)
			off = end;
		json_fail_depth(err, errlen, max_depth, off);
		goto out;
	}
	if (jerr != json_tokener_success || obj == NULL) {
		/* Report the first problem in the text: a level too deep
		 * before the point where json-c gave up comes first. */
		if (json_scan(buf, end, max_depth, true, &off, &what) == SCAN_DEPTH)
			json_fail_depth(err, errlen, max_depth, off);
		else
			json_fail(err, errlen, json_tokener_error_desc(jerr), end);
		goto out;
	}
	for (size_t i = end; i < len; i++)
		if (strchr(" \t\r\n", buf[i]) == NULL) {
			json_fail(err, errlen, "unexpected character", i);
			goto out;
		}
	switch (json_scan(buf, len, max_depth, false, &off, &what)) {
	case SCAN_DEPTH:
		json_fail_depth(err, errlen, max_depth, off);
		goto out;
	case SCAN_BAD:
		json_fail(err, errlen, what, off);
		goto out;
	case SCAN_OK:
		break;
	}
	*out = obj;
	obj = NULL;
	rc = REQ_OK;
out:
	json_object_put(obj);
	json_tokener_free(tok);
	return rc;
}

/* "application/json", any case, optionally with parameters. */
static bool content_type_is_json(const char *ct)
{
	static const char want[] = "application/json";
	size_t n = sizeof want - 1;

	if (ct == NULL)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, n) != 0)
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

struct json_object *req_json_body_or_reply(struct req *r)
{
	long limit = r->cfg != NULL ? r->cfg->body_max_bytes : REQ_DEFAULT_BODY_MAX;
	int depth = r->cfg != NULL ? r->cfg->json_max_depth : REQ_DEFAULT_JSON_DEPTH;
	struct json_object *obj = NULL;
	char err[256];
	char *buf;
	size_t len;
	int rc;

	if (r->json != NULL)
		return r->json;
	if (!content_type_is_json(r->content_type)) {
		resp_detail(r, 415, "Content-Type must be application/json");
		return NULL;
	}
	rc = req_read_body(r, limit, &buf, &len);
	if (rc == REQ_ERR_TOO_LARGE) {
		snprintf(err, sizeof err,
		         "Request body too large (limit %ld bytes)", limit);
		resp_detail(r, 413, err);
		return NULL;
	}
	if (rc != REQ_OK) {
		r->status = 499;       /* the client is gone: nobody to answer */
		return NULL;
	}
	if (len == 0) {
		resp_detail(r, 400, "Request body is empty");
		return NULL;
	}
	if (json_parse_bounded(buf, len, depth, &obj, err, sizeof err) != REQ_OK) {
		resp_detail(r, 400, err);
		return NULL;
	}
	r->json = obj;
	return obj;
}
