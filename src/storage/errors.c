/* errors.c - the storage explorer's answers in one place,
 * and the query parameters the listings share.
 *
 * Error bodies are {"error": "<code>", "message": "<text>"}, the shape the
 * spec gives the download 400; the download 404 has its own
 * {"error", "file_path"} (download.c).  401 and 403 from authentication keep
 * the service's {"detail"}. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "db/db.h"
#include "http/errors.h"
#include "http/request.h"
#include "http/response.h"
#include "storage/storage.h"
#include "util/str.h"

static const struct {
	int status;
	const char *code;
	const char *message;
} replies[] = {
	[STORAGE_DATASET_NOT_FOUND] = { 404, "dataset_not_found", "Dataset not found" },
	[STORAGE_UPLOAD_NO_FILES] = { 400, "no_files",
	    "No files in the upload: send them as multipart/form-data parts named file" },
	[STORAGE_AREA_UNAVAILABLE] = { 500, "storage_error",
	    "The storage area cannot be read or written" },
};

int storage_reply(struct req *r, enum storage_reply what)
{
	struct json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(replies[what].code));
	json_object_object_add(o, "message", json_object_new_string(replies[what].message));
	resp_json(r, replies[what].status, o);
	return -1;
}

static struct json_object *error_json(const char *code, const char *fmt, va_list ap)
{
	struct json_object *o = json_object_new_object();
	char msg[768];

	vsnprintf(msg, sizeof msg, fmt, ap);
	json_object_object_add(o, "error", json_object_new_string(code));
	json_object_object_add(o, "message", json_object_new_string(msg));
	return o;
}

struct json_object *storage_error_json(const char *code, const char *fmt, ...)
{
	struct json_object *o;
	va_list ap;

	va_start(ap, fmt);
	o = error_json(code, fmt, ap);
	va_end(ap);
	return o;
}

int storage_reply_error(struct req *r, int status, const char *code,
                        const char *fmt, ...)
{
	struct json_object *o;
	va_list ap;

	va_start(ap, fmt);
	o = error_json(code, fmt, ap);
	va_end(ap);
	resp_json(r, status, o);
	return -1;
}

/* --- listings ------------------------------------------------------------------- */

int storage_page_or_reply(struct req *r, long long *page, long long *limit)
{
	const char *v;
	int qerr;

	*page = 1;
	*limit = STORAGE_PAGE_LIMIT_DEFAULT;
	v = req_query(r, "page", &qerr);
	if (qerr != REQ_OK || (v != NULL && str_to_ll(v, 1, 1000000000LL, page) != 0))
		return storage_reply_error(r, 400, "invalid_query",
		                           "page must be an integer >= 1");
	v = req_query(r, "limit", &qerr);
	if (qerr != REQ_OK ||
	    (v != NULL && str_to_ll(v, 1, STORAGE_PAGE_LIMIT_MAX, limit) != 0))
		return storage_reply_error(r, 400, "invalid_query",
		                           "limit must be an integer from 1 to %d",
		                           STORAGE_PAGE_LIMIT_MAX);
	return 0;
}

struct json_object *storage_pagination(long long page, long long limit,
                                       long long total)
{
	struct json_object *o = json_object_new_object();
	long long pages = (total + limit - 1) / limit;

	json_object_object_add(o, "current_page", json_object_new_int64(page));
	json_object_object_add(o, "total_pages", json_object_new_int64(pages));
	json_object_object_add(o, "total_items", json_object_new_int64(total));
	json_object_object_add(o, "items_per_page", json_object_new_int64(limit));
	json_object_object_add(o, "has_next", json_object_new_boolean(page < pages));
	json_object_object_add(o, "has_previous", json_object_new_boolean(page > 1));
	return o;
}

int storage_folder_query_or_reply(struct req *r, char out[STORAGE_PATH_MAX + 1],
                                  bool *given)
{
	const char *v;
	int qerr, rc;

	out[0] = '\0';
	*given = false;
	v = req_query(r, "folder_path", &qerr);
	if (qerr != REQ_OK)
		return storage_reply_error(r, 400, "invalid_folder_path",
		                           "folder_path is not a valid query value");
	if (v == NULL)
		return 0;
	*given = true;
	if ((rc = storage_path_check(v, true, out)) != SPATH_OK)
		return storage_reply_error(r, 400, "invalid_folder_path", "folder_path %s",
		                           storage_path_strerror(rc));
	return 0;
}

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
