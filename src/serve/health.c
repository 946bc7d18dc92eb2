/* health.c - GET /health: can this worker do its job right now?
 *
 * Healthy means the database answers a round trip and the storage root is
 * writable; either failing is a 503 with the reason.  The probe reconnects
 * on the way, so health turns green again by itself once MariaDB is back. */
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
	if (db_ping(r->db) != DB_OK) {
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
