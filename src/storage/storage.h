/* storage.h - the storage explorer: a per-customer storage area of uploaded
 * files, each file a dataset with an inferred schema.
 *
 * paths.c      folder_path / file_path validation, and opening them under
 *              the customer's root without ever following a symlink
 * errors.c     the area's answers (one enum, one table), the query
 *              parameters shared by the listings, times
 * uploads.c    POST /storage-explorer/storage/upload (streamed multipart)
 * history.c    GET /storage-explorer/storage/uploads/history
 * datasets.c   GET /storage-explorer/datasets[/{id}], the route table, the
 *              Dataset object and the caller's dataset
 * refresh.c    PUT /storage-explorer/datasets/{id}/refresh-schema
 * download.c   GET /storage-explorer/storage/download (X-Accel-Redirect)
 * files.c      GET/DELETE /storage-explorer/storage/files (a folder's
 *              entries in pages; a file removed with its dataset),
 *              DELETE /storage-explorer/datasets/{id}, and the one check of
 *              the links that hold a dataset or a table in place
 * infer_work.c the storage_infer work kind of `sluice work`, and running
 *              the inference of one dataset (also used by refresh.c) */
#ifndef SLUICE_STORAGE_H
#define SLUICE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "db/queue.h"
#include "http/router.h"
#include "http/pagination.h"
#include "http/validate.h"

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
int storage_files_get(struct req *r);                 /* files.c */
int storage_file_delete(struct req *r);               /* files.c */
int storage_dataset_delete(struct req *r);            /* files.c */

/* How many active links hold the dataset or the table id of customer_id
 * (an inactive link holds nothing), or a negative enum db_err.  A delete
 * of either is refused while this is not 0, unless forced. */
enum storage_link_of { STORAGE_LINKS_OF_DATASET, STORAGE_LINKS_OF_TABLE };
long long storage_links_active(struct db *db, const char *customer_id,
                               enum storage_link_of of, const char *id);

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

/* Every refusal of the area: errors.c's table gives each its status, its
 * code and its message.  The body is {"error": code, "message": text}
 * (the shape the spec gives the download 400), except the download 404's
 * {"error", "file_path"}; 401 and 403 from authentication keep the
 * service's {"detail"}. */
enum storage_err {
	STORAGE_BAD_QUERY,                /* 400 a query parameter */
	STORAGE_BAD_FOLDER_PATH,          /* 400 */
	STORAGE_NOT_A_FOLDER,             /* 400 [folder_path] */
	STORAGE_BAD_FILE_PATH,            /* 400 */
	STORAGE_FILE_PATH_REQUIRED,       /* 400 */
	STORAGE_BAD_REQUEST,              /* 400 a body of tables.c */
	STORAGE_BAD_PARSING_OPTIONS,      /* 400 refresh-schema's body or the reader */
	STORAGE_BAD_UPLOAD,               /* 400 [the multipart parser's reason] */
	STORAGE_UNEXPECTED_FIELD,         /* 400 [a form field] */
	STORAGE_BAD_FILE_NAME,            /* 400 [file, reason] */
	STORAGE_UNSUPPORTED_FILE_TYPE,    /* 400 [file] */
	STORAGE_DUPLICATE_FILE,           /* 400 [file] */
	STORAGE_TOO_MANY_FILES,           /* 400 */
	STORAGE_UPLOAD_NO_FILES,          /* 400 */
	STORAGE_BAD_COLUMNS,              /* 400 [first error] + errors */
	STORAGE_BAD_TABLE_NAME,           /* 400 [first error] + errors, suggestions */
	STORAGE_BAD_SCHEMA_NAME,          /* 400 [first error] + errors, suggestions */
	STORAGE_SCHEMA_INCOMPATIBLE,      /* 400 [counts] + details */
	STORAGE_DATASET_NOT_FOUND,        /* 404 */
	STORAGE_TABLE_NOT_FOUND,          /* 404 */
	STORAGE_LINK_NOT_FOUND,           /* 404 */
	STORAGE_FILE_NOT_FOUND,           /* 404 {error, file_path}: no message */
	STORAGE_PATH_CONFLICT,            /* 409 [file_path] */
	STORAGE_TABLE_EXISTS,             /* 409 (+ table_id when known) */
	STORAGE_WAREHOUSE_TABLE_EXISTS,   /* 409 [schema.table] */
	STORAGE_LINK_EXISTS,              /* 409 (+ link_id when known) */
	STORAGE_LINK_INACTIVE,            /* 409 + link_id */
	STORAGE_DATASET_LINKED,           /* 409 + dataset_id, active_links */
	STORAGE_TABLE_LINKED,             /* 409 + table_id, active_links */
	STORAGE_TABLE_BUSY,               /* 409 a load into the table is running */
	STORAGE_DATASET_NOT_INFERRED,     /* 409 [dataset status] */
	STORAGE_DATASET_INFERENCE_FAILED, /* 409 */
	STORAGE_DATASET_NO_SCHEMA,        /* 409 */
	STORAGE_UPLOAD_TOO_LARGE,         /* 413 [bytes] */
	STORAGE_NOT_MULTIPART,            /* 415 */
	STORAGE_OPTION_NOT_SUPPORTED,     /* 422 [option, format] */
	STORAGE_REFRESH_FAILED,           /* 422 [the reader's reason] */
	STORAGE_AREA_UNAVAILABLE,         /* 500 */
	STORAGE_FILE_UNREADABLE,          /* 500 */
	STORAGE_WRITE_FAILED,             /* 500 */
	STORAGE_WAREHOUSE_ERROR,          /* 500 */
	STORAGE_WAREHOUSE_DROP_FAILED,    /* 500 */
	STORAGE_WAREHOUSE_UNAVAILABLE,    /* 503 */
	STORAGE_AREA_FULL,                /* 507 */
};

/* Answer what with the table's message; returns -1 (handlers `return` it). */
int storage_reply(struct req *r, enum storage_err what);
/* The same with a message that carries a value (marked [..] above): the
 * status and code are still the table's. */
int storage_replyf(struct req *r, enum storage_err what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with message msg (NULL: the table's) and the members of extra
 * added to the body (extra is taken; NULL for none).  Returns -1. */
int storage_reply_with(struct req *r, enum storage_err what, const char *msg,
                       struct json_object *extra);
/* The body of what (a new reference) and its status, for an answer written
 * elsewhere (the waiter); msg as above. */
struct json_object *storage_err_json(enum storage_err what, const char *msg,
                                     int *status);
/* Answer a validator's refusal: what gives the status and code (a folder_path
 * or file_path a check refused has its own), e's message is the text. */
int storage_reply_verror(struct req *r, const struct verror *e, enum storage_err what);

/* Check the query string of r against fields (NULL: it takes none, so every
 * parameter is refused).  0, or 400 answered and -1. */
int storage_query_or_reply(struct req *r, const struct vfield *fields, void *out,
                           vgiven *given);

/* Read the JSON body of r (the request keeps it) and check it against
 * fields; what gives the status and code of a refusal.  0, or 400 (or the
 * body's own 413/415) answered and -1. */
int storage_body_or_reply(struct req *r, const struct vfield *fields, void *out,
                          vgiven *given, enum storage_err what);

/* --- refresh-schema through sluice work (refresh.c) ---------------------- */

/* The answer of refresh item item_id of the customer's dataset, for the
 * waiter: 1 with nothing set while it runs (final false); else 0 with
 * *status and *body (200, 400, 422, 404; 202 when final and still
 * running), or < 0 enum db_err. */
int storage_refresh_result(struct db *db, const char *customer_id,
                           const char *dataset_id, long long item_id, bool final,
                           int *status, struct json_object **body);

/* --- listings (errors.c) ---------------------------------------------------- */

/* The query parameters of the listings, as rows of their vfield tables:
 * page >= 1 (default 1), limit 1 .. 100 (default 20), and folder_path, a
 * folder checked as paths.c says ("" for the root; given says it came). */
#define STORAGE_PAGE_MAX PAGE_MAX                  /* http/pagination.h */
#define STORAGE_PAGE_LIMIT_DEFAULT PAGE_LIMIT_DEFAULT
#define STORAGE_PAGE_LIMIT_MAX PAGE_LIMIT_MAX

struct storage_folder {
	bool given;
	char path[STORAGE_PATH_MAX + 1];
};

struct storage_listing {
	long long page, limit;
	struct storage_folder folder;
};
#define STORAGE_LISTING_INIT { .page = 1, .limit = STORAGE_PAGE_LIMIT_DEFAULT }

#define STORAGE_PAGE_ROWS \
	{ "page", V_INT, 0, 1, STORAGE_PAGE_MAX, NULL, NULL, \
	  VOFF(struct storage_listing, page) }, \
	{ "limit", V_INT, 0, 1, STORAGE_PAGE_LIMIT_MAX, NULL, NULL, \
	  VOFF(struct storage_listing, limit) }
#define STORAGE_FOLDER_ROW(type, member) \
	{ "folder_path", V_CHECK, 0, 0, 0, NULL, storage_folder_check, VOFF(type, member) }

/* The V_CHECK of folder_path (paths.c): out is a struct storage_folder. */
int storage_folder_check(struct json_object *v, void *out, char *msg, size_t len);
/* The V_CHECK of a file_path (paths.c): out is char[STORAGE_PATH_MAX + 1],
 * left "" for an empty value (the caller says it is required). */
int storage_file_check(struct json_object *v, void *out, char *msg, size_t len);

/* A DATETIME(3) column ("2026-11-23 10:00:00.123") as ISO 8601 UTC with
 * milliseconds, or JSON null. */
struct json_object *storage_json_time(const char *dbtime);
/* A stored format (csv txt json xlsx xls parquet) as the API's file_format:
 * csv, json, excel or parquet. */
struct json_object *storage_json_format(const char *stored);

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

/* A VARCHAR column's longest value in the stored schema_json (bytes, of the
 * analysed rows): what a linked table's column widens to.  Not in the API's
 * Schema object: storage_schema_for_api takes it out of a parsed schema. */
#define STORAGE_SCHEMA_TEXT_LENGTH "max_length"
void storage_schema_for_api(struct json_object *schema);

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

/* --- validation tables -----------------------------------------------------
 * Each route's body and query fields (http/validate.h), defined beside its
 * handler; t/unit/test_vtables.c checks every bound of each at max and
 * max + 1. */
extern const struct vfield storage_refresh_body[];
extern const struct vfield storage_download_query[];
extern const struct vfield storage_history_query[];
extern const struct vfield storage_upload_query[];
extern const struct vfield storage_validate_name_body[];
extern const struct vfield storage_column_body[];
extern const struct vfield storage_table_body[];
extern const struct vfield storage_table_query[];
extern const struct vfield storage_dataset_query[];
extern const struct vfield storage_files_query[];
extern const struct vfield storage_file_delete_query[];
/* force=true|false alone (DELETE of a dataset or a table): out is a bool. */
extern const struct vfield storage_delete_query[];

#endif
