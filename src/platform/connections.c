/* connections.c - source credentials: POST/GET/DELETE /platform/connections.
 *
 * A connection holds what a job needs to reach its source database.  The
 * password is sealed with AES-256-GCM (util/aead.h) under the key of
 * connection_key_file, with the connection id as associated data, and is
 * never part of an answer or a log line: nothing here reads it back. */
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/platform.h"
#include "util/aead.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/uuid.h"

#define CONN_PASSWORD_MAX 1024          /* bytes; sealed it is 1052 */
#define CONN_OPTIONS_MAX  65536         /* bytes of the options JSON */

/* The JDBC plugins of DESIGN.md (database kinds A-D). */
static const char *const plugins[] = {
	"postgres", "mysql", "mariadb", "oracle", "sqlserver", NULL
};

/* --- the request body ---------------------------------------------------- */

struct conn_in {
	const char *name, *plugin, *host, *database, *user;
	const char *password;
	int plugin_index;               /* in plugins[] */
	long long port;
	struct json_object *options;    /* NULL when not given or null */
};

#define IN(m) VOFF(struct conn_in, m)

const struct vfield platform_connection_body[] = {
	{ "name",     V_STR, V_REQUIRED, 1, 255,   NULL, NULL, IN(name) },
	{ "plugin",   V_ENUM, V_REQUIRED, 0, 0,    plugins, NULL, IN(plugin_index) },
	{ "host",     V_STR, V_REQUIRED, 1, 255,   NULL, NULL, IN(host) },
	{ "port",     V_INT, V_REQUIRED, 1, 65535, NULL, NULL, IN(port) },
	{ "database", V_STR, V_REQUIRED, 1, 255,   NULL, NULL, IN(database) },
	{ "user",     V_STR, V_REQUIRED, 1, 255,   NULL, NULL, IN(user) },
	{ "password", V_STR, V_REQUIRED | V_BYTES, 0, CONN_PASSWORD_MAX, NULL, NULL,
	  IN(password) },
	{ "options",  V_OBJ, V_NULL, 0, CONN_OPTIONS_MAX, NULL, NULL, IN(options) },
	VFIELDS_END
};

/* --- rendering ----------------------------------------------------------- */

#define CONN_COLUMNS \
	"id, customer_id, name, plugin, host, port, database_name, user_name, " \
	"options, " ISO_MS("created_at") ", " ISO_MS("updated_at")

/* A connection row (CONN_COLUMNS) as its API object: never a password. */
static struct json_object *conn_render(const struct db_stmt *st)
{
	static const char *const names[] = {
		"connection_id", "customer_id", "name", "plugin", "host",
	};
	struct json_object *o = json_object_new_object(), *opts = NULL;

	for (unsigned i = 0; i < 5; i++)
		json_object_object_add(o, names[i],
		    json_object_new_string(db_col_str(st, i)));
	json_object_object_add(o, "port", json_object_new_int64(db_col_ll(st, 5)));
	json_object_object_add(o, "database",
	    json_object_new_string(db_col_str(st, 6)));
	json_object_object_add(o, "user", json_object_new_string(db_col_str(st, 7)));
	if (!db_col_null(st, 8))
		opts = json_tokener_parse(db_col_str(st, 8));
	json_object_object_add(o, "options",
	    opts != NULL ? opts : json_object_new_object());
	json_object_object_add(o, "created_at",
	    json_object_new_string(db_col_str(st, 9)));
	json_object_object_add(o, "updated_at",
	    json_object_new_string(db_col_str(st, 10)));
	return o;
}

/* The caller's connection id; the canonical (lowercase, hyphens) form of
 * a UUID written with '-' or '_', or -1 when malformed. */
static int conn_id_parse(const char *in, char out[UUID_STR_LEN])
{
	if (platform_pipeline_id_parse(in, out) != 0)
		return -1;
	for (char *p = out; *p != '\0'; p++)
		if (*p == '_')
			*p = '-';
	return 0;
}

/* Answer the caller's connection id with 200 (or 201), or 404. */
static int conn_reply_one(struct req *r, int status, const char *id)
{
	struct db_stmt *st;
	int rc;

	st = db_query(r->db, "SELECT " CONN_COLUMNS " FROM connections"
	              " WHERE id = ? AND customer_id = ?",
	              "ss", id, r->id.customer_id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	rc = db_fetch(st);
	if (rc <= 0) {
		db_done(st);
		return rc < 0 ? resp_db_error(r, db_last_err(r->db))
		              : platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND);
	}
	rc = resp_json(r, status, conn_render(st));
	db_done(st);
	return rc;
}

/* --- handlers ---------------------------------------------------------------- */

static int conn_create(struct req *r)
{
	struct json_object *body = req_json_body_or_reply(r);
	struct conn_in in = { 0 };
	unsigned char *sealed;
	const char *options;
	char id[UUID_STR_LEN];
	size_t password_len;
	struct verror e;
	long long n;

	if (body == NULL)
		return -1;
	if (validate_json(platform_connection_body, body, &in, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	in.plugin = plugins[in.plugin_index];
	password_len = strlen(in.password);     /* the validator refuses NUL */
	options = in.options == NULL ? NULL : json_object_to_json_string_ext(
	    in.options, JSON_C_TO_STRING_PLAIN);
	if (!r->cfg->connection_key_loaded)
		return resp_internal(r, "connection key not loaded");
	if (auth_customer_ensure_or_reply(r) == NULL)
		return -1;
	if (uuid_v4(id, '-') != 0)
		return resp_internal(r, "CSPRNG failed");
	sealed = arena_alloc(r->arena, password_len + AEAD_OVERHEAD);
	n = aead_seal(r->cfg->connection_key, id, strlen(id),
	              in.password, password_len, sealed);
	/* The plaintext is not needed any more: do not leave it in the heap
	 * for a later crash dump to find. */
	explicit_bzero((char *)in.password, password_len);
	if (n != 0)
		return resp_internal(r, "sealing the password failed");
	n = db_exec(r->db, "INSERT INTO connections (id, customer_id, name, plugin,"
	            " host, port, database_name, user_name, password_enc, options)"
	            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "sssssissbs",
	            id, r->id.customer_id, in.name, in.plugin, in.host, in.port,
	            in.database, in.user, sealed, password_len + AEAD_OVERHEAD,
	            options);
	if (n == DB_ERR_DUPLICATE)
		return platform_reply(r, PLATFORM_CONNECTION_EXISTS);
	if (n < 0)
		return resp_db_error(r, (int)n);
	return conn_reply_one(r, 201, id);
}

static int conn_list(struct req *r)
{
	struct json_object *list;
	struct verror e;

	if (validate_query(vfields_none, r, NULL, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	if (req_db_or_reply(r) == NULL)
		return -1;
	list = req_rows_or_reply(r, db_query(r->db, "SELECT " CONN_COLUMNS " FROM "
	    "connections WHERE customer_id = ? ORDER BY name, id", "s",
	    r->id.customer_id), conn_render);
	if (list == NULL)
		return -1;
	return resp_json(r, 200, list);
}

static int conn_get(struct req *r)
{
	char id[UUID_STR_LEN];

	if (conn_id_parse(req_param(r, "connection_id"), id) != 0)
		return platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	return conn_reply_one(r, 200, id);
}

static int conn_delete(struct req *r)
{
	struct json_object *o;
	char id[UUID_STR_LEN];
	long long n;

	if (conn_id_parse(req_param(r, "connection_id"), id) != 0)
		return platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND);
	if (req_db_or_reply(r) == NULL)
		return -1;
	/* jobs.connection_id refuses (RESTRICT) while a job uses it. */
	n = db_exec(r->db, "DELETE FROM connections WHERE id = ? AND customer_id = ?",
	            "ss", id, r->id.customer_id);
	if (n == DB_ERR_FOREIGN_KEY)
		return platform_reply(r, PLATFORM_CONNECTION_IN_USE);
	if (n < 0)
		return resp_db_error(r, (int)n);
	if (n == 0)
		return platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND);
	o = json_object_new_object();
	json_object_object_add(o, "connection_id", json_object_new_string(id));
	json_object_object_add(o, "status",
	                       json_object_new_string("CONNECTION_DELETED"));
	return resp_json(r, 200, o);
}

const struct route platform_connection_routes[] = {
	{ "POST",   "/platform/connections", conn_create, ROUTE_AUTH_JWT,
	  "PLATFORM.WRITE" },
	{ "GET",    "/platform/connections", conn_list, ROUTE_AUTH_JWT,
	  "PLATFORM.READ" },
	{ "GET",    "/platform/connections/{connection_id}", conn_get,
	  ROUTE_AUTH_JWT, "PLATFORM.READ" },
	{ "DELETE", "/platform/connections/{connection_id}", conn_delete,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
