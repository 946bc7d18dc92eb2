/* auth.c - who is calling, and may they: JWT, Basic, and the health probe.
 *
 * 401 means "we do not know who you are" (missing, malformed, expired or
 * forged credentials); 403 means "we know, and you may not".  The detail
 * says which check failed but never echoes the credential. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "auth/basic.h"
#include "auth/identity.h"
#include "auth/jwt.h"
#include "auth/throttle.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/pool.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/timeutil.h"

#define BASIC_CACHE_SLOTS 4096

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
	 * rather than let a handler run with an empty customer id.  Nor is a
	 * look-alike of a customer's id (another case, a trailing space, an
	 * accent) taken: only the canonical form, which compares exactly. */
	if (c->customer_id[0] == '\0') {
		r->id.customer_id = NULL;
		return jwt_unauthorized(r, "Invalid token: missing customer_id");
	}
	if (!identity_customer_id_ok(c->customer_id)) {
		r->id.customer_id = NULL;
		return jwt_unauthorized(r, "Invalid token: customer_id must be 1 to 36 "
		                        "lower-case letters, digits, '-' or '_'");
	}
	if (permission != NULL && !auth_has_permission(r, permission)) {
		snprintf(detail, sizeof detail, "Missing permission %s", permission);
		resp_detail(r, 403, detail);
		return -1;
	}
	return 0;
}

/* ---- The caller's customer ---------------------------------------------- */

#define CUSTOMER_NAME_MAX 255          /* customers.name */

const char *auth_customer_or_reply(struct req *r)
{
	const char *id = r->id.customer_id;

	if (id == NULL || !identity_customer_id_ok(id)) {
		resp_detail(r, 403, "The token's customer_id is not a valid customer id");
		return NULL;
	}
	return id;
}

const char *auth_customer_ensure_or_reply(struct req *r)
{
	const char *id, *name = r->id.customer_name;
	struct db_stmt *st;
	long long n;
	int found;

	if ((id = auth_customer_or_reply(r)) == NULL || req_db_or_reply(r) == NULL)
		return NULL;
	if (name == NULL || name[0] == '\0' || strlen(name) > CUSTOMER_NAME_MAX)
		name = id;
	n = db_exec(r->db, "INSERT IGNORE INTO customers (id, name) VALUES (?, ?)",
	            "ss", id, name);
	if (n < 0) {
		resp_db_error(r, (int)n);
		return NULL;
	}
	if (n == 1)
		return id;
	/* Ignored: the id exists (fine) or the name belongs to another id. */
	st = db_query(r->db, "SELECT 1 FROM customers WHERE id = ?", "s", id);
	if (st == NULL) {
		resp_db_error(r, db_last_err(r->db));
		return NULL;
	}
	found = db_fetch(st);
	db_done(st);
	if (found < 0) {
		resp_db_error(r, db_last_err(r->db));
		return NULL;
	}
	if (found == 0) {
		resp_detail(r, 403, "The token's customer_name belongs to another customer");
		return NULL;
	}
	return id;
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
	BASIC_OK, BASIC_MISSING, BASIC_INVALID, BASIC_UNAVAILABLE, BASIC_THROTTLED,
	BASIC_BUSY,                       /* every password-check share is taken */
};

/* Verified credentials (shared by all workers when auth_shared_init ran in
 * the master, else this process's own), and a hash to burn time on when
 * the user does not exist, so response time does not reveal which names
 * exist. */
static struct basic_cache *cache;
static char *dummy_hash;

int auth_shared_init(void)
{
	if (throttle_init(THROTTLE_SLOTS) != 0)
		return -1;
	if (cache == NULL && (cache = basic_cache_new_shared(BASIC_CACHE_SLOTS)) == NULL)
		return -1;
	return 0;
}

/* Take an attempt from the user name's and the address's buckets: 0, or
 * the seconds to wait (nothing taken). */
static int basic_attempt_take(const struct req *r, const char *user, const char *addr)
{
	int wait;

	wait = throttle_take(THROTTLE_USER, user, r->cfg->basic_fail_per_user,
	                     r->cfg->basic_fail_refill_s);
	if (wait > 0)
		return wait;
	wait = throttle_take(THROTTLE_ADDRESS, addr, r->cfg->basic_fail_per_address,
	                     r->cfg->basic_fail_refill_s);
	if (wait > 0)
		throttle_give_back(THROTTLE_USER, user, r->cfg->basic_fail_refill_s);
	return wait;
}

static void basic_attempt_give_back(const struct req *r, const char *user,
                                    const char *addr)
{
	throttle_give_back(THROTTLE_USER, user, r->cfg->basic_fail_refill_s);
	throttle_give_back(THROTTLE_ADDRESS, addr, r->cfg->basic_fail_refill_s);
}

/* user's row: 1 with *id, *stored (malloc'd) and *disabled; 0 when no
 * such user; -1 when the database is unavailable. */
static int user_row(struct db *db, const char *user, long long *id, char **stored,
                    bool *disabled)
{
	struct db_stmt *st;
	int ok;

	*stored = NULL;
	if (db_ensure(db) != DB_OK)
		return -1;
	st = db_query(db, "SELECT id, name, password_hash, disabled FROM api_users "
	                  "WHERE name = ?", "s", user);
	if (st == NULL)
		return -1;
	/* The column compares byte for byte (utf8mb4_nopad_bin); the name is
	 * compared once more here, so no collation can ever match a
	 * look-alike. */
	if ((ok = db_fetch(st)) == 1 && strcmp(db_col_str(st, 1), user) == 0) {
		*id = db_col_ll(st, 0);
		*disabled = db_col_ll(st, 3) != 0;
		if ((*stored = strdup(db_col_str(st, 2))) == NULL)
			ok = -1;
	} else if (ok == 1) {
		ok = 0;
	}
	db_done(st);
	return ok;
}

/* The cache entry's renewal that basic_cache_get handed this process
 * (basic.h), done by auth_renew once the response is sent: no request
 * waits for its PBKDF2, and the entry of a user in use never runs out. */
static struct {
	bool due;
	char user[BASIC_MAX_USER + 1];
	char password[BASIC_MAX_PASSWORD + 1];
} renewal;

static void renewal_hand(const char *user, const char *password)
{
	renewal.due = true;
	snprintf(renewal.user, sizeof renewal.user, "%s", user);
	snprintf(renewal.password, sizeof renewal.password, "%s", password);
}

bool auth_renewal_due(void)
{
	return renewal.due;
}

void auth_renew(struct db *db, const struct config *cfg)
{
	long long now = time_now_s(), id = 0;
	char *stored = NULL;
	bool disabled = false;
	int row;

	if (!renewal.due || cache == NULL)
		goto out;
	/* Unavailable, or every check share taken: the entry is handed out
	 * again BASIC_RENEW_RETRY_S later, and runs out at its time all the
	 * same. */
	if ((row = user_row(db, renewal.user, &id, &stored, &disabled)) < 0)
		goto out;
	if (row == 0 || disabled) {
		basic_cache_drop(cache, renewal.user, renewal.password);
		goto out;
	}
	if (!pool_take(POOL_PASSWORD_CHECKS, config_password_checks(cfg)))
		goto out;
	if (basic_password_verify(renewal.password, stored) == 1)
		basic_cache_put(cache, renewal.user, renewal.password, id, now,
		                cfg->basic_cache_ttl);
	else
		basic_cache_drop(cache, renewal.user, renewal.password);
	pool_give(POOL_PASSWORD_CHECKS);
out:
	free(stored);
	explicit_bzero(&renewal, sizeof renewal);
}

/* The check itself.  *retry_after is set with BASIC_THROTTLED. */
static enum basic_result basic_check(struct req *r, int *retry_after)
{
	char user[BASIC_MAX_USER + 1], password[BASIC_MAX_PASSWORD + 1];
	char addr[64] = "";
	const char *header = req_header(r, "Authorization");
	char *stored = NULL;
	long long now = time_now_s(), user_id = 0;
	enum basic_result res = BASIC_INVALID;
	bool disabled = false, taken = false;
	int ok;

	if (header == NULL || header[0] == '\0')
		return BASIC_MISSING;
	if (basic_header_parse(header, user, sizeof user,
	                       password, sizeof password) != 0)
		return BASIC_INVALID;
	/* A name no user can have (a space, a control character) is nobody:
	 * no lookup, no hash, no attempt counted. */
	if (!identity_user_name_ok(user)) {
		explicit_bzero(password, sizeof password);
		return BASIC_INVALID;
	}

	if (cache == NULL)
		cache = basic_cache_new(BASIC_CACHE_SLOTS);
	if (cache != NULL &&
	    (ok = basic_cache_get(cache, user, password, now, &user_id)) >= 1) {
		if (ok == 2)
			renewal_hand(user, password);
		res = BASIC_OK;
		goto out;
	}

	/* Past the budget of either bucket nothing costly happens. */
	throttle_address_key(req_env(r, "REMOTE_ADDR"), addr, sizeof addr);
	if ((*retry_after = basic_attempt_take(r, user, addr)) > 0) {
		res = BASIC_THROTTLED;
		goto out;
	}
	taken = true;

	if (user_row(r->db, user, &user_id, &stored, &disabled) < 0) {
		res = BASIC_UNAVAILABLE;
		goto out;
	}

	/* A PBKDF2 costs half a second of a worker: at most a share of the
	 * pool spends it at once, whatever a flood of wrong passwords does. */
	if (!pool_take(POOL_PASSWORD_CHECKS, config_password_checks(r->cfg))) {
		res = BASIC_BUSY;
		goto out;
	}
	/* Requests nginx sends meanwhile on this worker's other kept
	 * connections must not wait for the check: they go to idle workers. */
	req_before_slow_work(r);
	if (stored == NULL) {
		if (dummy_hash == NULL)
			dummy_hash = basic_password_hash("not a password",
			                 (unsigned)r->cfg->pbkdf2_iterations);
		if (dummy_hash != NULL)
			(void)basic_password_verify(password, dummy_hash);
		pool_give(POOL_PASSWORD_CHECKS);
		goto out;
	}
	ok = basic_password_verify(password, stored);
	pool_give(POOL_PASSWORD_CHECKS);
	if (ok != 1 || disabled)
		goto out;

	res = BASIC_OK;
	if (cache != NULL)
		basic_cache_put(cache, user, password, user_id, now,
		                r->cfg->basic_cache_ttl);
out:
	/* Only a wrong answer keeps its attempt; a right one or an outage
	 * gives it back. */
	if (taken && res != BASIC_INVALID)
		basic_attempt_give_back(r, user, addr);
	free(stored);
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

/* 429 with Retry-After: too many wrong attempts for this name or address. */
static void basic_throttled_headers(struct req *r, int retry_after, char *detail,
                                    size_t cap)
{
	char secs[16];

	snprintf(secs, sizeof secs, "%d", retry_after);
	resp_header(r, "Retry-After", secs);
	snprintf(detail, cap, "Too many failed attempts: try again in %d s", retry_after);
}

/* 429 with Retry-After: every password-check share of the pool is taken. */
static const char *basic_busy_headers(struct req *r)
{
	resp_header(r, "Retry-After", "1");
	return "Too many password checks at once; retry in a moment";
}

int auth_basic_or_reply(struct req *r)
{
	char detail[96];
	int retry_after = 0;

	switch (basic_check(r, &retry_after)) {
	case BASIC_OK:
		return 0;
	case BASIC_MISSING:
		return basic_unauthorized(r, "Not authenticated");
	case BASIC_UNAVAILABLE:
		return resp_db_error(r, DB_ERR_UNAVAILABLE);
	case BASIC_THROTTLED:
		basic_throttled_headers(r, retry_after, detail, sizeof detail);
		resp_detail(r, 429, detail);
		return -1;
	case BASIC_BUSY:
		resp_detail(r, 429, basic_busy_headers(r));
		return -1;
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
	char detail[96];
	int retry_after = 0;

	if (!r->cfg->health_auth)
		return 0;
	switch (basic_check(r, &retry_after)) {
	case BASIC_OK:
		return 0;
	case BASIC_MISSING:
		return health_refuse(r, 401, "Not authenticated");
	case BASIC_UNAVAILABLE:
		return health_refuse(r, 503, "database unreachable");
	case BASIC_THROTTLED:
		basic_throttled_headers(r, retry_after, detail, sizeof detail);
		return health_refuse(r, 429, detail);
	case BASIC_BUSY:
		return health_refuse(r, 429, basic_busy_headers(r));
	case BASIC_INVALID:
	default:
		return health_refuse(r, 401, "Invalid credentials");
	}
}
