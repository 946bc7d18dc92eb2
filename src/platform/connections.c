/* connections.c - source credentials: POST/GET/DELETE /platform/connections.
 *
 * A connection holds what a job needs to reach its source database.  The
 * password is sealed with AES-256-GCM (util/aead.h) under the key of
 * connection_key_file, with the connection id as associated data, and is
 * never part of an answer or a log line: nothing here reads it back. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "platform/platform.h"
#include "util/aead.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/uuid.h"
#include "util/str.h"

#define CONN_PASSWORD_MAX 1024          /* bytes; sealed it is 1052 */
#define CONN_OPTIONS_MAX  65536         /* bytes of the options JSON */

/* The JDBC plugins of DESIGN.md (database kinds A-D). */
static const char *const plugins[] = {
	"postgres", "mysql", "mariadb", "oracle", "sqlserver",
};

/* --- the request body ---------------------------------------------------- */

enum ftype { F_STR, F_INT, F_OBJ };

struct conn_in {
	const char *name, *plugin, *host, *database, *user;
	const char *password;
	size_t password_len;
	long long port;
	const char *options;      /* JSON text, NULL when not given */
};

/* The body's fields, their bounds, and where their value goes. */
struct field {
	const char *name;
	enum ftype type;
	bool required;
	long long min, max;       /* characters (F_STR), value (F_INT) */
	bool bytes;               /* F_STR counted in bytes, not characters */
	size_t off;               /* in struct conn_in */
};

#define IN(m) offsetof(struct conn_in, m)

static const struct field fields[] = {
	{ "name",     F_STR, true,  1, 255,   false, IN(name) },
	{ "plugin",   F_STR, true,  1, 64,    false, IN(plugin) },
	{ "host",     F_STR, true,  1, 255,   false, IN(host) },
	{ "port",     F_INT, true,  1, 65535, false, IN(port) },
	{ "database", F_STR, true,  1, 255,   false, IN(database) },
	{ "user",     F_STR, true,  1, 255,   false, IN(user) },
	{ "password", F_STR, true,  0, CONN_PASSWORD_MAX, true, IN(password) },
	{ "options",  F_OBJ, false, 0, CONN_OPTIONS_MAX,  true, IN(options) },
};

#define NFIELDS (sizeof fields / sizeof fields[0])

static int bad(struct req *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* 400 {"detail": "..."}; returns -1. */
static int bad(struct req *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	resp_detail(r, 400, msg);
	return -1;
}

static int check_str(struct req *r, const struct field *f,
                     struct json_object *v, const char **out, size_t *outlen)
{
	const char *s;
	size_t len, count;

	if (!json_object_is_type(v, json_type_string))
		return bad(r, "%s must be a string", f->name);
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	/* Values are bound as C strings: an embedded NUL would cut them short. */
	if (memchr(s, '\0', len) != NULL)
		return bad(r, "%s must not contain NUL characters", f->name);
	count = f->bytes ? len : str_utf8_chars(s, len);
	if ((long long)count < f->min || (long long)count > f->max) {
		if (f->bytes)
			return bad(r, "%s must be %lld to %lld bytes long",
			           f->name, f->min, f->max);
		return bad(r, "%s must be %lld to %lld characters long",
		           f->name, f->min, f->max);
	}
	*out = s;
	*outlen = len;
	return 0;
}

static int check_obj(struct req *r, const struct field *f,
                     struct json_object *v, const char **out)
{
	if (json_object_is_type(v, json_type_null)) {
		*out = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_object))
		return bad(r, "%s must be an object", f->name);
	*out = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	if ((long long)strlen(*out) > f->max)
		return bad(r, "%s is too large (at most %lld bytes of JSON)",
		           f->name, f->max);
	return 0;
}

/* One field of the body checked against its row of fields[], its typed
 * value stored into in. */
static int field_check(struct req *r, const struct field *f,
                       struct json_object *v, struct conn_in *in)
{
	char *dst = (char *)in + f->off;
	long long n;
	size_t len = 0;

	switch (f->type) {
	case F_STR:
		if (check_str(r, f, v, (const char **)(void *)dst, &len) != 0)
			return -1;
		if (f->off == IN(password))
			in->password_len = len;
		return 0;
	case F_INT:
		n = json_object_get_int64(v);
		if (!json_object_is_type(v, json_type_int) || n < f->min || n > f->max)
			return bad(r, "%s must be an integer from %lld to %lld",
			           f->name, f->min, f->max);
		*(long long *)(void *)dst = n;
		return 0;
	case F_OBJ:
		return check_obj(r, f, v, (const char **)(void *)dst);
	}
	return -1;
}

static bool plugin_known(const char *p)
{
	for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++)
		if (strcmp(p, plugins[i]) == 0)
			return true;
	return false;
}

/* The body as typed values; 0, or a 400 naming the field was answered. */
static int conn_parse(struct req *r, struct json_object *body,
                      struct conn_in *in)
{
	memset(in, 0, sizeof *in);
	if (!json_object_is_type(body, json_type_object))
		return bad(r, "The body must be a JSON object");
	json_object_object_foreach(body, key, val) {
		size_t i;

		(void)val;
		for (i = 0; i < NFIELDS && strcmp(key, fields[i].name) != 0; i++)
			;
		if (i == NFIELDS)
			return bad(r, "Unknown field: %.64s", key);
	}
	for (size_t i = 0; i < NFIELDS; i++) {
		struct json_object *v;

		if (!json_object_object_get_ex(body, fields[i].name, &v)) {
			if (fields[i].required)
				return bad(r, "%s is required", fields[i].name);
			continue;
		}
		if (field_check(r, &fields[i], v, in) != 0)
			return -1;
	}
	if (!plugin_known(in->plugin))
		return bad(r, "plugin must be one of postgres, mysql, mariadb, "
		           "oracle, sqlserver");
	return 0;
}

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
		              : resp_detail(r, 404, "Connection not found");
	}
	rc = resp_json(r, status, conn_render(st));
	db_done(st);
	return rc;
}

/* --- handlers ---------------------------------------------------------------- */

static int conn_create(struct req *r)
{
	struct json_object *body = req_json_body_or_reply(r);
	unsigned char *sealed;
	char id[UUID_STR_LEN];
	struct conn_in in;
	long long n;

	if (body == NULL || conn_parse(r, body, &in) != 0)
		return -1;
	if (!r->cfg->connection_key_loaded)
		return resp_internal(r, "connection key not loaded");
	if (auth_customer_ensure_or_reply(r) == NULL)
		return -1;
	if (uuid_v4(id, '-') != 0)
		return resp_internal(r, "CSPRNG failed");
	sealed = arena_alloc(r->arena, in.password_len + AEAD_OVERHEAD);
	n = aead_seal(r->cfg->connection_key, id, strlen(id),
	              in.password, in.password_len, sealed);
	/* The plaintext is not needed any more: do not leave it in the heap
	 * for a later crash dump to find. */
	explicit_bzero((char *)in.password, in.password_len);
	if (n != 0)
		return resp_internal(r, "sealing the password failed");
	n = db_exec(r->db, "INSERT INTO connections (id, customer_id, name, plugin,"
	            " host, port, database_name, user_name, password_enc, options)"
	            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "sssssissbs",
	            id, r->id.customer_id, in.name, in.plugin, in.host, in.port,
	            in.database, in.user, sealed, in.password_len + AEAD_OVERHEAD,
	            in.options);
	if (n == DB_ERR_DUPLICATE)
		return resp_detail(r, 409, "A connection with this name already exists");
	if (n < 0)
		return resp_db_error(r, (int)n);
	return conn_reply_one(r, 201, id);
}

static int conn_list(struct req *r)
{
	struct json_object *list;

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
		return resp_detail(r, 404, "Connection not found");
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
		return resp_detail(r, 404, "Connection not found");
	if (req_db_or_reply(r) == NULL)
		return -1;
	/* jobs.connection_id refuses (RESTRICT) while a job uses it. */
	n = db_exec(r->db, "DELETE FROM connections WHERE id = ? AND customer_id = ?",
	            "ss", id, r->id.customer_id);
	if (n == DB_ERR_FOREIGN_KEY)
		return resp_detail(r, 409, "The connection is used by a job: change "
		                   "or delete that job's pipeline first");
	if (n < 0)
		return resp_db_error(r, (int)n);
	if (n == 0)
		return resp_detail(r, 404, "Connection not found");
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
