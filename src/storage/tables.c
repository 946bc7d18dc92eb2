/* tables.c - warehouse tables of the storage explorer:
 *   POST /storage-explorer/tables/validate-name
 *   POST /storage-explorer/tables             (create, in the warehouse too)
 *   GET  /storage-explorer/tables             (the caller's, in pages)
 *   GET  /storage-explorer/tables/{tableId}   (one, with its links)
 * and the route table of these and of links.c.
 *
 * Where a table lives: in the customer's own warehouse database of its
 * schema_name (or warehouse_default_schema), wh_schema_physical's
 * `wh_<schema>_<16 hex>`, the same as a pipeline naming that schema; the
 * table keeps its name.  The row records both names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "db/warehouse.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/uuid.h"

static int validate_name_post(struct req *r);
static int table_create(struct req *r);
static int tables_list(struct req *r);
static int table_get(struct req *r);

const struct route storage_table_routes[] = {
	{ "POST", "/storage-explorer/tables/validate-name", validate_name_post,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "POST", "/storage-explorer/tables", table_create,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "GET", "/storage-explorer/tables", tables_list,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "GET", "/storage-explorer/tables/{table_id}", table_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "GET", "/storage-explorer/tables/{table_id}/datasets", storage_table_datasets_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "POST", "/storage-explorer/tables/{table_id}/datasets/{dataset_id}",
	  storage_link_post, ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	ROUTES_END
};

/* --- answers ------------------------------------------------------------------------- */

static const struct {
	int status;
	const char *code;
	const char *before, *after;       /* the message: before arg after */
} replies[] = {
	[TABLE_NOT_FOUND] = { 404, "table_not_found", "Table not found", "" },
	[TABLE_EXISTS] = { 409, "table_exists", "A table of this name already exists "
	    "(names are compared without regard to case)", "" },
	[TABLE_IN_WAREHOUSE] = { 409, "table_exists", "The warehouse already has a table ", "" },
	[TABLE_WAREHOUSE_ERROR] = { 500, "warehouse_error",
	    "The warehouse could not create the table", "" },
	[TABLE_WAREHOUSE_UNAVAILABLE] = { 503, "warehouse_unavailable",
	    "The warehouse cannot be reached: try again later", "" },
	[LINK_EXISTS] = { 409, "already_linked", "The dataset is already linked to this table", "" },
	[LINK_NOT_INFERRED] = { 409, "dataset_not_ready", "The dataset's schema is not "
	    "inferred yet (status ", "): link it once its status is ready" },
	[LINK_INFERENCE_FAILED] = { 409, "dataset_not_ready", "The dataset's schema "
	    "inference failed: refresh its schema, then link it", "" },
	[LINK_NO_SCHEMA] = { 409, "dataset_not_ready", "The dataset has no readable "
	    "schema: refresh its schema, then link it", "" },
};

int storage_table_reply(struct req *r, enum table_reply what, const char *arg,
                        const char *key, const char *val)
{
	struct json_object *o = json_object_new_object();
	char msg[512];

	snprintf(msg, sizeof msg, "%s%s%s", replies[what].before, arg != NULL ? arg : "",
	         replies[what].after);
	json_object_object_add(o, "error", json_object_new_string(replies[what].code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	if (key != NULL)
		json_object_object_add(o, key, json_object_new_string(val));
	resp_json(r, replies[what].status, o);
	return -1;
}

/* --- ids and the caller's table ------------------------------------------------ */

int storage_uuid_parse(const char *in, char out[STORAGE_TABLE_ID_LEN + 1])
{
	return uuid_parse(in, out);
}

void storage_table_free(struct storage_table *t)
{
	free(t->cols);
	json_object_put(t->columns_json);
	t->cols = NULL;
	t->columns_json = NULL;
	t->ncols = 0;
}

int storage_table_columns_parse(const char *columns_json, struct storage_table *t)
{
	struct json_object *arr = json_tokener_parse(columns_json);
	size_t n;

	if (arr == NULL || !json_object_is_type(arr, json_type_array))
		goto bad;
	n = json_object_array_length(arr);
	t->cols = calloc(n > 0 ? n : 1, sizeof *t->cols);
	if (t->cols == NULL)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *v;
		struct table_column *tc = &t->cols[i];
		char err[160];

		if (!json_object_object_get_ex(c, "name", &v))
			goto bad;
		tc->name = json_object_get_string(v);
		if (!json_object_object_get_ex(c, "type", &v) ||
		    table_type_parse(json_object_get_string(v), &tc->type, err, sizeof err) != 0)
			goto bad;
		tc->nullable = !json_object_object_get_ex(c, "nullable", &v) ||
		               json_object_get_boolean(v);
	}
	t->ncols = n;
	t->columns_json = arr;
	return 0;
bad:
	json_object_put(arr);
	free(t->cols);
	t->cols = NULL;
	return -1;
}

int storage_table_load(struct db *db, const char *customer_id, const char *raw_id,
                       struct storage_table *t)
{
	struct db_stmt *st;
	int rc;

	memset(t, 0, sizeof *t);
	if (storage_uuid_parse(raw_id, t->id) != 0)
		return 0;
	st = db_query(db, "SELECT table_name, schema_name, wh_schema, wh_table, "
	              "columns_json FROM warehouse_tables WHERE id = ? AND customer_id = ?",
	              "ss", t->id, customer_id);
	if (st == NULL)
		return db_last_err(db);
	rc = db_fetch(st);
	if (rc == 1) {
		snprintf(t->table_name, sizeof t->table_name, "%s", db_col_str(st, 0));
		snprintf(t->schema_name, sizeof t->schema_name, "%s", db_col_str(st, 1));
		snprintf(t->wh_schema, sizeof t->wh_schema, "%s", db_col_str(st, 2));
		snprintf(t->wh_table, sizeof t->wh_table, "%s", db_col_str(st, 3));
		if (storage_table_columns_parse(db_col_str(st, 4), t) != 0) {
			log_kv(LOG_ERROR, "stored table columns unreadable", "table=%s", t->id);
			rc = DB_ERR;
		}
	}
	db_done(st);
	if (rc < 0)
		return rc == DB_ERR ? DB_ERR : db_last_err(db);
	return rc;
}

int storage_table_of_caller(struct req *r, const char *customer_id,
                            const char *raw_id, struct storage_table *t)
{
	int rc;

	memset(t, 0, sizeof *t);
	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = storage_table_load(r->db, customer_id, raw_id, t);
	if (rc < 0)
		return resp_db_error(r, rc);
	if (rc == 0)
		return storage_table_reply(r, TABLE_NOT_FOUND, NULL, NULL, NULL);
	return 0;
}

/* --- the Table object ------------------------------------------------------------ */

#define TABLE_COLS "id, table_name, schema_name, wh_schema, wh_table, columns_json, " \
	"created_by, created_at"

static struct json_object *table_row_json(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object();
	const char *schema = db_col_str(st, 2);

	json_object_object_add(o, "table_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "table_name", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "schema_name",
	                       schema[0] != '\0' ? json_object_new_string(schema) : NULL);
	json_object_object_add(o, "columns", json_tokener_parse(db_col_str(st, 5)));
	json_object_object_add(o, "warehouse_schema", json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(o, "warehouse_table", json_object_new_string(db_col_str(st, 4)));
	json_object_object_add(o, "created_by", db_col_null(st, 6) ? NULL
	                       : json_object_new_string(db_col_str(st, 6)));
	json_object_object_add(o, "created_at", storage_json_time(db_col_str(st, 7)));
	return o;
}

/* The Table object of id (a new reference), NULL when not found or on a
 * database error (*db_err: 0 for not found). */
static struct json_object *table_json(struct db *db, const char *customer_id,
                                      const char *id, int *db_err)
{
	struct json_object *o = NULL;
	struct db_stmt *st;
	int rc;

	*db_err = 0;
	st = db_query(db, "SELECT " TABLE_COLS " FROM warehouse_tables "
	              "WHERE id = ? AND customer_id = ?", "ss", id, customer_id);
	if (st == NULL) {
		*db_err = db_last_err(db);
		return NULL;
	}
	if ((rc = db_fetch(st)) == 1)
		o = table_row_json(st);
	else if (rc < 0)
		*db_err = db_last_err(db);
	db_done(st);
	return o;
}

/* --- body helpers ----------------------------------------------------------------- */

static int bad_request(struct req *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad_request(struct req *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return storage_reply_error(r, 400, "invalid_request", "%s", msg);
}

/* The JSON object body with only the allowed keys; NULL after answering. */
static struct json_object *object_body_or_reply(struct req *r,
                                                const char *const *allowed)
{
	struct json_object *body = req_json_body_or_reply(r);

	if (body == NULL)
		return NULL;
	if (!json_object_is_type(body, json_type_object)) {
		bad_request(r, "The body must be a JSON object");
		return NULL;
	}
	json_object_object_foreach(body, key, val) {
		const char *const *a;

		(void)val;
		for (a = allowed; *a != NULL; a++)
			if (strcmp(*a, key) == 0)
				break;
		if (*a == NULL) {
			bad_request(r, "Unknown field '%.64s'", key);
			return NULL;
		}
	}
	return body;
}

/* A string member: 1 present (*out set), 0 absent or null (when optional),
 * -1 answered. */
static int string_member(struct req *r, struct json_object *body, const char *key,
                         bool required, const char **out, size_t *len)
{
	struct json_object *v;

	*out = NULL;
	*len = 0;
	if (!json_object_object_get_ex(body, key, &v) || (!required && v == NULL)) {
		if (required)
			return bad_request(r, "%s is required", key);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return bad_request(r, "%s must be a string", key);
	*out = json_object_get_string(v);
	*len = (size_t)json_object_get_string_len(v);
	return 1;
}

static struct json_object *messages_json(const char (*list)[TABLE_NAME_MSG_MAX], size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(list[i]));
	return a;
}

static struct json_object *names_json(const char (*list)[TABLE_NAME_BUF], size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(list[i]));
	return a;
}

/* A schema_name that passed the naming rules but names the service
 * database or one of MariaDB's own is refused all the same (no table of a
 * customer may land there, whatever the mapping would make of it). */
static void schema_name_reserved_check(struct req *r, const char *name,
                                       struct table_name_check *c)
{
	if (!c->valid || !wh_schema_reserved(name, r->cfg->db_name))
		return;
	c->valid = false;
	c->nwarnings = 0;
	c->nerrors = 1;
	snprintf(c->errors[0], sizeof c->errors[0], "schema_name '%s' is reserved: it "
	         "names the service database or a MariaDB system database", name);
	c->nsuggestions = 1;
	snprintf(c->suggestions[0], sizeof c->suggestions[0], "%.50s_data", c->normalized);
}

/* --- POST /storage-explorer/tables/validate-name ---------------------------------- */

static int validate_name_post(struct req *r)
{
	static const char *const allowed[] = { "table_name", "schema_name", NULL };
	struct table_name_check *tc = NULL, *sc = NULL;
	struct json_object *body, *o, *errors, *warnings;
	const char *name, *schema;
	size_t name_len, schema_len;
	int has_schema, rc = -1;

	if ((body = object_body_or_reply(r, allowed)) == NULL)
		return -1;
	if (string_member(r, body, "table_name", true, &name, &name_len) < 0)
		return -1;
	if ((has_schema = string_member(r, body, "schema_name", false, &schema, &schema_len)) < 0)
		return -1;
	tc = malloc(sizeof *tc);
	sc = malloc(sizeof *sc);
	if (tc == NULL || sc == NULL) {
		rc = resp_internal(r, "out of memory");
		goto out;
	}
	table_name_check(name, name_len, "table_name", tc);
	if (has_schema) {
		table_name_check(schema, schema_len, "schema_name", sc);
		schema_name_reserved_check(r, schema, sc);
	}

	o = json_object_new_object();
	json_object_object_add(o, "valid", json_object_new_boolean(
	    tc->valid && (!has_schema || sc->valid)));
	json_object_object_add(o, "table_name", json_object_new_string_len(name, (int)name_len));
	if (tc->valid && (!has_schema || sc->valid)) {
		json_object_object_add(o, "normalized_name", json_object_new_string(tc->normalized));
		warnings = messages_json(tc->warnings, tc->nwarnings);
		if (has_schema)
			for (size_t i = 0; i < sc->nwarnings; i++)
				json_object_array_add(warnings, json_object_new_string(sc->warnings[i]));
		json_object_object_add(o, "warnings", warnings);
		if (has_schema) {
			json_object_object_add(o, "schema_name",
			                       json_object_new_string_len(schema, (int)schema_len));
			json_object_object_add(o, "normalized_schema_name",
			                       json_object_new_string(sc->normalized));
		}
	} else {
		errors = messages_json(tc->errors, tc->nerrors);
		if (has_schema)
			for (size_t i = 0; i < sc->nerrors; i++)
				json_object_array_add(errors, json_object_new_string(sc->errors[i]));
		json_object_object_add(o, "errors", errors);
		json_object_object_add(o, "suggestions",
		                       names_json(tc->suggestions, tc->nsuggestions));
		if (has_schema) {
			json_object_object_add(o, "schema_name",
			                       json_object_new_string_len(schema, (int)schema_len));
			json_object_object_add(o, "schema_suggestions",
			                       names_json(sc->suggestions, sc->nsuggestions));
		}
	}
	rc = resp_json(r, 200, o);
out:
	free(tc);
	free(sc);
	return rc;
}

/* --- POST /storage-explorer/tables ------------------------------------------------- */

#define COLUMN_ERRORS_MAX 20

struct column_errors {
	struct json_object *list;         /* strings */
	char first[512];
};

static void column_error(struct column_errors *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void column_error(struct column_errors *e, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (json_object_array_length(e->list) == 0)
		snprintf(e->first, sizeof e->first, "%s", msg);
	if (json_object_array_length(e->list) < COLUMN_ERRORS_MAX)
		json_object_array_add(e->list, json_object_new_string(msg));
}

/* A column name the warehouse takes quoted: 1 to 64 characters of UTF-8
 * (the parser already refused invalid UTF-8 and NUL), no control
 * characters, no leading or trailing space. */
static const char *column_name_problem(const char *s, size_t len)
{
	size_t chars = str_utf8_chars(s, len);

	if (len == 0)
		return "must not be empty";
	if (chars > WH_IDENT_MAX)
		return "must be at most 64 characters";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "must not contain control characters";
	if (s[0] == ' ' || s[len - 1] == ' ')
		return "must not start or end with a space";
	if (!wh_ident_ok(s))
		return "is not a name the warehouse accepts";
	return NULL;
}

/* The columns member checked into a canonical array of {name, type,
 * nullable} (a new reference) and the DDL columns (types into sql_types).
 * NULL after answering 400. */
static struct json_object *columns_or_reply(struct req *r, struct json_object *body,
                                            struct wh_column **cols_out,
                                            char (**sql_out)[TABLE_TYPE_TEXT_MAX],
                                            size_t *n_out)
{
	static const char *const allowed[] = { "name", "type", "nullable", NULL };
	struct column_errors e = { json_object_new_array(), "" };
	struct json_object *arr, *canon = NULL;
	struct wh_column *cols = NULL;
	char (*sql)[TABLE_TYPE_TEXT_MAX] = NULL;
	long row_bytes = 0;
	size_t n;

	if (!json_object_object_get_ex(body, "columns", &arr) || arr == NULL) {
		bad_request(r, "columns is required");
		goto fail;
	}
	if (!json_object_is_type(arr, json_type_array) ||
	    (n = json_object_array_length(arr)) < 1 || n > TABLE_COLUMNS_MAX) {
		bad_request(r, "columns must be an array of 1 to %d columns", TABLE_COLUMNS_MAX);
		goto fail;
	}
	canon = json_object_new_array();
	cols = calloc(n, sizeof *cols);
	sql = calloc(n, sizeof *sql);
	if (canon == NULL || cols == NULL || sql == NULL) {
		resp_internal(r, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *v, *out;
		const char *name = NULL, *problem, *type_text;
		struct table_type type;
		char err[256], canon_type[TABLE_TYPE_TEXT_MAX];
		bool nullable = true, ok = true;

		if (!json_object_is_type(c, json_type_object)) {
			column_error(&e, "columns[%zu] must be an object {\"name\", \"type\", "
			             "\"nullable\"}", i);
			continue;
		}
		json_object_object_foreach(c, key, val) {
			const char *const *a;

			(void)val;
			for (a = allowed; *a != NULL; a++)
				if (strcmp(*a, key) == 0)
					break;
			if (*a == NULL) {
				column_error(&e, "columns[%zu]: unknown field '%.64s'", i, key);
				ok = false;
			}
		}
		if (!json_object_object_get_ex(c, "name", &v) ||
		    !json_object_is_type(v, json_type_string)) {
			column_error(&e, "columns[%zu].name must be a string", i);
			ok = false;
		} else {
			name = json_object_get_string(v);
			problem = column_name_problem(name, (size_t)json_object_get_string_len(v));
			if (problem != NULL) {
				column_error(&e, "columns[%zu].name %s", i, problem);
				ok = false;
				name = NULL;
			}
		}
		if (name != NULL) {
			for (size_t k = 0; k < i; k++) {
				if (cols[k].name != NULL && table_column_name_eq(cols[k].name, name)) {
					column_error(&e, "columns[%zu].name '%s' repeats columns[%zu].name "
					             "'%s' (names are compared without regard to case)",
					             i, name, k, cols[k].name);
					ok = false;
					break;
				}
			}
		}
		if (!json_object_object_get_ex(c, "type", &v) ||
		    !json_object_is_type(v, json_type_string)) {
			column_error(&e, "columns[%zu].type must be a string", i);
			ok = false;
		} else {
			type_text = json_object_get_string(v);
			if (table_type_parse(type_text, &type, err, sizeof err) != 0) {
				column_error(&e, "columns[%zu].type '%.40s': %s", i, type_text, err);
				ok = false;
			}
		}
		if (json_object_object_get_ex(c, "nullable", &v) && v != NULL) {
			if (!json_object_is_type(v, json_type_boolean)) {
				column_error(&e, "columns[%zu].nullable must be true or false", i);
				ok = false;
			} else {
				nullable = json_object_get_boolean(v);
			}
		}
		if (!ok)
			continue;
		cols[i].name = name;
		cols[i].nullable = nullable;
		table_type_sql(&type, sql[i]);
		cols[i].sql_type = sql[i];
		row_bytes += table_type_row_bytes(&type);
		table_type_name(&type, canon_type);
		out = json_object_new_object();
		json_object_object_add(out, "name", json_object_new_string(name));
		json_object_object_add(out, "type", json_object_new_string(canon_type));
		json_object_object_add(out, "nullable", json_object_new_boolean(nullable));
		json_object_array_add(canon, out);
	}
	if (json_object_array_length(e.list) == 0 && row_bytes > TABLE_ROW_BYTES_MAX)
		column_error(&e, "the columns take %ld bytes of MariaDB's %ld-byte row "
		             "limit (a VARCHAR(n) up to 1024 takes 4n bytes): use VARCHAR "
		             "without a length, or VARCHAR above 1024, for long text",
		             row_bytes, TABLE_ROW_BYTES_MAX);
	if (json_object_array_length(e.list) > 0) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "error", json_object_new_string("invalid_columns"));
		json_object_object_add(o, "message", json_object_new_string(e.first));
		json_object_object_add(o, "errors", e.list);
		e.list = NULL;
		resp_json(r, 400, o);
		goto fail;
	}
	json_object_put(e.list);
	*cols_out = cols;
	*sql_out = sql;
	*n_out = n;
	return canon;
fail:
	json_object_put(e.list);
	json_object_put(canon);
	free(cols);
	free(sql);
	return NULL;
}

static int name_error_reply(struct req *r, const char *code,
                            const struct table_name_check *c)
{
	struct json_object *o = json_object_new_object();
	char msg[TABLE_NAME_MSG_MAX + 64];

	snprintf(msg, sizeof msg, "%s", c->errors[0]);
	json_object_object_add(o, "error", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	json_object_object_add(o, "errors", messages_json(c->errors, c->nerrors));
	json_object_object_add(o, "suggestions", names_json(c->suggestions, c->nsuggestions));
	resp_json(r, 400, o);
	return -1;
}

static int table_create(struct req *r)
{
	static const char *const allowed[] = { "table_name", "schema_name", "columns", NULL };
	struct table_name_check *chk = NULL;
	struct json_object *body, *canon = NULL, *o;
	struct wh_column *cols = NULL;
	char (*sql)[TABLE_TYPE_TEXT_MAX] = NULL;
	char id[UUID_STR_LEN], wh_schema[TABLE_NAME_BUF], err[512];
	char name[TABLE_NAME_BUF], schema[TABLE_NAME_BUF];
	const char *customer, *s, *default_schema;
	size_t ncols = 0, len;
	struct wh *w = NULL;
	struct db_stmt *st;
	long long n;
	int rc = -1, has, exists, dberr;

	if ((body = object_body_or_reply(r, allowed)) == NULL)
		return -1;
	if ((chk = malloc(sizeof *chk)) == NULL)
		return resp_internal(r, "out of memory");

	/* table_name, schema_name: the validate-name rules */
	if (string_member(r, body, "table_name", true, &s, &len) < 0)
		goto out;
	table_name_check(s, len, "table_name", chk);
	if (!chk->valid) {
		name_error_reply(r, "invalid_table_name", chk);
		goto out;
	}
	memcpy(name, s, len + 1);
	schema[0] = '\0';
	if ((has = string_member(r, body, "schema_name", false, &s, &len)) < 0)
		goto out;
	if (has) {
		table_name_check(s, len, "schema_name", chk);
		schema_name_reserved_check(r, s, chk);
		if (!chk->valid) {
			name_error_reply(r, "invalid_schema_name", chk);
			goto out;
		}
		memcpy(schema, s, len + 1);
	}
	if ((canon = columns_or_reply(r, body, &cols, &sql, &ncols)) == NULL)
		goto out;
	if ((customer = auth_customer_ensure_or_reply(r)) == NULL)
		goto out;

	/* Taken already?  (The unique key decides for real, below.) */
	st = db_query(r->db, "SELECT id FROM warehouse_tables WHERE customer_id = ? "
	              "AND schema_name = ? AND table_name = ?", "sss", customer, schema, name);
	if (st == NULL) {
		resp_db_error(r, db_last_err(r->db));
		goto out;
	}
	if ((rc = db_fetch(st)) == 1) {
		char existing[STORAGE_TABLE_ID_LEN + 1];

		snprintf(existing, sizeof existing, "%s", db_col_str(st, 0));
		db_done(st);
		rc = storage_table_reply(r, TABLE_EXISTS, NULL, "table_id", existing);
		goto out;
	}
	db_done(st);
	if (rc < 0) {
		rc = resp_db_error(r, db_last_err(r->db));
		goto out;
	}
	rc = -1;

	default_schema = r->cfg->warehouse_default_schema[0] != '\0'
	                 ? r->cfg->warehouse_default_schema : "warehouse";
	if (wh_schema_physical(customer, schema[0] != '\0' ? schema : default_schema,
	                       wh_schema) != 0) {
		resp_internal(r, "physical schema name");
		goto out;
	}
	if (uuid_v4(id, '-') != 0) {
		resp_internal(r, "uuid_v4 failed");
		goto out;
	}
	n = db_exec(r->db, "INSERT INTO warehouse_tables (id, customer_id, schema_name, "
	            "table_name, wh_schema, wh_table, columns_json, created_by) "
	            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", "ssssssss", id, customer, schema,
	            name, wh_schema, name,
	            json_object_to_json_string_ext(canon, JSON_C_TO_STRING_PLAIN),
	            r->id.sub);
	if (n == DB_ERR_DUPLICATE) {
		storage_table_reply(r, TABLE_EXISTS, NULL, NULL, NULL);
		goto out;
	}
	if (n < 0) {
		resp_db_error(r, (int)n);
		goto out;
	}

	/* The real table.  On any failure the row goes again. */
	if ((w = wh_open(r->cfg, err, sizeof err)) == NULL) {
		log_kv(LOG_ERROR, "warehouse unavailable", "error=%s", LOG_Q(err));
		storage_table_reply(r, TABLE_WAREHOUSE_UNAVAILABLE, NULL, NULL, NULL);
		goto undo;
	}
	exists = wh_table_exists(w, wh_schema, name, err, sizeof err);
	if (exists == 1) {
		char where[2 * TABLE_NAME_BUF];

		snprintf(where, sizeof where, "%s.%s", wh_schema, name);
		storage_table_reply(r, TABLE_IN_WAREHOUSE, where, NULL, NULL);
		goto undo;
	}
	if (exists < 0 ||
	    wh_table_create(w, wh_schema, name, cols, ncols, 0, err, sizeof err) != 0) {
		log_kv(LOG_ERROR, "warehouse table not created", "schema=%s table=%s error=%s",
		       wh_schema, LOG_Q(name), LOG_Q(err));
		storage_table_reply(r, TABLE_WAREHOUSE_ERROR, NULL, NULL, NULL);
		goto undo;
	}
	log_kv(LOG_INFO, "storage table created", "table=%s schema=%s name=%s customer=%s",
	       id, wh_schema, LOG_Q(name), customer);

	if ((o = table_json(r->db, customer, id, &dberr)) == NULL) {
		rc = dberr != 0 ? resp_db_error(r, dberr) : resp_internal(r, "table vanished");
		goto out;
	}
	rc = resp_json(r, 201, o);
	goto out;
undo:
	db_exec(r->db, "DELETE FROM warehouse_tables WHERE id = ?", "s", id);
out:
	wh_close(w);
	json_object_put(canon);
	free(cols);
	free(sql);
	free(chk);
	return rc;
}

/* --- GET /storage-explorer/tables ----------------------------------------------------- */

static int tables_list(struct req *r)
{
	long long page, limit, total = 0;
	struct json_object *o, *arr;
	const char *customer;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_page_or_reply(r, &page, &limit) != 0)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM warehouse_tables "
	    "WHERE customer_id = ?", "s", customer), &total) != 0)
		return -1;
	arr = req_rows_or_reply(r, db_query(r->db, "SELECT " TABLE_COLS " FROM "
	    "warehouse_tables WHERE customer_id = ? ORDER BY created_at, id LIMIT ? "
	    "OFFSET ?", "sii", customer, limit, (page - 1) * limit), table_row_json);
	if (arr == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "tables", arr);
	json_object_object_add(o, "pagination", storage_pagination(page, limit, total));
	return resp_json(r, 200, o);
}

/* --- GET /storage-explorer/tables/{tableId} ------------------------------------------- */

static int table_get(struct req *r)
{
	struct storage_table t = { .cols = NULL };
	struct json_object *o, *links;
	const char *customer;
	struct db_stmt *st;
	int rc, dberr;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_table_of_caller(r, customer, req_param(r, "table_id"), &t) != 0) {
		storage_table_free(&t);
		return -1;
	}
	storage_table_free(&t);
	if ((o = table_json(r->db, customer, t.id, &dberr)) == NULL)
		return dberr != 0 ? resp_db_error(r, dberr)
		                  : storage_table_reply(r, TABLE_NOT_FOUND, NULL, NULL, NULL);
	links = json_object_new_array();
	st = db_query(r->db, "SELECT l.id, l.dataset_id, d.file_name, l.created_at, l.status, "
	              "l.sync_status, l.row_count, l.last_sync, l.error "
	              "FROM table_links l JOIN datasets d ON d.id = l.dataset_id "
	              "WHERE l.table_id = ? AND l.customer_id = ? ORDER BY l.created_at, l.id",
	              "ss", t.id, customer);
	if (st == NULL) {
		json_object_put(o);
		json_object_put(links);
		return resp_db_error(r, db_last_err(r->db));
	}
	while ((rc = db_fetch(st)) == 1) {
		struct json_object *l = json_object_new_object();

		json_object_object_add(l, "link_id", json_object_new_string(db_col_str(st, 0)));
		json_object_object_add(l, "dataset_id", json_object_new_string(db_col_str(st, 1)));
		json_object_object_add(l, "dataset_name", json_object_new_string(db_col_str(st, 2)));
		json_object_object_add(l, "linked_at", storage_json_time(db_col_str(st, 3)));
		json_object_object_add(l, "status", json_object_new_string(db_col_str(st, 4)));
		json_object_object_add(l, "sync_status", json_object_new_string(db_col_str(st, 5)));
		json_object_object_add(l, "row_count", json_object_new_int64(db_col_ll(st, 6)));
		json_object_object_add(l, "last_sync", db_col_null(st, 7) ? NULL
		                       : storage_json_time(db_col_str(st, 7)));
		json_object_object_add(l, "error", db_col_null(st, 8) ? NULL
		                       : json_object_new_string(db_col_str(st, 8)));
		json_object_array_add(links, l);
	}
	db_done(st);
	if (rc < 0) {
		json_object_put(o);
		json_object_put(links);
		return resp_db_error(r, db_last_err(r->db));
	}
	json_object_object_add(o, "links", links);
	return resp_json(r, 200, o);
}
