/* infer_work.c - schema inference of a dataset, and the storage_infer
 * work kind that `sluice work` runs for each uploaded file.
 *
 * Payload of a storage_infer item (ref_id = the dataset id):
 *   {"upload_id": "...", "position": n}   after an upload: infer with the
 *       dataset's stored parsing options, then settle that upload file and,
 *       when it was the upload's last, the upload (completed / failed);
 *       on success every table the dataset is actively linked to is
 *       loaded again (link_load.c);
 *   {"refresh": {parsing options}}        a refresh-schema too large to run
 *       in the request (refresh.c): on success the dataset takes the new
 *       schema and options; on failure it is left as it was and the item
 *       fails with the reason (the waiting request reads it), prefixed
 *       with STORAGE_OPTION_ERR when the reader refused an option. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "tabular/tabular.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"

int storage_opts_from_json(const char *json_text, struct tab_opts *o)
{
	struct json_object *j, *v;
	int rc = 0;

	tab_opts_init(o);
	if (json_text == NULL || json_text[0] == '\0')
		return 0;
	j = json_tokener_parse(json_text);
	if (j == NULL || !json_object_is_type(j, json_type_object)) {
		json_object_put(j);
		return -1;
	}
	if (json_object_object_get_ex(j, "sheet_name", &v))
		rc |= str_copy(o->sheet_name, sizeof o->sheet_name, json_object_get_string(v));
	if (json_object_object_get_ex(j, "skip_rows", &v))
		o->skip_rows = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "header_row", &v))
		o->header_row = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(j, "encoding", &v))
		rc |= str_copy(o->encoding, sizeof o->encoding, json_object_get_string(v));
	if (json_object_object_get_ex(j, "delimiter", &v)) {
		const char *d = json_object_get_string(v);

		o->delimiter = d != NULL ? d[0] : 0;
	}
	/* given: the markers replace the default ones (an empty list: none) */
	if (json_object_object_get_ex(j, "null_markers", &v) &&
	    json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);

		o->n_null_markers = 0;
		for (size_t i = 0; i < n && i < TAB_MARKERS_MAX; i++)
			rc |= str_copy(o->null_markers[o->n_null_markers++], TAB_MARKER_MAX,
			               json_object_get_string(json_object_array_get_idx(v, i)));
	}
	json_object_put(j);
	return rc == 0 ? 0 : -1;
}

/* The stored schema keeps, for each VARCHAR column, the length in bytes of
 * its longest value among the analysed rows: a table loaded from the
 * dataset widens its column to that (link_load.c).  Not shown by the API. */
static void schema_text_lengths(struct json_object *schema, const struct infer_result *res)
{
	struct json_object *cols;

	if (schema == NULL || !json_object_object_get_ex(schema, "columns", &cols))
		return;
	for (size_t i = 0; i < res->ncols && i < json_object_array_length(cols); i++)
		if (res->cols[i].type == INFER_VARCHAR && res->cols[i].max_len > 0)
			json_object_object_add(json_object_array_get_idx(cols, i),
			                       STORAGE_SCHEMA_TEXT_LENGTH,
			                       json_object_new_int64((int64_t)res->cols[i].max_len));
}

void storage_schema_for_api(struct json_object *schema)
{
	struct json_object *cols;

	if (schema == NULL || !json_object_object_get_ex(schema, "columns", &cols) ||
	    !json_object_is_type(cols, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(cols); i++)
		json_object_object_del(json_object_array_get_idx(cols, i),
		                       STORAGE_SCHEMA_TEXT_LENGTH);
}

int storage_infer_dataset(const struct config *cfg, const struct storage_dataset *ds,
                          const struct tab_opts *opts, struct json_object **schema,
                          long long *row_count, long long *analyzed_rows,
                          bool *option_err, char *err, size_t errlen)
{
	struct infer_result res;
	struct stat st;
	enum tab_format f;
	char path[64];
	int root, fd, rc;

	*schema = NULL;
	*option_err = false;
	memset(&res, 0, sizeof res);
	if (tab_format_parse(ds->format, &f) != 0) {
		str_errf(err, errlen, "unknown file format '%s'", ds->format);
		return -1;
	}
	if ((root = storage_root_open(cfg, ds->customer_id, false)) < 0) {
		str_errf(err, errlen, "the file is no longer in the storage area");
		return -1;
	}
	fd = storage_file_open(root, ds->file_path, &st);
	close(root);
	if (fd < 0) {
		str_errf(err, errlen, fd == -ENOENT ? "the file is no longer in the storage area"
		                                    : "the file cannot be read from the storage area");
		return -1;
	}
	/* The very file just opened, whatever happens to the name meanwhile. */
	storage_fd_path(fd, path, sizeof path);
	rc = infer_file(path, f, opts, &res, err, errlen);
	close(fd);
	if (rc != TAB_OK) {
		*option_err = rc == TAB_ERR_OPTION;
		infer_result_free(&res);
		if (err != NULL && errlen > 0 && err[0] == '\0')
			str_errf(err, errlen, "the file could not be read");
		return -1;
	}
	*schema = infer_result_json(&res);
	schema_text_lengths(*schema, &res);
	*row_count = res.row_count;
	*analyzed_rows = res.analyzed_rows;
	infer_result_free(&res);
	if (*schema == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* The upload is settled once none of its files is pending: failed when one
 * failed (the first reason kept), else completed.  One statement, so two
 * processes finishing its last two files cannot both miss it. */
static void settle_upload(struct db *db, const char *upload_id, long long position,
                          bool ok, const char *why)
{
	db_exec(db, "UPDATE upload_files SET status = ?, error = ? "
	        "WHERE upload_id = ? AND position = ?", "sssi", ok ? "done" : "failed",
	        ok ? NULL : why, upload_id, position);
	db_exec(db, "UPDATE uploads u SET "
	        "u.error = (SELECT CONCAT(f.file_name, ': ', f.error) FROM upload_files f "
	        "  WHERE f.upload_id = u.id AND f.status = 'failed' ORDER BY f.position LIMIT 1), "
	        "u.status = IF(EXISTS (SELECT 1 FROM upload_files f WHERE f.upload_id = u.id "
	        "  AND f.status = 'failed'), 'failed', 'completed'), "
	        "u.finished_at = UTC_TIMESTAMP(3) "
	        "WHERE u.id = ? AND u.status = 'processing' AND NOT EXISTS (SELECT 1 FROM "
	        "upload_files f WHERE f.upload_id = u.id AND f.status = 'pending')",
	        "s", upload_id);
}

/* Options of a refresh payload as stored text, and applied to o. */
static int refresh_opts(struct json_object *p, struct tab_opts *o, const char **text)
{
	struct json_object *v;

	if (!json_object_object_get_ex(p, "refresh", &v) ||
	    !json_object_is_type(v, json_type_object))
		return 0;
	*text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	return storage_opts_from_json(*text, o) == 0 ? 1 : -1;
}

struct ready {
	const char *customer_id, *dataset_id, *schema;
	long long rows, analyzed;
};

static int dataset_ready_body(struct db *db, void *arg)
{
	const struct ready *x = arg;
	long long n;

	n = db_exec(db, "UPDATE datasets SET status = 'ready', schema_json = ?, "
	            "row_count = ?, analyzed_rows = ?, error = NULL WHERE id = ?",
	            "siis", x->schema, x->rows, x->analyzed, x->dataset_id);
	return n < 0 ? (int)n
	             : storage_dataset_tables_queue(db, x->customer_id, x->dataset_id);
}

/* A new version's schema, and a load of every table it is actively linked
 * to, in one transaction (retried whole on a deadlock): the loads run after
 * the inference, and a crash between the two cannot lose them (the item
 * runs again).  0 or -1. */
static int dataset_ready(struct db *db, const char *customer_id, const char *dataset_id,
                         const char *schema, long long rows, long long analyzed)
{
	struct ready x = { customer_id, dataset_id, schema, rows, analyzed };

	return db_tx(db, "dataset inferred", dataset_ready_body, &x) < 0 ? -1 : 0;
}

int storage_infer_work(struct work_ctx *w, const struct work_item *it,
                       char *err, size_t errlen)
{
	struct storage_dataset ds;
	struct json_object *payload = NULL, *v, *schema = NULL;
	struct tab_opts opts;
	const char *upload_id = NULL, *new_opts = NULL;
	long long position = -1, rows = 0, analyzed = 0;
	struct db_stmt *st;
	bool option_err;
	char why[512] = "";
	int rc, refresh;

	if (it->customer_id == NULL) {
		str_errf(err, errlen, "no customer");
		return -1;
	}
	payload = json_tokener_parse(it->payload != NULL ? it->payload : "{}");
	if (payload == NULL || !json_object_is_type(payload, json_type_object)) {
		json_object_put(payload);
		str_errf(err, errlen, "malformed payload");
		return -1;
	}
	if (json_object_object_get_ex(payload, "upload_id", &v))
		upload_id = json_object_get_string(v);
	if (json_object_object_get_ex(payload, "position", &v))
		position = json_object_get_int64(v);
	refresh = refresh_opts(payload, &opts, &new_opts);

	rc = storage_dataset_load(w->db, it->customer_id, it->ref_id, &ds);
	if (rc < 0) {
		str_errf(err, errlen, "database error");
		goto out;
	}
	if (rc == 0) {
		/* deleted meanwhile: nothing to infer */
		if (upload_id != NULL)
			settle_upload(w->db, upload_id, position, false, "the dataset was removed");
		rc = 0;
		goto out;
	}

	if (refresh < 0) {
		str_errf(err, errlen, "malformed parsing options");
		rc = -1;
		goto out;
	}
	if (refresh == 0) {
		st = db_query(w->db, "SELECT parsing_options FROM datasets WHERE id = ?", "s",
		              ds.id);
		if (st == NULL || db_fetch(st) != 1) {
			db_done(st);
			str_errf(err, errlen, "database error");
			rc = -1;
			goto out;
		}
		storage_opts_from_json(db_col_null(st, 0) ? NULL : db_col_str(st, 0), &opts);
		db_done(st);
		db_exec(w->db, "UPDATE datasets SET status = 'inferring' WHERE id = ?", "s", ds.id);
	}

	rc = storage_infer_dataset(w->cfg, &ds, &opts, &schema, &rows, &analyzed,
	                           &option_err, why, sizeof why);
	if (rc == 0) {
		const char *text = json_object_to_json_string_ext(schema, JSON_C_TO_STRING_PLAIN);

		if (refresh == 1)
			rc = db_exec(w->db, "UPDATE datasets SET status = 'ready', schema_json = ?, "
			             "row_count = ?, analyzed_rows = ?, error = NULL, "
			             "parsing_options = ?, refreshed_at = UTC_TIMESTAMP(3) "
			             "WHERE id = ?", "siiss", text, rows, analyzed, new_opts,
			             ds.id) < 0 ? -1 : 0;
		else
			rc = dataset_ready(w->db, it->customer_id, ds.id, text, rows, analyzed);
		if (rc != 0) {
			str_errf(err, errlen, "database error");
			goto out;
		}
		log_kv(LOG_INFO, "dataset inferred", "dataset=%s rows=%lld", ds.id, rows);
	} else if (refresh == 1) {
		/* the dataset keeps its schema; the request waiting reads why */
		str_errf(err, errlen, "%s%s", option_err ? STORAGE_OPTION_ERR : "", why);
		goto out;
	} else {
		log_kv(LOG_INFO, "dataset inference failed", "dataset=%s error=%s", ds.id,
		       LOG_Q(why));
		if (db_exec(w->db, "UPDATE datasets SET status = 'failed', schema_json = NULL, "
		            "row_count = NULL, analyzed_rows = NULL, error = ? WHERE id = ?",
		            "ss", why, ds.id) < 0) {
			str_errf(err, errlen, "database error");
			rc = -1;
			goto out;
		}
	}
	if (upload_id != NULL)
		settle_upload(w->db, upload_id, position, rc == 0, why);
	rc = 0;
out:
	json_object_put(schema);
	json_object_put(payload);
	return rc;
}

int storage_infer_give_up(struct work_ctx *w, const struct work_item *it,
                          const char *reason)
{
	struct json_object *payload = NULL, *v;
	const char *upload_id = NULL;
	long long position = -1;

	if (it->customer_id == NULL)
		return 0;
	payload = json_tokener_parse(it->payload != NULL ? it->payload : "{}");
	if (payload != NULL && json_object_object_get_ex(payload, "refresh", NULL)) {
		/* A refresh leaves the dataset as it was; the item says why. */
		json_object_put(payload);
		return 0;
	}
	if (payload != NULL && json_object_object_get_ex(payload, "upload_id", &v))
		upload_id = json_object_get_string(v);
	if (payload != NULL && json_object_object_get_ex(payload, "position", &v))
		position = json_object_get_int64(v);
	if (db_exec(w->db, "UPDATE datasets SET status = 'failed', schema_json = NULL, "
	            "row_count = NULL, analyzed_rows = NULL, error = ? WHERE id = ? "
	            "AND customer_id = ?", "sss", reason, it->ref_id, it->customer_id) < 0) {
		json_object_put(payload);
		return -1;
	}
	if (upload_id != NULL)
		settle_upload(w->db, upload_id, position, false, reason);
	json_object_put(payload);
	return 0;
}
