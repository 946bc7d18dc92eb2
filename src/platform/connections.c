/* connections.c - source credentials: POST/GET/PATCH/DELETE
 * /platform/connections (connection_check.c tries one).
 *
 * A connection holds what a job needs to reach its source database.  The
 * password is sealed with AES-256-GCM (util/aead.h) under the key of
 * connection_key_file, with the connection id as associated data, and is
 * never part of an answer or a log line: nothing here reads it back. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/dbkind.h"
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

/* The password sealed for connection id (password_len + AEAD_OVERHEAD
 * bytes in r's arena), or NULL.  The plaintext is wiped either way: it is
 * not needed any more, and a later crash dump must not find it. */
static unsigned char *conn_seal(struct req *r, const char *id,
                                const char *password, size_t password_len)
{
	unsigned char *sealed = arena_alloc(r->arena, password_len + AEAD_OVERHEAD);
	int rc = sealed == NULL ? -1 : aead_seal(r->cfg->connection_key, id,
	    strlen(id), password, password_len, sealed);

	explicit_bzero((char *)password, password_len);
	return rc == 0 ? sealed : NULL;
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
	if (validate_query(vfields_none, r, NULL, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
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
	if ((sealed = conn_seal(r, id, in.password, password_len)) == NULL)
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

/* GET ?page=&limit=: without either, the whole list as a bare array (the
 * answer callers had before pages); with one, a page of it in the storage
 * explorer's listing shape, {"connections": [...], "pagination": {...}}. */
struct conn_query {
	struct page_query page;
};

const struct vfield platform_connection_query[] = {
	PAGE_QUERY_ROWS(struct conn_query, page),
	VFIELDS_END
};

static int conn_list(struct req *r)
{
	struct conn_query q = { PAGE_QUERY_INIT };
	struct json_object *list, *o;
	long long total = 0, limit = LLONG_MAX, offset = 0;
	vgiven paged = 0;
	struct verror e;

	if (validate_query(platform_connection_query, r, &q, &paged, &e) != 0)
		return platform_reply_verror(r, &e);
	if (req_db_or_reply(r) == NULL)
		return -1;
	if (paged) {
		if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM "
		    "connections WHERE customer_id = ?", "s", r->id.customer_id),
		    &total) != 0)
			return -1;
		limit = q.page.limit;
		offset = page_offset(&q.page);
	}
	list = req_rows_or_reply(r, db_query(r->db, "SELECT " CONN_COLUMNS " FROM "
	    "connections WHERE customer_id = ? ORDER BY name, id LIMIT ? OFFSET ?",
	    "sii", r->id.customer_id, limit, offset), conn_render);
	if (list == NULL)
		return -1;
	if (!paged)
		return resp_json(r, 200, list);
	o = json_object_new_object();
	json_object_object_add(o, "connections", list);
	json_object_object_add(o, "pagination",
	                       pagination_json(q.page.page, q.page.limit, total));
	return resp_json(r, 200, o);
}

static int conn_get(struct req *r)
{
	char id[UUID_STR_LEN];

	if (platform_connection_ref_or_reply(r, id) != 0)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	return conn_reply_one(r, 200, id);
}

/* PATCH: the create table's rows, none required (absent or null leaves a
 * field as it is; options null clears it).  Room for its rows and the end. */
#define CONN_PATCH_ROWS 16

static void conn_patch_fields(struct vfield out[CONN_PATCH_ROWS])
{
	size_t i;

	for (i = 0; platform_connection_body[i].name != NULL &&
	            i < CONN_PATCH_ROWS - 1; i++) {
		out[i] = platform_connection_body[i];
		out[i].flags &= ~(unsigned)V_REQUIRED;
	}
	out[i] = (struct vfield)VFIELDS_END;
}

/* The caller's connection's plugin into plugin, 0; or -1 after answering
 * (404 for an unknown id, or another customer's). */
static int conn_plugin_or_reply(struct req *r, const char *id,
                                char plugin[64])
{
	struct db_stmt *st = db_query(r->db, "SELECT plugin FROM connections"
	    " WHERE id = ? AND customer_id = ?", "ss", id, r->id.customer_id);
	int rc;

	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	if ((rc = db_fetch(st)) > 0)
		snprintf(plugin, 64, "%s", db_col_str(st, 0));
	db_done(st);
	if (rc < 0)
		return resp_db_error(r, db_last_err(r->db));
	return rc == 0 ? platform_reply(r, PLATFORM_CONNECTION_NOT_FOUND) : 0;
}

static int conn_patch(struct req *r)
{
	struct vfield fields[CONN_PATCH_ROWS];
	struct json_object *body;
	struct conn_in in = { 0 };
	unsigned char *sealed = NULL;
	const char *options = NULL;
	char id[UUID_STR_LEN], plugin[64];
	size_t password_len = 0;
	struct verror e;
	vgiven given;
	long long n;

	if (platform_connection_ref_or_reply(r, id) != 0)
		return -1;
	if ((body = req_json_body_or_reply(r)) == NULL)
		return -1;
	conn_patch_fields(fields);
	if (validate_json(fields, body, &in, &given, &e) != 0)
		return platform_reply_verror(r, &e);
	if (given == 0)
		return platform_reply_text(r, PLATFORM_BAD_REQUEST,
		    "The body names no field to change");
	if (in.password != NULL && !r->cfg->connection_key_loaded)
		return resp_internal(r, "connection key not loaded");
	if (req_db_or_reply(r) == NULL)
		return -1;
	if (conn_plugin_or_reply(r, id, plugin) != 0)
		return -1;
	if (validate_given(fields, given, "plugin")) {
		in.plugin = plugins[in.plugin_index];
		/* mysql <-> mariadb is one driver; another kind is another
		 * dialect, which the connection's jobs were validated for. */
		if (dbkind_of_plugin(in.plugin) != dbkind_of_plugin(plugin))
			return platform_reply(r, PLATFORM_CONNECTION_KIND_FIXED);
	}
	if (validate_given(fields, given, "options") && in.options != NULL)
		options = json_object_to_json_string_ext(in.options,
		                                         JSON_C_TO_STRING_PLAIN);
	if (in.password != NULL) {
		password_len = strlen(in.password);
		/* The same associated data as at create: the connection id. */
		if ((sealed = conn_seal(r, id, in.password, password_len)) == NULL)
			return resp_internal(r, "sealing the password failed");
	}
	/* One statement: an absent field binds NULL (or port 0) and keeps
	 * the stored value. */
	n = db_exec(r->db, "UPDATE connections SET name = COALESCE(?, name),"
	    " plugin = COALESCE(?, plugin), host = COALESCE(?, host),"
	    " port = IF(? = 0, port, ?), database_name = COALESCE(?, database_name),"
	    " user_name = COALESCE(?, user_name),"
	    " password_enc = COALESCE(?, password_enc),"
	    " options = IF(? = 1, ?, options), updated_at = CURRENT_TIMESTAMP(3)"
	    " WHERE id = ? AND customer_id = ?", "sssiissbisss",
	    in.name, in.plugin, in.host, in.port, in.port, in.database, in.user,
	    sealed, sealed == NULL ? (size_t)0 : password_len + AEAD_OVERHEAD,
	    (long long)validate_given(fields, given, "options"), options,
	    id, r->id.customer_id);
	if (n == DB_ERR_DUPLICATE)
		return platform_reply(r, PLATFORM_CONNECTION_EXISTS);
	if (n < 0)
		return resp_db_error(r, (int)n);
	return conn_reply_one(r, 200, id);
}

static int conn_delete(struct req *r)
{
	struct json_object *o;
	char id[UUID_STR_LEN];
	long long n;

	if (platform_connection_ref_or_reply(r, id) != 0)
		return -1;
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
	{ "PATCH",  "/platform/connections/{connection_id}", conn_patch,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "DELETE", "/platform/connections/{connection_id}", conn_delete,
	  ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
