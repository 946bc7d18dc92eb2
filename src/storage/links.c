/* links.c - datasets linked to warehouse tables:
 *   POST   /storage-explorer/tables/{tableId}/datasets/{datasetId}
 *   DELETE /storage-explorer/tables/{tableId}/datasets/{datasetId}
 *   POST   /storage-explorer/tables/{tableId}/datasets/{datasetId}/sync
 *   GET    /storage-explorer/tables/{tableId}/datasets
 *
 * A link is checked (column names without regard to case, the type matrix
 * of table_types.c, empty values into NOT NULL columns), recorded, and its
 * table loaded by `sluice work` (link_load.c).  Unlinking makes the link
 * inactive and leaves the table's rows; linking again makes it active. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "db/queue.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/log.h"
#include "util/uuid.h"
#include "util/wake.h"

int storage_dataset_columns(const char *schema_json, struct json_object **schema,
                            struct table_column **cols, size_t *n)
{
	struct json_object *arr;
	size_t k;

	*cols = NULL;
	*n = 0;
	*schema = json_tokener_parse(schema_json);
	if (*schema == NULL || !json_object_object_get_ex(*schema, "columns", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return -1;
	k = json_object_array_length(arr);
	if ((*cols = calloc(k > 0 ? k : 1, sizeof **cols)) == NULL)
		return -1;
	for (size_t i = 0; i < k; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i), *v;
		struct table_column *dc = &(*cols)[i];
		int precision = 0, scale = 0;

		if (!json_object_object_get_ex(c, "name", &v) ||
		    !json_object_is_type(v, json_type_string))
			return -1;
		dc->name = json_object_get_string(v);
		if (json_object_object_get_ex(c, "precision", &v))
			precision = json_object_get_int(v);
		if (json_object_object_get_ex(c, "scale", &v))
			scale = json_object_get_int(v);
		if (!json_object_object_get_ex(c, "inferred_type", &v) ||
		    table_type_from_inferred(json_object_get_string(v), precision, scale,
		                             &dc->type) != 0)
			return -1;
		dc->nullable = json_object_object_get_ex(c, "nullable", &v) &&
		               json_object_get_boolean(v);
		/* VARCHAR(n) when the longest value is known, else unbounded */
		if (dc->type.kind == TABLE_VARCHAR &&
		    json_object_object_get_ex(c, STORAGE_SCHEMA_TEXT_LENGTH, &v)) {
			int64_t len = json_object_get_int64(v);

			dc->type.length = len > 0 && len <= TABLE_VARCHAR_MAX ? (long)len : 0;
		}
	}
	*n = k;
	return 0;
}

static int incompatible_reply(struct req *r, struct table_match *m)
{
	struct json_object *o = json_object_new_object(), *d = json_object_new_object();
	size_t miss = json_object_array_length(m->missing_columns);
	size_t extra = json_object_array_length(m->extra_columns);
	size_t bad = json_object_array_length(m->type_mismatches);
	char msg[256];

	snprintf(msg, sizeof msg, "The dataset's columns do not fit the table: %zu "
	         "missing, %zu extra, %zu of an incompatible type", miss, extra, bad);
	json_object_object_add(d, "missing_columns", m->missing_columns);
	json_object_object_add(d, "extra_columns", m->extra_columns);
	json_object_object_add(d, "type_mismatches", m->type_mismatches);
	m->missing_columns = m->extra_columns = m->type_mismatches = NULL;
	json_object_object_add(o, "details", d);
	return storage_reply_with(r, STORAGE_SCHEMA_INCOMPATIBLE, msg, o);
}

/* --- POST /storage-explorer/tables/{tableId}/datasets/{datasetId} -------------------- */

struct link_new {
	const char *link_id, *customer, *dataset_id, *table_id, *validation, *by;
	bool relink;                  /* an inactive link of the pair, made active */
};

/* One attempt: the link (new or reactivated) and its table's load queued;
 * 0, or < 0 (DB_ERR_DUPLICATE: the pair is linked already). */
static int link_create_body(struct db *db, void *arg)
{
	const struct link_new *l = arg;
	long long n;

	if (!l->relink) {
		n = db_exec(db, "INSERT INTO table_links (id, customer_id, dataset_id, "
		            "table_id, status, sync_status, validation, created_by) "
		            "VALUES (?, ?, ?, ?, 'active', 'pending', ?, ?)", "ssssss",
		            l->link_id, l->customer, l->dataset_id, l->table_id,
		            l->validation, l->by);
	} else {
		/* Only while still inactive: two of these at once make one 409. */
		n = db_exec(db, "UPDATE table_links SET status = 'active', "
		            "sync_status = 'pending', validation = ?, row_count = NULL, "
		            "last_sync = NULL, error = NULL, created_by = ?, "
		            "created_at = UTC_TIMESTAMP(3) WHERE id = ? AND "
		            "status = 'inactive'", "sss", l->validation, l->by, l->link_id);
		if (n == 0)
			n = DB_ERR_DUPLICATE;
	}
	return n < 0 ? (int)n : storage_table_load_queue(db, l->customer, l->table_id);
}

int storage_link_post(struct req *r)
{
	struct storage_table t = { .cols = NULL };
	struct storage_dataset ds;
	struct json_object *schema = NULL, *validation = NULL, *o;
	struct table_column *dcols = NULL;
	struct table_match m = { .compatible = false };
	char link_id[UUID_STR_LEN], relink[UUID_STR_LEN] = "";
	const char *customer;
	struct db_stmt *st;
	size_t nd = 0;
	long long n;
	int rc = -1, found;
	bool has_schema = false;

	if ((customer = auth_customer_or_reply(r)) == NULL ||
	    storage_query_or_reply(r, NULL, NULL, NULL) != 0)
		return -1;
	if (storage_table_of_caller(r, customer, req_param(r, "table_id"), &t) != 0)
		goto out;
	if ((found = storage_dataset_load(r->db, customer, req_param(r, "dataset_id"), &ds)) < 0) {
		resp_db_error(r, found);
		goto out;
	}
	if (found == 0) {
		storage_reply(r, STORAGE_DATASET_NOT_FOUND);
		goto out;
	}

	/* An active link is a 409; an inactive one (unlinked, or its load
	 * failed) may be linked again: checked anew, the same link, and the
	 * table loaded anew (its rows replaced, so none come twice). */
	st = db_query(r->db, "SELECT id, status FROM table_links WHERE dataset_id = ? "
	              "AND table_id = ?", "ss", ds.id, t.id);
	if (st == NULL) {
		resp_db_error(r, db_last_err(r->db));
		goto out;
	}
	if ((found = db_fetch(st)) == 1) {
		if (strcmp(db_col_str(st, 1), "active") == 0) {
			char existing[UUID_STR_LEN];

			snprintf(existing, sizeof existing, "%s", db_col_str(st, 0));
			db_done(st);
			o = json_object_new_object();
			json_object_object_add(o, "link_id", json_object_new_string(existing));
			storage_reply_with(r, STORAGE_LINK_EXISTS, NULL, o);
			goto out;
		}
		snprintf(relink, sizeof relink, "%s", db_col_str(st, 0));
	}
	db_done(st);
	if (found < 0) {
		resp_db_error(r, db_last_err(r->db));
		goto out;
	}

	/* The dataset must have a schema, and rows we can read. */
	if (strcmp(ds.status, "ready") != 0) {
		if (strcmp(ds.status, "failed") == 0)
			storage_reply(r, STORAGE_DATASET_INFERENCE_FAILED);
		else
			storage_replyf(r, STORAGE_DATASET_NOT_INFERRED, "The dataset's schema "
			               "is not inferred yet (status %s): link it once its "
			               "status is ready", ds.status);
		goto out;
	}
	st = db_query(r->db, "SELECT schema_json FROM datasets WHERE id = ? AND customer_id = ?",
	              "ss", ds.id, customer);
	if (st == NULL) {
		resp_db_error(r, db_last_err(r->db));
		goto out;
	}
	found = db_fetch(st);
	if (found == 1 && !db_col_null(st, 0)) {
		has_schema = storage_dataset_columns(db_col_str(st, 0), &schema, &dcols, &nd) == 0;
		if (!has_schema)
			log_kv(LOG_ERROR, "stored dataset schema unreadable", "dataset=%s", ds.id);
	}
	db_done(st);
	if (found < 0) {
		resp_db_error(r, db_last_err(r->db));
		goto out;
	}
	if (found == 0) {
		storage_reply(r, STORAGE_DATASET_NOT_FOUND);
		goto out;
	}
	if (!has_schema) {                /* ready without a readable schema */
		storage_reply(r, STORAGE_DATASET_NO_SCHEMA);
		goto out;
	}

	if (table_match_columns(t.cols, t.ncols, dcols, nd, &m) != 0) {
		resp_internal(r, "out of memory");
		goto out;
	}
	if (!m.compatible) {
		incompatible_reply(r, &m);
		goto out;
	}

	validation = json_object_new_object();
	json_object_object_add(validation, "compatible", json_object_new_boolean(1));
	json_object_object_add(validation, "schema_matched",
	                       json_object_new_boolean(m.schema_matched));
	json_object_object_add(validation, "warnings", m.warnings);
	m.warnings = NULL;

	if (relink[0] != '\0')
		memcpy(link_id, relink, sizeof link_id);
	else if (uuid_v4(link_id, '-') != 0) {
		resp_internal(r, "uuid_v4 failed");
		goto out;
	}
	/* The link and its load in one transaction: no link without a load. */
	n = db_tx(r->db, "dataset link", link_create_body, &(struct link_new){
		link_id, customer, ds.id, t.id,
		json_object_to_json_string_ext(validation, JSON_C_TO_STRING_PLAIN),
		r->id.sub, relink[0] != '\0',
	});
	if (n < 0) {
		rc = n == DB_ERR_DUPLICATE
		     ? storage_reply(r, STORAGE_LINK_EXISTS)
		     : resp_db_error(r, (int)n);
		goto out;
	}
	/* After the commit: a wake before it would find nothing to claim. */
	wake_send(r->cfg, WAKE_WORK, "storage_link_load", NULL);
	log_kv(LOG_INFO, "dataset linked", "link=%s table=%s dataset=%s customer=%s",
	       link_id, t.id, ds.id, customer);

	st = db_query(r->db, "SELECT created_at FROM table_links WHERE id = ?", "s", link_id);
	o = json_object_new_object();
	json_object_object_add(o, "link_id", json_object_new_string(link_id));
	json_object_object_add(o, "table_id", json_object_new_string(t.id));
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "linked_at", st != NULL && db_fetch(st) == 1
	                       ? storage_json_time(db_col_str(st, 0)) : NULL);
	db_done(st);
	json_object_object_add(o, "status", json_object_new_string("active"));
	json_object_object_add(o, "validation", validation);
	validation = NULL;
	rc = resp_json(r, 201, o);
out:
	table_match_free(&m);
	json_object_put(validation);
	json_object_put(schema);
	free(dcols);
	storage_table_free(&t);
	return rc;
}

/* --- one existing link: DELETE (unlink) and POST .../sync ----------------------------- */

/* The link between the caller's table and dataset the path names: 0 with
 * its id and whether it is active, or 404 / 503 answered and -1.  An
 * unknown id, a malformed one and another customer's are the same 404. */
static int link_of_caller(struct req *r, const char *customer, char link_id[UUID_STR_LEN],
                          bool *active)
{
	struct storage_table t = { .cols = NULL };
	char ds[STORAGE_TABLE_ID_LEN + 1];
	struct db_stmt *st;
	int found;

	found = storage_table_of_caller(r, customer, req_param(r, "table_id"), &t);
	storage_table_free(&t);
	if (found != 0)
		return -1;
	if (storage_uuid_parse(req_param(r, "dataset_id"), ds) != 0)
		return storage_reply(r, STORAGE_LINK_NOT_FOUND);
	st = db_query(r->db, "SELECT id, status = 'active' FROM table_links WHERE table_id = ? "
	              "AND dataset_id = ? AND customer_id = ?", "sss", t.id, ds, customer);
	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	if ((found = db_fetch(st)) == 1) {
		snprintf(link_id, UUID_STR_LEN, "%s", db_col_str(st, 0));
		*active = db_col_ll(st, 1) == 1;
	}
	db_done(st);
	if (found < 0)
		return resp_db_error(r, db_last_err(r->db));
	return found == 1 ? 0 : storage_reply(r, STORAGE_LINK_NOT_FOUND);
}

void storage_link_state_json(struct json_object *o, struct db_stmt *st, unsigned col)
{
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, col)));
	json_object_object_add(o, "sync_status", json_object_new_string(db_col_str(st, col + 1)));
	json_object_object_add(o, "row_count", json_object_new_int64(db_col_ll(st, col + 2)));
	json_object_object_add(o, "last_sync", db_col_null(st, col + 3) ? NULL
	                       : storage_json_time(db_col_str(st, col + 3)));
	json_object_object_add(o, "error", db_col_null(st, col + 4) ? NULL
	                       : json_object_new_string(db_col_str(st, col + 4)));
}

/* Answer status with the link as it now is: the Link object's fields and
 * its load's sync_status, row_count, last_sync and error. */
static int link_reply(struct req *r, int status, const char *link_id)
{
	struct db_stmt *st;
	struct json_object *o;
	int found;

	st = db_query(r->db, "SELECT id, table_id, dataset_id, created_at, status, sync_status, "
	              "row_count, last_sync, error FROM table_links WHERE id = ?", "s", link_id);
	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	if ((found = db_fetch(st)) != 1) {
		db_done(st);
		return found < 0 ? resp_db_error(r, db_last_err(r->db))
		                 : storage_reply(r, STORAGE_LINK_NOT_FOUND);
	}
	o = json_object_new_object();
	json_object_object_add(o, "link_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "table_id", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "dataset_id", json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "linked_at", storage_json_time(db_col_str(st, 3)));
	storage_link_state_json(o, st, 4);
	db_done(st);
	return resp_json(r, status, o);
}

int storage_link_delete(struct req *r)
{
	char link_id[UUID_STR_LEN];
	const char *customer;
	bool active;
	long long n;

	if ((customer = auth_customer_or_reply(r)) == NULL ||
	    storage_query_or_reply(r, NULL, NULL, NULL) != 0 ||
	    link_of_caller(r, customer, link_id, &active) != 0)
		return -1;
	/* Inactive, and the table keeps its rows.  A load not begun yet will
	 * not bring this link's rows (error is set before sync_status: MariaDB
	 * assigns left to right).  Unlinking an inactive link changes nothing. */
	n = db_exec(r->db, "UPDATE table_links SET "
	            "error = IF(sync_status = 'pending', 'unlinked before its rows were loaded', "
	            "  error), "
	            "sync_status = IF(sync_status = 'pending', 'failed', sync_status), "
	            "status = 'inactive' WHERE id = ? AND customer_id = ?", "ss", link_id, customer);
	if (n < 0)
		return resp_db_error(r, (int)n);
	if (active)
		log_kv(LOG_INFO, "dataset unlinked", "link=%s customer=%s", link_id, customer);
	return link_reply(r, 200, link_id);
}

enum { LINK_INACTIVE = 1 };

struct link_sync {
	const char *link_id, *customer;
	bool active;
	char table_id[STORAGE_TABLE_ID_LEN + 1];
};

/* One attempt: the link pending and its table's load queued; 0,
 * LINK_INACTIVE, or < 0.  Pending only while still active: an unlink in
 * between is a 409. */
static int link_sync_body(struct db *db, void *arg)
{
	struct link_sync *x = arg;
	const struct db_text row[] = { { x->table_id, sizeof x->table_id } };
	long long n;
	int rc;

	n = x->active ? db_exec(db, "UPDATE table_links SET sync_status = 'pending' "
	                        "WHERE id = ? AND status = 'active'", "s", x->link_id) : 0;
	if (n <= 0)
		return n < 0 ? (int)n : LINK_INACTIVE;
	rc = db_first_row(db, db_query(db, "SELECT table_id FROM table_links "
	                  "WHERE id = ?", "s", x->link_id), row, 1);
	if (rc <= 0)
		return rc < 0 ? rc : DB_ERR;
	return storage_table_load_queue(db, x->customer, x->table_id);
}

int storage_link_sync_post(struct req *r)
{
	char link_id[UUID_STR_LEN];
	const char *customer;
	struct link_sync x = { .link_id = link_id };
	struct json_object *o;
	long long n;

	if ((customer = auth_customer_or_reply(r)) == NULL ||
	    storage_query_or_reply(r, NULL, NULL, NULL) != 0 ||
	    link_of_caller(r, customer, link_id, &x.active) != 0)
		return -1;
	x.customer = customer;
	n = db_tx(r->db, "link sync", link_sync_body, &x);
	if (n == LINK_INACTIVE) {
		o = json_object_new_object();
		json_object_object_add(o, "link_id", json_object_new_string(link_id));
		return storage_reply_with(r, STORAGE_LINK_INACTIVE, NULL, o);
	}
	if (n < 0)
		return resp_db_error(r, (int)n);
	wake_send(r->cfg, WAKE_WORK, "storage_link_load", NULL);
	log_kv(LOG_INFO, "link sync queued", "link=%s table=%s customer=%s", link_id,
	       x.table_id, customer);
	return link_reply(r, 202, link_id);
}

/* --- GET /storage-explorer/tables/{tableId}/datasets --------------------------------- */

int storage_table_datasets_get(struct req *r)
{
	struct storage_table t = { .cols = NULL };
	struct json_object *o, *arr;
	long long total_rows = 0, count = 0;
	const char *customer;
	struct db_stmt *st;
	int rc;

	if ((customer = auth_customer_or_reply(r)) == NULL ||
	    storage_query_or_reply(r, NULL, NULL, NULL) != 0)
		return -1;
	if (storage_table_of_caller(r, customer, req_param(r, "table_id"), &t) != 0) {
		storage_table_free(&t);
		return -1;
	}
	storage_table_free(&t);
	st = db_query(r->db, "SELECT l.dataset_id, d.file_name, d.file_path, d.size_bytes, "
	              "d.format, l.created_at, l.row_count, l.status, l.last_sync, l.sync_status, l.error "
	              "FROM table_links l JOIN datasets d ON d.id = l.dataset_id "
	              "WHERE l.table_id = ? AND l.customer_id = ? ORDER BY l.created_at, l.id",
	              "ss", t.id, customer);
	if (st == NULL)
		return resp_db_error(r, db_last_err(r->db));
	arr = json_object_new_array();
	while ((rc = db_fetch(st)) == 1) {
		struct json_object *d = json_object_new_object();
		const char *fmt = db_col_str(st, 4);
		long long rows = db_col_ll(st, 6);

		json_object_object_add(d, "dataset_id", json_object_new_string(db_col_str(st, 0)));
		json_object_object_add(d, "dataset_name", json_object_new_string(db_col_str(st, 1)));
		json_object_object_add(d, "file_path", json_object_new_string(db_col_str(st, 2)));
		json_object_object_add(d, "file_size_bytes", json_object_new_int64(db_col_ll(st, 3)));
		/* The API's file_format: csv (also txt), json, excel, parquet. */
		json_object_object_add(d, "file_format", json_object_new_string(
		    strcmp(fmt, "txt") == 0 ? "csv"
		    : strcmp(fmt, "xlsx") == 0 || strcmp(fmt, "xls") == 0 ? "excel" : fmt));
		json_object_object_add(d, "linked_at", storage_json_time(db_col_str(st, 5)));
		json_object_object_add(d, "row_count", json_object_new_int64(rows));
		json_object_object_add(d, "status", json_object_new_string(db_col_str(st, 7)));
		json_object_object_add(d, "last_sync", db_col_null(st, 8) ? NULL
		                       : storage_json_time(db_col_str(st, 8)));
		/* Ours: how the link's last load went, and why it failed. */
		json_object_object_add(d, "sync_status", json_object_new_string(db_col_str(st, 9)));
		json_object_object_add(d, "error", db_col_null(st, 10) ? NULL
		                       : json_object_new_string(db_col_str(st, 10)));
		json_object_array_add(arr, d);
		total_rows += rows;
		count++;
	}
	db_done(st);
	if (rc < 0) {
		json_object_put(arr);
		return resp_db_error(r, db_last_err(r->db));
	}
	o = json_object_new_object();
	json_object_object_add(o, "table_id", json_object_new_string(t.id));
	json_object_object_add(o, "table_name", json_object_new_string(t.table_name));
	json_object_object_add(o, "datasets", arr);
	json_object_object_add(o, "total_datasets", json_object_new_int64(count));
	json_object_object_add(o, "total_rows", json_object_new_int64(total_rows));
	return resp_json(r, 200, o);
}
