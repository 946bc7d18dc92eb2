/* health.c - GET /health: can this worker do its job right now?
 *
 * Healthy means the database answers a round trip and the storage root is
 * writable; either failing is a 503 with the reason.  The probe reconnects
 * on the way, so health turns green again by itself once MariaDB is back.
 *
 * A successful ping is reused by this worker for health_ping_cache_ms, so a
 * monitor polling hard costs a round trip per window, not per request.  Only
 * success is remembered: a failed ping clears it, and a database that goes
 * away is reported at most one window later. */
#include <stdbool.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "serve/routes.h"
#include "util/config.h"
#include "util/log.h"
#include "util/timeutil.h"

static double health_ping_ok_ms = -1.0;  /* when this worker last pinged fine */

static bool health_db_ok(struct req *r)
{
	double now = time_mono_ms();
	int window = r->cfg->health_ping_cache_ms;

	if (window > 0 && health_ping_ok_ms >= 0 && now - health_ping_ok_ms < window)
		return true;
	if (db_ping(r->db) != DB_OK) {
		health_ping_ok_ms = -1.0;
		return false;
	}
	health_ping_ok_ms = now;
	return true;
}

int health_get(struct req *r)
{
	struct json_object *o;
	const char *problem = NULL;
	char ts[40], q[512];
	struct verror e;

	/* It takes no query: a parameter is refused like on every route. */
	if (validate_query(vfields_none, r, NULL, NULL, &e) != 0)
		return resp_detail(r, 400, e.message);
	o = json_object_new_object();
	if (!health_db_ok(r)) {
		problem = "database unreachable";
		log_kv(LOG_WARN, "health: database unreachable", "error=%s",
		       log_quote(q, sizeof q, db_error(r->db)));
	} else if (access(r->cfg->storage_root, W_OK | X_OK) != 0) {
		problem = "storage not writable";
		log_kv(LOG_WARN, "health: storage not writable", "path=%s",
		       log_quote(q, sizeof q, r->cfg->storage_root));
	}

	json_object_object_add(o, "status",
	    json_object_new_string(problem == NULL ? "healthy" : "unhealthy"));
	if (problem != NULL)
		json_object_object_add(o, "detail", json_object_new_string(problem));
	json_object_object_add(o, "timestamp",
	    json_object_new_string(time_iso8601_now(ts, sizeof ts)));
	return resp_json(r, problem == NULL ? 200 : 503, o);
}
