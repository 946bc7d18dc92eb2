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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "db/warehouse.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/config.h"
#include "util/log.h"
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
	{ "DELETE", "/storage-explorer/tables/{table_id}", storage_table_delete,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "GET", "/storage-explorer/tables/{table_id}/datasets", storage_table_datasets_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "POST", "/storage-explorer/tables/{table_id}/datasets/{dataset_id}",
	  storage_link_post, ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "DELETE", "/storage-explorer/tables/{table_id}/datasets/{dataset_id}",
	  storage_link_delete, ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "POST", "/storage-explorer/tables/{table_id}/datasets/{dataset_id}/sync",
	  storage_link_sync_post, ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	ROUTES_END
};

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
		return storage_reply(r, STORAGE_TABLE_NOT_FOUND);
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

/* --- bodies ------------------------------------------------------------------------ */

/* A table or schema name as sent: any string, of any length the body
 * holds, judged by table_name_check, so that validate-name answers 200
 * (valid or not) for every name. */
struct name_arg {
	const char *s;
	size_t len;
};

static int name_arg_check(struct json_object *v, void *out, char *msg, size_t len)
{
	struct name_arg *a = out;

	if (!json_object_is_type(v, json_type_string)) {
		snprintf(msg, len, "must be a string");
		return -1;
	}
	a->s = json_object_get_string(v);
	a->len = (size_t)json_object_get_string_len(v);
	return 0;
}

/* The two names of validate-name and of a new table, rows of type's table. */
#define NAME_ROWS(type) \
	{ "table_name", V_CHECK, V_REQUIRED, 0, 0, NULL, name_arg_check, \
	  VOFF(type, table) }, \
	{ "schema_name", V_CHECK, 0, 0, 0, NULL, name_arg_check, VOFF(type, schema) }

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

struct names_in {
	struct name_arg table, schema;
};

const struct vfield storage_validate_name_body[] = {
	NAME_ROWS(struct names_in),
	VFIELDS_END
};

static int validate_name_post(struct req *r)
{
	struct names_in in = { { NULL, 0 }, { NULL, 0 } };
	struct table_name_check *tc = NULL, *sc = NULL;
	struct json_object *o, *errors, *warnings;
	const char *name, *schema;
	size_t name_len, schema_len;
	bool has_schema;
	int rc = -1;

	if (storage_query_or_reply(r, NULL, NULL, NULL) != 0 ||
	    storage_body_or_reply(r, storage_validate_name_body, &in, NULL,
	                          STORAGE_BAD_REQUEST) != 0)
		return -1;
	name = in.table.s;
	name_len = in.table.len;
	schema = in.schema.s;
	schema_len = in.schema.len;
	has_schema = schema != NULL;
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

/* A column name the warehouse takes quoted (its length checked by the
 * column's table, UTF-8 by the JSON parser): no control characters, no
 * leading or trailing space. */
static const char *column_name_problem(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "must not contain control characters";
	if (s[0] == ' ' || s[len - 1] == ' ')
		return "must not start or end with a space";
	if (!wh_ident_ok(s))
		return "is not a name the warehouse accepts";
	return NULL;
}

/* One column of a POST /storage-explorer/tables body. */
struct column_in {
	const char *name, *type;
	bool nullable;
};

#define COLUMN_TYPE_TEXT_MAX 64

const struct vfield storage_column_body[] = {
	{ "name", V_STR, V_REQUIRED, 1, WH_IDENT_MAX, NULL, NULL,
	  VOFF(struct column_in, name) },
	{ "type", V_STR, V_REQUIRED, 1, COLUMN_TYPE_TEXT_MAX, NULL, NULL,
	  VOFF(struct column_in, type) },
	{ "nullable", V_BOOL, 0, 0, 0, NULL, NULL, VOFF(struct column_in, nullable) },
	VFIELDS_END
};

/* The columns (an array of 1 to TABLE_COLUMNS_MAX, checked by the body's
 * table) checked one by one into a canonical array of {name, type,
 * nullable} (a new reference) and the DDL columns (types into sql_types).
 * Every column's first problem is listed.  NULL after answering 400. */
static struct json_object *columns_or_reply(struct req *r, struct json_object *arr,
                                            struct wh_column **cols_out,
                                            char (**sql_out)[TABLE_TYPE_TEXT_MAX],
                                            size_t *n_out)
{
	struct column_errors e = { json_object_new_array(), "" };
	struct json_object *canon = NULL;
	struct wh_column *cols = NULL;
	char (*sql)[TABLE_TYPE_TEXT_MAX] = NULL;
	long row_bytes = 0;
	size_t n = json_object_array_length(arr);

	canon = json_object_new_array();
	cols = calloc(n, sizeof *cols);
	sql = calloc(n, sizeof *sql);
	if (canon == NULL || cols == NULL || sql == NULL) {
		resp_internal(r, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *out;
		struct column_in in = { .nullable = true };
		const char *problem;
		struct table_type type;
		char err[256], canon_type[TABLE_TYPE_TEXT_MAX];
		struct verror ve;
		bool ok = true;

		if (!json_object_is_type(c, json_type_object)) {
			column_error(&e, "columns[%zu] must be an object {\"name\", \"type\", "
			             "\"nullable\"}", i);
			continue;
		}
		if (validate_json(storage_column_body, c, &in, NULL, &ve) != 0) {
			verror_nest(&ve, "columns[%zu]", i);
			column_error(&e, "%s", ve.message);
			continue;
		}
		problem = column_name_problem(in.name, strlen(in.name));
		if (problem != NULL) {
			column_error(&e, "columns[%zu].name %s", i, problem);
			ok = false;
		}
		for (size_t k = 0; ok && k < i; k++) {
			if (cols[k].name != NULL && table_column_name_eq(cols[k].name, in.name)) {
				column_error(&e, "columns[%zu].name '%s' repeats columns[%zu].name "
				             "'%s' (names are compared without regard to case)",
				             i, in.name, k, cols[k].name);
				ok = false;
			}
		}
		if (table_type_parse(in.type, &type, err, sizeof err) != 0) {
			column_error(&e, "columns[%zu].type '%.40s': %s", i, in.type, err);
			ok = false;
		}
		if (!ok)
			continue;
		cols[i].name = in.name;
		cols[i].nullable = in.nullable;
		table_type_sql(&type, sql[i]);
		cols[i].sql_type = sql[i];
		row_bytes += table_type_row_bytes(&type);
		table_type_name(&type, canon_type);
		out = json_object_new_object();
		json_object_object_add(out, "name", json_object_new_string(in.name));
		json_object_object_add(out, "type", json_object_new_string(canon_type));
		json_object_object_add(out, "nullable", json_object_new_boolean(in.nullable));
		json_object_array_add(canon, out);
	}
	if (json_object_array_length(e.list) == 0 && row_bytes > TABLE_ROW_BYTES_MAX)
		column_error(&e, "the columns take %ld bytes of MariaDB's %ld-byte row "
		             "limit (a VARCHAR(n) up to 1024 takes 4n bytes): use VARCHAR "
		             "without a length, or VARCHAR above 1024, for long text",
		             row_bytes, TABLE_ROW_BYTES_MAX);
	if (json_object_array_length(e.list) > 0) {
		struct json_object *extra = json_object_new_object();

		json_object_object_add(extra, "errors", e.list);
		e.list = NULL;
		storage_reply_with(r, STORAGE_BAD_COLUMNS, e.first, extra);
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

/* A name that breaks a validate-name rule: its errors and suggestions. */
static int name_error_reply(struct req *r, enum storage_err what,
                            const struct table_name_check *c)
{
	struct json_object *extra = json_object_new_object();

	json_object_object_add(extra, "errors", messages_json(c->errors, c->nerrors));
	json_object_object_add(extra, "suggestions",
	                       names_json(c->suggestions, c->nsuggestions));
	return storage_reply_with(r, what, c->errors[0], extra);
}

struct table_in {
	struct name_arg table, schema;
	struct json_object *columns;
};

const struct vfield storage_table_body[] = {
	NAME_ROWS(struct table_in),
	{ "columns", V_ARR, V_REQUIRED, 1, TABLE_COLUMNS_MAX, NULL, NULL,
	  VOFF(struct table_in, columns) },
	VFIELDS_END
};

static int table_create(struct req *r)
{
	struct table_in in = { .columns = NULL };
	struct table_name_check *chk = NULL;
	struct json_object *canon = NULL, *o;
	struct wh_column *cols = NULL;
	char (*sql)[TABLE_TYPE_TEXT_MAX] = NULL;
	char id[UUID_STR_LEN], wh_schema[TABLE_NAME_BUF], err[512];
	char name[TABLE_NAME_BUF], schema[TABLE_NAME_BUF];
	const char *customer, *default_schema;
	size_t ncols = 0;
	struct wh *w = NULL;
	struct db_stmt *st;
	long long n;
	int rc = -1, exists, dberr;

	if (storage_query_or_reply(r, NULL, NULL, NULL) != 0 ||
	    storage_body_or_reply(r, storage_table_body, &in, NULL, STORAGE_BAD_REQUEST) != 0)
		return -1;
	if ((chk = malloc(sizeof *chk)) == NULL)
		return resp_internal(r, "out of memory");

	/* table_name, schema_name: the validate-name rules */
	table_name_check(in.table.s, in.table.len, "table_name", chk);
	if (!chk->valid) {
		name_error_reply(r, STORAGE_BAD_TABLE_NAME, chk);
		goto out;
	}
	memcpy(name, in.table.s, in.table.len + 1);
	schema[0] = '\0';
	if (in.schema.s != NULL) {
		table_name_check(in.schema.s, in.schema.len, "schema_name", chk);
		schema_name_reserved_check(r, in.schema.s, chk);
		if (!chk->valid) {
			name_error_reply(r, STORAGE_BAD_SCHEMA_NAME, chk);
			goto out;
		}
		memcpy(schema, in.schema.s, in.schema.len + 1);
	}
	if ((canon = columns_or_reply(r, in.columns, &cols, &sql, &ncols)) == NULL)
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
		o = json_object_new_object();
		json_object_object_add(o, "table_id", json_object_new_string(existing));
		rc = storage_reply_with(r, STORAGE_TABLE_EXISTS, NULL, o);
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
		storage_reply(r, STORAGE_TABLE_EXISTS);
		goto out;
	}
	if (n < 0) {
		resp_db_error(r, (int)n);
		goto out;
	}

	/* The real table.  On any failure the row goes again. */
	if ((w = wh_open(r->cfg, err, sizeof err)) == NULL) {
		log_kv(LOG_ERROR, "warehouse unavailable", "error=%s", LOG_Q(err));
		storage_reply(r, STORAGE_WAREHOUSE_UNAVAILABLE);
		goto undo;
	}
	exists = wh_table_exists(w, wh_schema, name, err, sizeof err);
	if (exists == 1) {
		storage_replyf(r, STORAGE_WAREHOUSE_TABLE_EXISTS,
		               "The warehouse already has a table %s.%s", wh_schema, name);
		goto undo;
	}
	if (exists < 0 ||
	    wh_table_create(w, wh_schema, name, cols, ncols, 0, err, sizeof err) != 0) {
		log_kv(LOG_ERROR, "warehouse table not created", "schema=%s table=%s error=%s",
		       wh_schema, LOG_Q(name), LOG_Q(err));
		storage_reply(r, STORAGE_WAREHOUSE_ERROR);
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

const struct vfield storage_table_query[] = {
	STORAGE_PAGE_ROWS,
	VFIELDS_END
};

static int tables_list(struct req *r)
{
	struct storage_listing q = STORAGE_LISTING_INIT;
	long long total = 0;
	struct json_object *o, *arr;
	const char *customer;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_table_query, &q, NULL) != 0)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM warehouse_tables "
	    "WHERE customer_id = ?", "s", customer), &total) != 0)
		return -1;
	arr = req_rows_or_reply(r, db_query(r->db, "SELECT " TABLE_COLS " FROM "
	    "warehouse_tables WHERE customer_id = ? ORDER BY created_at, id LIMIT ? "
	    "OFFSET ?", "sii", customer, q.limit, (q.page - 1) * q.limit), table_row_json);
	if (arr == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "tables", arr);
	json_object_object_add(o, "pagination", pagination_json(q.page, q.limit, total));
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

	if ((customer = auth_customer_or_reply(r)) == NULL ||
	    storage_query_or_reply(r, NULL, NULL, NULL) != 0)
		return -1;
	if (storage_table_of_caller(r, customer, req_param(r, "table_id"), &t) != 0) {
		storage_table_free(&t);
		return -1;
	}
	storage_table_free(&t);
	if ((o = table_json(r->db, customer, t.id, &dberr)) == NULL)
		return dberr != 0 ? resp_db_error(r, dberr)
		                  : storage_reply(r, STORAGE_TABLE_NOT_FOUND);
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
		storage_link_state_json(l, st, 4);
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
