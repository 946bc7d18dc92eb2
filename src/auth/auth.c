/* auth.c - who is calling, and may they: JWT, Basic, and the health probe.
 *
 * 401 means "we do not know who you are" (missing, malformed, expired or
 * forged credentials); 403 means "we know, and you may not".  The detail
 * says which check failed but never echoes the credential. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "auth/basic.h"
#include "auth/jwt.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/pool.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"

#define BASIC_CACHE_SLOTS 256

/* ---- JWT ---------------------------------------------------------------- */

static int jwt_unauthorized(struct req *r, const char *detail)
{
	resp_header(r, "WWW-Authenticate", "Bearer");
	resp_detail(r, 401, detail);
	return -1;
}

/* The token from "Bearer <jwt>" or a raw "<jwt>"; NULL when absent. */
static const char *bearer_token(const char *header)
{
	if (header == NULL)
		return NULL;
	while (*header == ' ' || *header == '\t')
		header++;
	if (strncasecmp(header, "Bearer", 6) == 0 &&
	    (header[6] == ' ' || header[6] == '\t' || header[6] == '\0')) {
		header += 6;
		while (*header == ' ' || *header == '\t')
			header++;
	}
	return header;
}

int auth_jwt_or_reply(struct req *r, const char *permission)
{
	const char *header = req_header(r, "Authorization");
	const char *token;
	struct jwt_claims *c;
	char detail[128];
	size_t len;
	int rc;

	if (header == NULL || header[0] == '\0')
		return jwt_unauthorized(r, "Not authenticated");
	token = bearer_token(header);
	len = strlen(token);
	while (len > 0 && (token[len - 1] == ' ' || token[len - 1] == '\t'))
		len--;

	c = arena_alloc(r->arena, sizeof *c);
	rc = jwt_verify(token, len, r->cfg->jwt_secret, r->cfg->jwt_secret_len,
	                time_now_s(), r->cfg->jwt_leeway, c);
	if (rc != JWT_OK) {
		snprintf(detail, sizeof detail, "Invalid token: %s",
		         jwt_strerror(rc));
		return jwt_unauthorized(r, detail);
	}

	r->id.sub = arena_strdup(r->arena, c->sub);
	r->id.customer_id = arena_strdup(r->arena, c->customer_id);
	r->id.customer_name = arena_strdup(r->arena, c->customer_name);
	r->id.npermissions = c->npermissions;
	r->id.permissions = arena_alloc(r->arena,
	    (c->npermissions + 1) * sizeof *r->id.permissions);
	for (size_t i = 0; i < c->npermissions; i++)
		r->id.permissions[i] = arena_strdup(r->arena, c->permissions[i]);

	/* A token without a customer cannot be scoped to one: refuse it
	 * rather than let a handler run with an empty customer id. */
	if (c->customer_id[0] == '\0') {
		r->id.customer_id = NULL;
		return jwt_unauthorized(r, "Invalid token: missing customer_id");
	}
	if (permission != NULL && !auth_has_permission(r, permission)) {
		snprintf(detail, sizeof detail, "Missing permission %s", permission);
		resp_detail(r, 403, detail);
		return -1;
	}
	return 0;
}

bool auth_has_permission(const struct req *r, const char *permission)
{
	for (size_t i = 0; i < r->id.npermissions; i++)
		if (strcmp(r->id.permissions[i], permission) == 0)
			return true;
	return false;
}

/* ---- Basic -------------------------------------------------------------- */

enum basic_result {
	BASIC_OK, BASIC_MISSING, BASIC_INVALID, BASIC_UNAVAILABLE,
	BASIC_BUSY,                       /* every password-check share is taken */
};

/* How many workers may hash a password at once (http/pool.h). */
static int password_checks_max(const struct config *cfg)
{
	int n = config_worker_count(cfg) / 4;

	if (cfg->password_checks_max > 0)
		return cfg->password_checks_max;
	return n > 0 ? n : 1;
}

/* Per worker: verified credentials, and a hash to burn time on when the user
 * does not exist, so response time does not reveal which names exist.
 * failed remembers refused (user, password) pairs as long: a client that
 * repeats a wrong password costs an HMAC, not another PBKDF2. */
static struct basic_cache *cache, *failed;
static char *dummy_hash;

static enum basic_result basic_check(struct req *r)
{
	char user[BASIC_MAX_USER + 1], password[BASIC_MAX_PASSWORD + 1];
	const char *header = req_header(r, "Authorization");
	const char *stored = NULL;
	struct db_stmt *st = NULL;
	struct db *db = r->db;
	long long now = time_now_s(), user_id = 0;
	enum basic_result res = BASIC_INVALID;
	bool disabled = false;
	int ok;

	if (header == NULL || header[0] == '\0')
		return BASIC_MISSING;
	if (basic_header_parse(header, user, sizeof user,
	                       password, sizeof password) != 0)
		return BASIC_INVALID;

	if (cache == NULL)
		cache = basic_cache_new(BASIC_CACHE_SLOTS);
	if (failed == NULL)
		failed = basic_cache_new(BASIC_CACHE_SLOTS);
	if (cache != NULL &&
	    basic_cache_get(cache, user, password, now, &user_id) == 1) {
		res = BASIC_OK;
		goto out;
	}
	if (failed != NULL && basic_cache_get(failed, user, password, now, NULL) == 1)
		goto out;                 /* refused moments ago: still wrong */

	if (db_ensure(db) != DB_OK) {
		res = BASIC_UNAVAILABLE;
		goto out;
	}
	st = db_query(db, "SELECT id, password_hash, disabled FROM api_users "
	                  "WHERE name = ?", "s", user);
	if (st == NULL) {
		res = BASIC_UNAVAILABLE;
		goto out;
	}
	if ((ok = db_fetch(st)) == 1) {
		user_id = db_col_ll(st, 0);
		stored = arena_strdup(r->arena, db_col_str(st, 1));
		disabled = db_col_ll(st, 2) != 0;
	} else if (ok < 0) {
		res = BASIC_UNAVAILABLE;
		goto out;
	}
	db_done(st);
	st = NULL;

	/* A PBKDF2 costs half a second of a worker: at most a share of the
	 * pool spends it at once, whatever a flood of wrong passwords does. */
	if (!pool_take(POOL_PASSWORD_CHECKS, password_checks_max(r->cfg))) {
		res = BASIC_BUSY;
		goto out;
	}
	if (stored == NULL) {
		if (dummy_hash == NULL)
			dummy_hash = basic_password_hash("not a password",
			                 (unsigned)r->cfg->pbkdf2_iterations);
		if (dummy_hash != NULL)
			(void)basic_password_verify(password, dummy_hash);
		pool_give(POOL_PASSWORD_CHECKS);
		basic_cache_put(failed, user, password, 0, now, r->cfg->basic_cache_ttl);
		goto out;
	}
	ok = basic_password_verify(password, stored);
	pool_give(POOL_PASSWORD_CHECKS);
	if (ok != 1 || disabled) {
		basic_cache_put(failed, user, password, 0, now, r->cfg->basic_cache_ttl);
		goto out;
	}

	res = BASIC_OK;
	if (cache != NULL)
		basic_cache_put(cache, user, password, user_id, now,
		                r->cfg->basic_cache_ttl);
out:
	db_done(st);
	if (res == BASIC_OK) {
		r->id.user_id = user_id;
		r->id.user_name = arena_strdup(r->arena, user);
	}
	explicit_bzero(password, sizeof password);
	return res;
}

static int basic_unauthorized(struct req *r, const char *detail)
{
	resp_header(r, "WWW-Authenticate", "Basic realm=\"sluice\"");
	resp_detail(r, 401, detail);
	return -1;
}

static int basic_busy(struct req *r)
{
	resp_header(r, "Retry-After", "1");
	resp_detail(r, 429, "Too many password checks at once; retry in a moment");
	return -1;
}

int auth_basic_or_reply(struct req *r)
{
	switch (basic_check(r)) {
	case BASIC_OK:
		return 0;
	case BASIC_MISSING:
		return basic_unauthorized(r, "Not authenticated");
	case BASIC_UNAVAILABLE:
		return resp_db_error(r, DB_ERR_UNAVAILABLE);
	case BASIC_BUSY:
		return basic_busy(r);
	case BASIC_INVALID:
	default:
		return basic_unauthorized(r, "Invalid credentials");
	}
}

/* ---- /health ------------------------------------------------------------ */

/* The health report's own error shape: {"status":"unhealthy","detail"}. */
static int health_refuse(struct req *r, int status, const char *detail)
{
	struct json_object *o = json_object_new_object();
	char ts[40];

	json_object_object_add(o, "status", json_object_new_string("unhealthy"));
	json_object_object_add(o, "detail", json_object_new_string(detail));
	json_object_object_add(o, "timestamp",
	    json_object_new_string(time_iso8601_now(ts, sizeof ts)));
	if (status == 401)
		resp_header(r, "WWW-Authenticate", "Basic realm=\"sluice\"");
	resp_json(r, status, o);
	return -1;
}

int auth_health_or_reply(struct req *r)
{
	/* The spec lets callers send Basic where anonymous calls are blocked;
	 * it is checked only when the operator asks for it (health_auth). */
	if (!r->cfg->health_auth)
		return 0;
	switch (basic_check(r)) {
	case BASIC_OK:
		return 0;
	case BASIC_MISSING:
		return health_refuse(r, 401, "Not authenticated");
	case BASIC_UNAVAILABLE:
		return health_refuse(r, 503, "database unreachable");
	case BASIC_BUSY:
		return basic_busy(r);
	case BASIC_INVALID:
	default:
		return health_refuse(r, 401, "Invalid credentials");
	}
}
