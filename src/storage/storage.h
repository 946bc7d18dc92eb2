/* storage.h - the storage explorer: a per-customer storage area of uploaded
 * files, each file a dataset with an inferred schema.
 *
 * paths.c      folder_path / file_path validation, and opening them under
 *              the customer's root without ever following a symlink
 * errors.c     the area's error bodies (one table), the caller's customer
 *              row, query parameters shared by the listings, times
 * uploads.c    POST /storage-explorer/storage/upload (streamed multipart)
 * history.c    GET /storage-explorer/storage/uploads/history
 * datasets.c   GET /storage-explorer/datasets[/{id}], the route table, the
 *              Dataset object and the caller's dataset
 * refresh.c    PUT /storage-explorer/datasets/{id}/refresh-schema
 * download.c   GET /storage-explorer/storage/download (X-Accel-Redirect)
 * infer_work.c the storage_infer work kind of `sluice work`, and running
 *              the inference of one dataset (also used by refresh.c) */
#ifndef SLUICE_STORAGE_H
#define SLUICE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "http/router.h"
#include "db/queue.h"

struct config;
struct db;
struct json_object;
struct req;
struct tab_opts;

extern const struct route storage_routes[];          /* datasets.c */

/* Handlers, routed by datasets.c's table. */
int storage_upload_post(struct req *r);               /* uploads.c */
int storage_history_get(struct req *r);               /* history.c */
int storage_refresh_put(struct req *r);               /* refresh.c */
int storage_download_get(struct req *r);              /* download.c */

/* --- paths (paths.c) ------------------------------------------------------ */

#define STORAGE_PATH_MAX 1024        /* bytes of a folder_path or file_path */
#define STORAGE_NAME_MAX 255         /* bytes of one path segment */
#define STORAGE_DEPTH_MAX 32         /* segments of a path */
#define STORAGE_PARTIAL_PREFIX ".sluice-partial-"

enum storage_path_err {
	SPATH_OK = 0,
	SPATH_EMPTY = -1,            /* a file_path must name something */
	SPATH_ABSOLUTE = -2,         /* starts with '/' */
	SPATH_DOTDOT = -3,           /* a "." or ".." segment */
	SPATH_HIDDEN = -4,           /* a segment starting with '.' */
	SPATH_EMPTY_SEGMENT = -5,    /* "a//b" */
	SPATH_BAD_CHAR = -6,         /* backslash, control character, NUL */
	SPATH_BAD_UTF8 = -7,
	SPATH_TOO_LONG = -8,         /* the path or one segment */
	SPATH_TOO_DEEP = -9,
};

/* Check a path relative to a customer's root and write its canonical form
 * (one trailing '/' dropped) into out (STORAGE_PATH_MAX + 1 bytes).  An empty
 * path (the root itself) is accepted only when allow_empty.  0 or a negative
 * enum storage_path_err. */
int storage_path_check(const char *in, bool allow_empty,
                       char out[STORAGE_PATH_MAX + 1]);
/* What is wrong, for messages: "must be relative", ... */
const char *storage_path_strerror(int err);

/* A file name as sent in an upload: the part after the last '/' or '\\'.
 * 0, or -1 with the reason in why (a static string) when that is not a
 * name we store: empty, ".", "..", hidden (leading '.'), control
 * characters, not UTF-8, over STORAGE_NAME_MAX bytes. */
int storage_file_name_clean(const char *sent, char out[STORAGE_NAME_MAX + 1],
                            const char **why);

/* The directory of a customer (<storage_root>/customers/<customer_id>),
 * created when create is set; an fd (O_DIRECTORY) or -errno. */
int storage_root_open(const struct config *cfg, const char *customer_id, bool create);

/* Directories made by storage_dir_open, so a failed upload can take them
 * back (innermost last). */
struct storage_made_dirs {
	int n;
	char rel[STORAGE_DEPTH_MAX][STORAGE_PATH_MAX + 1];
};

/* Open the folder rel (checked, may be "") under rootfd, never following a
 * symlink; with made != NULL missing folders are created and recorded.
 * An fd or -errno (ENOENT, ENOTDIR, ELOOP for a symlink, ...). */
int storage_dir_open(int rootfd, const char *rel, struct storage_made_dirs *made);
/* Remove the folders of made that are empty, innermost first. */
void storage_dir_unmake(int rootfd, const struct storage_made_dirs *made);

/* Open the regular file rel (checked) under rootfd for reading, never
 * following a symlink.  fd or -errno: -ENOENT for nothing there, a folder,
 * or a symlink anywhere on the way; another -errno when it exists but
 * cannot be read (a FIFO or device is -EINVAL). */
int storage_file_open(int rootfd, const char *rel, struct stat *st);

/* "/proc/self/fd/N": a path that names exactly the file fd was opened on,
 * for readers that take a path. */
void storage_fd_path(int fd, char *buf, size_t cap);

/* --- the area's answers (errors.c) ---------------------------------------- */

enum storage_reply {
	STORAGE_DATASET_NOT_FOUND,        /* 404 */
	STORAGE_UPLOAD_NO_FILES,          /* 400 */
	STORAGE_AREA_UNAVAILABLE,         /* 500 */
};

/* Write one of the fixed answers; returns -1 (handlers `return` it). */
int storage_reply(struct req *r, enum storage_reply what);
/* {"error": code, "message": printf(fmt)} with status; returns -1. */
int storage_reply_error(struct req *r, int status, const char *code,
                        const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same body, for an answer written elsewhere (the waiter). */
struct json_object *storage_error_json(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* --- refresh-schema through sluice work (refresh.c) ---------------------- */

/* The answer of refresh item item_id of the customer's dataset, for the
 * waiter: 1 with nothing set while it runs (final false); else 0 with
 * *status and *body (200, 400, 422, 404; 202 when final and still
 * running), or < 0 enum db_err. */
int storage_refresh_result(struct db *db, const char *customer_id,
                           const char *dataset_id, long long item_id, bool final,
                           int *status, struct json_object **body);


/* page / limit query parameters: page >= 1 (default 1), limit 1 .. 100
 * (default 20).  0, or the 400 was answered and -1 returned. */
#define STORAGE_PAGE_LIMIT_DEFAULT 20
#define STORAGE_PAGE_LIMIT_MAX 100
int storage_page_or_reply(struct req *r, long long *page, long long *limit);
/* The Pagination object. */
struct json_object *storage_pagination(long long page, long long limit,
                                       long long total);
/* An optional folder_path query parameter, checked; "" for the root.
 * *given says whether it came.  0, or 400 answered and -1. */
int storage_folder_query_or_reply(struct req *r, char out[STORAGE_PATH_MAX + 1],
                                  bool *given);

/* A DATETIME(3) column ("2026-11-23 10:00:00.123") as ISO 8601 UTC with
 * milliseconds, or JSON null. */
struct json_object *storage_json_time(const char *dbtime);

/* --- datasets (datasets.c) ------------------------------------------------- */

#define STORAGE_ID_LEN 36

struct storage_dataset {
	char id[STORAGE_ID_LEN + 1];
	char customer_id[STORAGE_ID_LEN + 1];
	char file_path[STORAGE_PATH_MAX + 1];
	char file_name[STORAGE_NAME_MAX + 1];
	char format[16];                  /* stored: csv txt json xlsx xls parquet */
	char status[16];                  /* pending inferring ready failed */
	long long size_bytes;
};

/* The dataset raw_id names when it belongs to customer_id.  1 found, 0 not
 * (also for a malformed id), or a negative enum db_err. */
int storage_dataset_load(struct db *db, const char *customer_id,
                         const char *raw_id, struct storage_dataset *ds);
/* The same for a handler: 0, or 404 / 503 answered and -1. */
int storage_dataset_of_caller(struct req *r, const char *raw_id,
                              struct storage_dataset *ds);
/* The Dataset object of one id (a new reference), NULL when not found or on
 * a database error (*db_err says which: 0 for not found). */
struct json_object *storage_dataset_json(struct db *db, const char *customer_id,
                                         const char *id, int *db_err);

/* --- inference (infer_work.c) ---------------------------------------------- */

/* Parsing options as stored (datasets.parsing_options, a JSON object with
 * any of sheet_name, skip_rows, header_row, encoding, delimiter) applied
 * over tab_opts_init's defaults.  0, or -1 when the stored text is not an
 * object of those (the defaults are kept). */
int storage_opts_from_json(const char *json_text, struct tab_opts *o);

/* Infer the schema of a dataset's file with opts.  0 with *schema (a new
 * reference: the Schema object), row_count and analyzed_rows set; or -1
 * with a client-safe reason in err; *option_err says the reader refused an
 * option (TAB_ERR_OPTION). */
int storage_infer_dataset(const struct config *cfg, const struct storage_dataset *ds,
                          const struct tab_opts *opts, struct json_object **schema,
                          long long *row_count, long long *analyzed_rows,
                          bool *option_err, char *err, size_t errlen);

/* The reason of a refresh that failed in sluice work starts with this when
 * the reader refused an option (a 400 rather than a 422). */
#define STORAGE_OPTION_ERR "option: "

/* sluice work: infer one dataset (ref_id) and settle its upload. */
int storage_infer_work(struct work_ctx *w, const struct work_item *it,
                       char *err, size_t errlen);
/* Its give-up: the dataset failed with reason (an upload file settled). */
int storage_infer_give_up(struct work_ctx *w, const struct work_item *it,
                          const char *reason);

#endif
