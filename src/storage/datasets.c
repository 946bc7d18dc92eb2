/* datasets.c - the area's route table, the Dataset object, and
 * GET /storage-explorer/datasets[/{datasetId}]. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "storage/storage.h"
#include "util/str.h"
#include "util/uuid.h"

static int datasets_list(struct req *r);
static int dataset_get(struct req *r);

const struct route storage_routes[] = {
	{ "POST", "/storage-explorer/storage/upload", storage_upload_post,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "GET", "/storage-explorer/storage/uploads/history", storage_history_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "GET", "/storage-explorer/storage/download", storage_download_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "GET", "/storage-explorer/storage/files", storage_files_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "DELETE", "/storage-explorer/storage/files", storage_file_delete,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "GET", "/storage-explorer/datasets", datasets_list,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "GET", "/storage-explorer/datasets/{dataset_id}", dataset_get,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.READ" },
	{ "DELETE", "/storage-explorer/datasets/{dataset_id}", storage_dataset_delete,
	  ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	{ "PUT", "/storage-explorer/datasets/{dataset_id}/refresh-schema",
	  storage_refresh_put, ROUTE_AUTH_JWT, "STORAGE_EXPLORER.WRITE" },
	ROUTES_END
};

/* The canonical (lowercase) form of a UUID; -1 when in is not one. */
static int id_parse(const char *in, char out[STORAGE_ID_LEN + 1])
{
	return uuid_parse(in, out);
}

int storage_dataset_load(struct db *db, const char *customer_id,
                         const char *raw_id, struct storage_dataset *ds)
{
	struct db_stmt *st;
	int rc;

	memset(ds, 0, sizeof *ds);
	if (id_parse(raw_id, ds->id) != 0)
		return 0;
	st = db_query(db, "SELECT file_path, file_name, format, status, size_bytes "
	              "FROM datasets WHERE id = ? AND customer_id = ?", "ss",
	              ds->id, customer_id);
	if (st == NULL)
		return db_last_err(db);
	rc = db_fetch(st);
	if (rc == 1) {
		snprintf(ds->customer_id, sizeof ds->customer_id, "%s", customer_id);
		snprintf(ds->file_path, sizeof ds->file_path, "%s", db_col_str(st, 0));
		snprintf(ds->file_name, sizeof ds->file_name, "%s", db_col_str(st, 1));
		snprintf(ds->format, sizeof ds->format, "%s", db_col_str(st, 2));
		snprintf(ds->status, sizeof ds->status, "%s", db_col_str(st, 3));
		ds->size_bytes = db_col_ll(st, 4);
	}
	db_done(st);
	return rc < 0 ? db_last_err(db) : rc;
}

int storage_dataset_of_caller(struct req *r, const char *raw_id,
                              struct storage_dataset *ds)
{
	const char *customer;
	int rc;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	rc = storage_dataset_load(r->db, customer, raw_id, ds);
	if (rc < 0)
		return resp_db_error(r, rc);
	if (rc == 0)
		return storage_reply(r, STORAGE_DATASET_NOT_FOUND);
	return 0;
}

/* --- the Dataset object ------------------------------------------------------- */

#define DATASET_COLS "id, file_path, file_name, format, size_bytes, status, " \
	"schema_json, parsing_options, error, upload_id, created_at, updated_at, " \
	"refreshed_at"

static struct json_object *parse_or_null(const struct db_stmt *st, unsigned col)
{
	return db_col_null(st, col) ? NULL : json_tokener_parse(db_col_str(st, col));
}

/* One row of DATASET_COLS as the API shows it. */
static struct json_object *dataset_row_json(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object(), *opts, *schema;
	const char *path = db_col_str(st, 1), *slash = strrchr(path, '/');

	json_object_object_add(o, "dataset_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "dataset_name", json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "file_path", json_object_new_string(path));
	json_object_object_add(o, "folder_path", slash != NULL
	    ? json_object_new_string_len(path, (int)(slash - path))
	    : json_object_new_string(""));
	json_object_object_add(o, "file_size_bytes", json_object_new_int64(db_col_ll(st, 4)));
	json_object_object_add(o, "file_format", storage_json_format(db_col_str(st, 3)));
	json_object_object_add(o, "file_type", json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, 5)));
	schema = parse_or_null(st, 6);
	storage_schema_for_api(schema);
	json_object_object_add(o, "schema", schema);
	opts = parse_or_null(st, 7);
	json_object_object_add(o, "parsing_options", opts != NULL ? opts : json_object_new_object());
	json_object_object_add(o, "error", db_col_null(st, 8) ? NULL
	                       : json_object_new_string(db_col_str(st, 8)));
	json_object_object_add(o, "upload_id", db_col_null(st, 9) ? NULL
	                       : json_object_new_string(db_col_str(st, 9)));
	json_object_object_add(o, "created_at", storage_json_time(db_col_str(st, 10)));
	json_object_object_add(o, "updated_at", storage_json_time(db_col_str(st, 11)));
	json_object_object_add(o, "refreshed_at", db_col_null(st, 12) ? NULL
	                       : storage_json_time(db_col_str(st, 12)));
	return o;
}

struct json_object *storage_dataset_json(struct db *db, const char *customer_id,
                                         const char *id, int *db_err)
{
	struct json_object *o = NULL;
	struct db_stmt *st;
	int rc;

	*db_err = 0;
	st = db_query(db, "SELECT " DATASET_COLS " FROM datasets "
	              "WHERE id = ? AND customer_id = ?", "ss", id, customer_id);
	if (st == NULL) {
		*db_err = db_last_err(db);
		return NULL;
	}
	rc = db_fetch(st);
	if (rc == 1)
		o = dataset_row_json(st);
	else if (rc < 0)
		*db_err = db_last_err(db);
	db_done(st);
	return o;
}

/* --- GET /storage-explorer/datasets/{datasetId} --------------------------------- */

static int dataset_get(struct req *r)
{
	struct storage_dataset ds;
	struct json_object *o;
	int err;

	if (storage_query_or_reply(r, NULL, NULL, NULL) != 0 ||
	    storage_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	o = storage_dataset_json(r->db, ds.customer_id, ds.id, &err);
	if (o == NULL)
		return err < 0 ? resp_db_error(r, err) : storage_reply(r, STORAGE_DATASET_NOT_FOUND);
	return resp_json(r, 200, o);
}

/* --- GET /storage-explorer/datasets ---------------------------------------------- */

/* The files directly in one folder: at the root no '/', else the folder and
 * a '/' in front and no further '/'. */
#define IN_FOLDER "(? = 1 AND LOCATE('/', file_path) = 0 OR ? = 0 AND " \
	"LEFT(file_path, CHAR_LENGTH(?) + 1) = CONCAT(?, '/') AND " \
	"LOCATE('/', file_path, CHAR_LENGTH(?) + 2) = 0)"

const struct vfield storage_dataset_query[] = {
	STORAGE_PAGE_ROWS,
	STORAGE_FOLDER_ROW(struct storage_listing, folder),
	VFIELDS_END
};

static int datasets_list(struct req *r)
{
	struct storage_listing q = STORAGE_LISTING_INIT;
	long long total = 0, all = 1, root = 0;
	struct json_object *o, *arr;
	const char *customer, *folder = q.folder.path;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_dataset_query, &q, NULL) != 0)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	if (q.folder.given) {
		all = 0;
		root = q.folder.path[0] == '\0';
	}
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM datasets "
	    "WHERE customer_id = ? AND (? = 1 OR " IN_FOLDER ")", "siiisss", customer,
	    all, root, root, folder, folder, folder), &total) != 0)
		return -1;
	arr = req_rows_or_reply(r, db_query(r->db, "SELECT " DATASET_COLS " FROM datasets "
	    "WHERE customer_id = ? AND (? = 1 OR " IN_FOLDER ") ORDER BY created_at DESC, "
	    "file_path LIMIT ? OFFSET ?", "siiisssii", customer, all, root, root,
	    folder, folder, folder, q.limit, (q.page - 1) * q.limit), dataset_row_json);
	if (arr == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "datasets", arr);
	json_object_object_add(o, "pagination", pagination_json(q.page, q.limit, total));
	return resp_json(r, 200, o);
}
