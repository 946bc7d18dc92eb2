/* testing.c - probes for the API tests: compiled only with
 * --enable-test-hooks, and routed there only with testing_routes = on.
 *
 * They let a test see the worker pool from outside: which worker answered,
 * a request that stays in flight while a signal arrives, and the identity
 * each authentication path produced.  A production build has none. */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "retrieval/pass_share.h"
#include "serve/routes.h"

#define SLEEP_MAX_MS 10000

int testing_pid(struct req *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "pid", json_object_new_int64(getpid()));
	return resp_json(r, 200, o);
}

/* slow=true: first hand the worker's other connections to the others, as
 * slow work does (req_before_slow_work). */
struct sleep_query {
	long long ms;
	bool slow;
};

static const struct vfield sleep_query[] = {
	{ "ms", V_INT, V_REQUIRED, 0, SLEEP_MAX_MS, NULL, NULL, VOFF(struct sleep_query, ms) },
	{ "slow", V_BOOL, 0, 0, 0, NULL, NULL, VOFF(struct sleep_query, slow) },
	VFIELDS_END
};

int testing_sleep(struct req *r)
{
	struct sleep_query q = { 0, false };
	struct json_object *o;
	struct timespec ts;
	struct verror e;
	long long ms;

	if (validate_query(sleep_query, r, &q, NULL, &e) != 0)
		return resp_detail(r, 400, e.message);
	if (q.slow)
		req_before_slow_work(r);
	ms = q.ms;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	o = json_object_new_object();
	json_object_object_add(o, "slept_ms", json_object_new_int64(ms));
	return resp_json(r, 200, o);
}

int testing_echo(struct req *r)
{
	struct json_object *body = req_json_body_or_reply(r);
	struct json_object *o;

	if (body == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "echo", json_object_get(body));
	return resp_json(r, 200, o);
}

int testing_whoami(struct req *r)
{
	struct json_object *o = json_object_new_object();
	struct json_object *perms = json_object_new_array();

	for (size_t i = 0; i < r->id.npermissions; i++)
		json_object_array_add(perms,
		    json_object_new_string(r->id.permissions[i]));
	json_object_object_add(o, "sub", json_object_new_string(r->id.sub));
	json_object_object_add(o, "customer_id",
	    json_object_new_string(r->id.customer_id));
	json_object_object_add(o, "customer_name",
	    json_object_new_string(r->id.customer_name));
	json_object_object_add(o, "permissions", perms);
	return resp_json(r, 200, o);
}

/* Reads the user back from the database (even when the credentials came
 * from the worker's cache), so it also shows how a DB outage is answered. */
int testing_basic(struct req *r)
{
	struct json_object *o;
	struct db_stmt *st;
	struct db *db;
	int rc;

	if ((db = req_db_or_reply(r)) == NULL)
		return -1;
	st = db_query(db, "SELECT name FROM api_users WHERE id = ?", "i",
	              r->id.user_id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(db));
	if ((rc = db_fetch(st)) != 1) {
		db_done(st);
		return rc < 0 ? resp_db_error(r, db_last_err(db))
		              : resp_detail(r, 404, "Not Found");
	}
	o = json_object_new_object();
	json_object_object_add(o, "user", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "user_id", json_object_new_int64(r->id.user_id));
	db_done(st);
	return resp_json(r, 200, o);
}

/* The board of shared passes (pass_share.h): passes run, questions they
 * ranked, questions posted and taken now, and the workers in a pass. */
int testing_passes(struct req *r)
{
	struct json_object *o = json_object_new_object();
	struct json_object *pids = json_object_new_array();
	struct pass_share_stats st;
	long passing[PASS_SLOTS];
	size_t n = pass_share_stats(&st, passing, PASS_SLOTS);

	for (size_t i = 0; i < n; i++)
		json_object_array_add(pids, json_object_new_int64(passing[i]));
	json_object_object_add(o, "passes", json_object_new_int64((int64_t)st.passes));
	json_object_object_add(o, "questions", json_object_new_int64((int64_t)st.questions));
	json_object_object_add(o, "led_on_tick", json_object_new_int64((int64_t)st.led_on_tick));
	json_object_object_add(o, "posted", json_object_new_int64((int64_t)st.posted));
	json_object_object_add(o, "taken", json_object_new_int64((int64_t)st.taken));
	json_object_object_add(o, "passing", pids);
	return resp_json(r, 200, o);
}
