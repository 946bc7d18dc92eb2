/* errors.c - the storage explorer's answers in one place, and the query
 * parameters the listings share.
 *
 * Error bodies are {"error": "<code>", "message": "<text>"}, the shape the
 * spec gives the download 400; the download 404 has its own
 * {"error", "file_path"}.  401 and 403 from authentication keep the
 * service's {"detail"}. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "storage/storage.h"
#include "tabular/tabular.h"

static const struct {
	int status;
	const char *code;
	const char *message;          /* NULL: the body has no message */
} errs[] = {
	[STORAGE_BAD_QUERY] = { 400, "invalid_query", "The query string is not valid" },
	[STORAGE_BAD_FOLDER_PATH] = { 400, "invalid_folder_path", "folder_path is not valid" },
	[STORAGE_NOT_A_FOLDER] = { 400, "invalid_folder_path",
	    "folder_path is not a folder of the storage area" },
	[STORAGE_BAD_FILE_PATH] = { 400, "invalid_file_path", "file_path is not valid" },
	[STORAGE_FILE_PATH_REQUIRED] = { 400, "file_path_required", "file_path is required" },
	[STORAGE_BAD_REQUEST] = { 400, "invalid_request", "The body is not valid" },
	[STORAGE_BAD_PARSING_OPTIONS] = { 400, "invalid_parsing_options",
	    "The parsing options are not valid" },
	[STORAGE_BAD_UPLOAD] = { 400, "invalid_upload", "The multipart body is malformed" },
	[STORAGE_UNEXPECTED_FIELD] = { 400, "invalid_upload",
	    "Unexpected form field: send files in parts named file" },
	[STORAGE_BAD_FILE_NAME] = { 400, "invalid_file_name", "A file name is refused" },
	[STORAGE_UNSUPPORTED_FILE_TYPE] = { 400, "unsupported_file_type",
	    "A file has an unsupported type" },
	[STORAGE_DUPLICATE_FILE] = { 400, "duplicate_file",
	    "A file appears twice in the upload" },
	[STORAGE_TOO_MANY_FILES] = { 400, "too_many_files",
	    "More than 100 files in one upload" },
	[STORAGE_UPLOAD_NO_FILES] = { 400, "no_files",
	    "No files in the upload: send them as multipart/form-data parts named file" },
	[STORAGE_BAD_COLUMNS] = { 400, "invalid_columns", "The columns are not valid" },
	[STORAGE_BAD_TABLE_NAME] = { 400, "invalid_table_name",
	    "table_name breaks a naming rule" },
	[STORAGE_BAD_SCHEMA_NAME] = { 400, "invalid_schema_name",
	    "schema_name breaks a naming rule" },
	[STORAGE_SCHEMA_INCOMPATIBLE] = { 400, "schema_incompatible",
	    "The dataset's columns do not fit the table" },
	[STORAGE_DATASET_NOT_FOUND] = { 404, "dataset_not_found", "Dataset not found" },
	[STORAGE_TABLE_NOT_FOUND] = { 404, "table_not_found", "Table not found" },
	[STORAGE_LINK_NOT_FOUND] = { 404, "link_not_found",
	    "The dataset is not linked to this table" },
	[STORAGE_FILE_NOT_FOUND] = { 404, "file_not_found", NULL },
	[STORAGE_PATH_CONFLICT] = { 409, "path_conflict",
	    "The path is a folder in the storage area" },
	[STORAGE_TABLE_EXISTS] = { 409, "table_exists", "A table of this name already "
	    "exists (names are compared without regard to case)" },
	[STORAGE_WAREHOUSE_TABLE_EXISTS] = { 409, "table_exists",
	    "The warehouse already has a table of this name" },
	[STORAGE_LINK_EXISTS] = { 409, "already_linked",
	    "The dataset is already linked to this table" },
	[STORAGE_LINK_INACTIVE] = { 409, "link_inactive", "The link is inactive: link "
	    "the dataset to the table again to load it" },
	[STORAGE_DATASET_LINKED] = { 409, "dataset_linked", "The dataset is linked to a "
	    "table: unlink it first, or delete with force=true (its links go too)" },
	[STORAGE_TABLE_LINKED] = { 409, "table_linked", "The table has active links: unlink "
	    "its datasets first, or delete with force=true (its links go too)" },
	[STORAGE_TABLE_BUSY] = { 409, "table_busy", "A load into the table is running: "
	    "delete it once the load has ended" },
	[STORAGE_DATASET_NOT_INFERRED] = { 409, "dataset_not_ready",
	    "The dataset's schema is not inferred yet: link it once its status is ready" },
	[STORAGE_DATASET_INFERENCE_FAILED] = { 409, "dataset_not_ready", "The dataset's "
	    "schema inference failed: refresh its schema, then link it" },
	[STORAGE_DATASET_NO_SCHEMA] = { 409, "dataset_not_ready", "The dataset has no "
	    "readable schema: refresh its schema, then link it" },
	[STORAGE_UPLOAD_TOO_LARGE] = { 413, "payload_too_large", "The upload is too large" },
	[STORAGE_NOT_MULTIPART] = { 415, "unsupported_media_type",
	    "Content-Type must be multipart/form-data with a boundary" },
	[STORAGE_OPTION_NOT_SUPPORTED] = { 422, "option_not_supported",
	    "An option does not apply to this file's format" },
	[STORAGE_REFRESH_FAILED] = { 422, "schema_refresh_failed",
	    "The file could not be read with these options" },
	[STORAGE_AREA_UNAVAILABLE] = { 500, "storage_error",
	    "The storage area cannot be read or written" },
	[STORAGE_FILE_UNREADABLE] = { 500, "storage_error",
	    "The file cannot be read from storage" },
	[STORAGE_WRITE_FAILED] = { 500, "storage_error",
	    "The file could not be written to the storage area" },
	[STORAGE_WAREHOUSE_ERROR] = { 500, "warehouse_error",
	    "The warehouse could not create the table" },
	[STORAGE_WAREHOUSE_DROP_FAILED] = { 500, "warehouse_error",
	    "The warehouse could not drop the table: nothing was removed, try again" },
	[STORAGE_WAREHOUSE_UNAVAILABLE] = { 503, "warehouse_unavailable",
	    "The warehouse cannot be reached: try again later" },
	[STORAGE_AREA_FULL] = { 507, "insufficient_storage", "The storage area is full" },
};

struct json_object *storage_err_json(enum storage_err what, const char *msg,
                                     int *status)
{
	struct json_object *o = json_object_new_object();

	if (msg == NULL)
		msg = errs[what].message;
	json_object_object_add(o, "error", json_object_new_string(errs[what].code));
	if (msg != NULL)
		json_object_object_add(o, "message", json_object_new_string(msg));
	*status = errs[what].status;
	return o;
}

int storage_reply_with(struct req *r, enum storage_err what, const char *msg,
                       struct json_object *extra)
{
	int status;
	struct json_object *o = storage_err_json(what, msg, &status);

	if (extra != NULL) {
		json_object_object_foreach(extra, key, val)
			json_object_object_add(o, key, json_object_get(val));
		json_object_put(extra);
	}
	resp_json(r, status, o);
	return -1;
}

int storage_reply(struct req *r, enum storage_err what)
{
	return storage_reply_with(r, what, NULL, NULL);
}

int storage_replyf(struct req *r, enum storage_err what, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return storage_reply_with(r, what, msg, NULL);
}

int storage_reply_verror(struct req *r, const struct verror *e, enum storage_err what)
{
	/* The paths keep the codes they had before the listings shared them. */
	static const struct {
		const char *field;
		enum storage_err what;
	} own[] = {
		{ "folder_path", STORAGE_BAD_FOLDER_PATH },
		{ "file_path", STORAGE_BAD_FILE_PATH },
	};

	if (e->code == VERR_INVALID || e->code == VERR_MALFORMED)
		for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
			if (strcmp(e->field, own[i].field) == 0)
				what = own[i].what;
	return storage_reply_with(r, what, e->message, NULL);
}

int storage_query_or_reply(struct req *r, const struct vfield *fields, void *out,
                           vgiven *given)
{
	struct verror e;

	if (validate_query(fields != NULL ? fields : vfields_none, r, out, given, &e) != 0)
		return storage_reply_verror(r, &e, STORAGE_BAD_QUERY);
	return 0;
}

int storage_body_or_reply(struct req *r, const struct vfield *fields, void *out,
                          vgiven *given, enum storage_err what)
{
	struct json_object *body = req_json_body_or_reply(r);
	struct verror e;

	if (body == NULL)
		return -1;
	if (validate_json(fields, body, out, given, &e) != 0)
		return storage_reply_verror(r, &e, what);
	return 0;
}

/* --- listings ------------------------------------------------------------------- */

struct json_object *storage_json_time(const char *t)
{
	char buf[40];
	size_t n = t != NULL ? strlen(t) : 0;

	if (n < 19 || n > 26)
		return NULL;
	/* DATETIME(3) is "YYYY-MM-DD HH:MM:SS.mmm" */
	snprintf(buf, sizeof buf, "%.10sT%.8s%s%.4sZ", t, t + 11,
	         n >= 23 ? "" : ".000", n >= 23 ? t + 19 : "");
	return json_object_new_string(buf);
}

struct json_object *storage_json_format(const char *stored)
{
	enum tab_format f;

	return json_object_new_string(tab_format_parse(stored, &f) == 0
	                              ? tab_format_api_name(f) : stored);
}
