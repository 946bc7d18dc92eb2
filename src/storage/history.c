/* history.c - GET /storage-explorer/storage/uploads/history: the caller's
 * uploads, newest first, in pages; folder_path keeps one folder's. */
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

/* The files of the uploads in arr (entries with upload_id), added in
 * place.  0 or a negative enum db_err. */
static int add_files(struct db *db, struct json_object *arr)
{
	size_t n = json_object_array_length(arr);

	for (size_t i = 0; i < n; i++) {
		struct json_object *u = json_object_array_get_idx(arr, i), *id, *files;
		struct db_stmt *st;
		int rc;

		json_object_object_get_ex(u, "upload_id", &id);
		files = json_object_new_array();
		st = db_query(db, "SELECT file_name, size_bytes, format FROM upload_files "
		              "WHERE upload_id = ? ORDER BY position", "s",
		              json_object_get_string(id));
		if (st == NULL) {
			json_object_put(files);
			return db_last_err(db);
		}
		while ((rc = db_fetch(st)) == 1) {
			struct json_object *f = json_object_new_object();

			json_object_object_add(f, "file_name",
			                       json_object_new_string(db_col_str(st, 0)));
			json_object_object_add(f, "file_size_bytes",
			                       json_object_new_int64(db_col_ll(st, 1)));
			json_object_object_add(f, "file_format",
			                       storage_json_format(db_col_str(st, 2)));
			json_object_array_add(files, f);
		}
		db_done(st);
		json_object_object_add(u, "files", files);
		if (rc < 0)
			return db_last_err(db);
	}
	return 0;
}

/* An uploads row as its history entry, files added later (add_files). */
static struct json_object *upload_row_json(const struct db_stmt *st)
{
	struct json_object *u = json_object_new_object();

	json_object_object_add(u, "upload_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(u, "folder_path", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(u, "uploaded_at", storage_json_time(db_col_str(st, 2)));
	json_object_object_add(u, "uploaded_by", db_col_null(st, 3) ? NULL
	                       : json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(u, "file_count", json_object_new_int64(db_col_ll(st, 4)));
	json_object_object_add(u, "total_size_bytes",
	                       json_object_new_int64(db_col_ll(st, 5)));
	json_object_object_add(u, "status", json_object_new_string(db_col_str(st, 6)));
	return u;
}

const struct vfield storage_history_query[] = {
	STORAGE_PAGE_ROWS,
	STORAGE_FOLDER_ROW(struct storage_listing, folder),
	VFIELDS_END
};

int storage_history_get(struct req *r)
{
	struct storage_listing q = STORAGE_LISTING_INIT;
	long long total = 0, all;
	struct json_object *o, *arr;
	const char *customer, *folder = q.folder.path;
	int rc;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_history_query, &q, NULL) != 0)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	all = q.folder.given ? 0 : 1;

	/* folder_hash is what the (customer_id, folder_hash, created_at) index
	 * holds: the filter goes through it. */
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM uploads WHERE "
	    "customer_id = ? AND (? = 1 OR folder_hash = UNHEX(SHA2(?, 256)))", "sis",
	    customer, all, folder), &total) != 0)
		return -1;
	arr = req_rows_or_reply(r, db_query(r->db, "SELECT id, folder_path, created_at, "
	    "created_by, file_count, total_bytes, status FROM uploads WHERE "
	    "customer_id = ? AND (? = 1 OR folder_hash = UNHEX(SHA2(?, 256))) "
	    "ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", "sisii",
	    customer, all, folder, q.limit, (q.page - 1) * q.limit), upload_row_json);
	if (arr == NULL)
		return -1;
	if ((rc = add_files(r->db, arr)) < 0) {
		json_object_put(arr);
		return resp_db_error(r, rc);
	}
	/* upload_id first, files last: the fields in the spec's order */
	o = json_object_new_object();
	json_object_object_add(o, "uploads", arr);
	json_object_object_add(o, "pagination", pagination_json(q.page, q.limit, total));
	return resp_json(r, 200, o);
}
