/* files.c - the files of the storage area as the caller sees them, and
 * their removal:
 *   GET    /storage-explorer/storage/files?folder_path=&page=&limit=
 *   DELETE /storage-explorer/storage/files?file_path=&force=
 *   DELETE /storage-explorer/datasets/{datasetId}?force=
 *
 * A file and its dataset are one thing (one dataset per stored file), so
 * either DELETE removes both.  The rows go first, in one transaction that
 * holds the dataset row (FOR UPDATE: a link or a re-upload of the same path
 * waits for it); the bytes are unlinked after the commit.  A crash between
 * the two leaves a file that no row names -- never a row naming a missing
 * file -- and the same DELETE, repeated, removes such a file.  The bytes
 * are held locked (flock) from the transaction to their unlink, so that a
 * second removal sent meanwhile waits and then finds nothing (a 404),
 * rather than taking them for such a file (a second 200).  Upload
 * history is a log and keeps its entries (upload_files.dataset_id becomes
 * NULL by its foreign key); links go with the dataset (ON DELETE CASCADE),
 * which only force=true allows while one is active. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "storage/storage.h"
#include "util/config.h"
#include "util/log.h"
#include "util/test_hooks.h"
#include "util/uuid.h"

/* --- the links that hold a dataset or a table in place ----------------------------- */

long long storage_links_active(struct db *db, const char *customer_id,
                               enum storage_link_of of, const char *id)
{
	/* Only active links hold: an inactive one (unlinked, or its load
	 * failed) loads nothing more. */
	struct db_stmt *st = of == STORAGE_LINKS_OF_TABLE
	    ? db_query(db, "SELECT COUNT(*) FROM table_links WHERE table_id = ? AND "
	               "customer_id = ? AND status = 'active'", "ss", id, customer_id)
	    : db_query(db, "SELECT COUNT(*) FROM table_links WHERE dataset_id = ? AND "
	               "customer_id = ? AND status = 'active'", "ss", id, customer_id);
	char n[24] = "0";
	int rc = db_first_row(db, st, &(struct db_text){ n, sizeof n }, 1);

	return rc < 0 ? rc : strtoll(n, NULL, 10);
}

/* --- GET /storage-explorer/storage/files --------------------------------------------- */

const struct vfield storage_files_query[] = {
	STORAGE_PAGE_ROWS,
	STORAGE_FOLDER_ROW(struct storage_listing, folder),
	VFIELDS_END
};

/* The entries directly in folder p ("" or "a/b/"): each subfolder once
 * (with how many files it holds at any depth, and their bytes), then each
 * file, by name in byte order.  Derived from the datasets: a folder is
 * there while a file is in it; names compare byte for byte, as the paths on
 * disk do.  Columns: kind (0 folder, 1 file), name, path, dataset id,
 * files, bytes, format, status, uploaded_at. */
#define FOLDER_PREFIX "CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin"
#define FILES_ENTRIES \
	"FROM (SELECT 0 AS kind, f.name, CONCAT(f.p, f.name) AS path, NULL AS id, " \
	"COUNT(*) AS files, SUM(f.size_bytes) AS size, NULL AS format, NULL AS status, " \
	"NULL AS at FROM (SELECT x.p, d.size_bytes, SUBSTRING_INDEX(SUBSTRING(" \
	"d.file_path, CHAR_LENGTH(x.p) + 1), '/', 1) AS name FROM datasets d " \
	"JOIN (SELECT " FOLDER_PREFIX " AS p) x WHERE d.customer_id = ? AND " \
	"LEFT(d.file_path, CHAR_LENGTH(x.p)) = x.p AND " \
	"LOCATE('/', d.file_path, CHAR_LENGTH(x.p) + 1) > 0) f GROUP BY f.p, f.name " \
	"UNION ALL SELECT 1, SUBSTRING(d.file_path, CHAR_LENGTH(x.p) + 1), d.file_path, " \
	"d.id, 1, d.size_bytes, d.format, d.status, COALESCE(u.created_at, d.created_at) " \
	"FROM datasets d JOIN (SELECT " FOLDER_PREFIX " AS p) x " \
	"LEFT JOIN uploads u ON u.id = d.upload_id " \
	"WHERE d.customer_id = ? AND LEFT(d.file_path, CHAR_LENGTH(x.p)) = x.p AND " \
	"LOCATE('/', d.file_path, CHAR_LENGTH(x.p) + 1) = 0) e"

static struct json_object *entry_row_json(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object();
	bool folder = db_col_ll(st, 0) == 0;

	json_object_object_add(o, "type", json_object_new_string(folder ? "folder" : "file"));
	json_object_object_add(o, "name", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "path", json_object_new_string(db_col_str(st, 2)));
	if (folder) {
		json_object_object_add(o, "file_count", json_object_new_int64(db_col_ll(st, 4)));
		json_object_object_add(o, "total_size_bytes",
		                       json_object_new_int64(db_col_ll(st, 5)));
		return o;
	}
	json_object_object_add(o, "dataset_id", json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(o, "file_size_bytes", json_object_new_int64(db_col_ll(st, 5)));
	json_object_object_add(o, "file_format", storage_json_format(db_col_str(st, 6)));
	json_object_object_add(o, "dataset_status", json_object_new_string(db_col_str(st, 7)));
	json_object_object_add(o, "uploaded_at", storage_json_time(db_col_str(st, 8)));
	return o;
}

int storage_files_get(struct req *r)
{
	struct storage_listing q = STORAGE_LISTING_INIT;
	char prefix[STORAGE_PATH_MAX + 2];
	struct json_object *o, *arr;
	const char *customer;
	long long total = 0, file = 0;

	if ((customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_files_query, &q, NULL) != 0)
		return -1;
	if (req_db_or_reply(r) == NULL)
		return -1;
	snprintf(prefix, sizeof prefix, "%s%s", q.folder.path,
	         q.folder.path[0] != '\0' ? "/" : "");
	if (q.folder.path[0] != '\0') {
		if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM datasets WHERE "
		    "customer_id = ? AND path_hash = UNHEX(SHA2(?, 256))", "ss", customer,
		    q.folder.path), &file) != 0)
			return -1;
		if (file > 0)
			return storage_replyf(r, STORAGE_NOT_A_FOLDER,
			                      "folder_path '%s' is a file, not a folder", q.folder.path);
	}
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) " FILES_ENTRIES, "ssss",
	    prefix, customer, prefix, customer), &total) != 0)
		return -1;
	arr = req_rows_or_reply(r, db_query(r->db, "SELECT kind, name, path, id, files, size, "
	    "format, status, at " FILES_ENTRIES " ORDER BY kind, name LIMIT ? OFFSET ?",
	    "ssssii", prefix, customer, prefix, customer, q.limit, (q.page - 1) * q.limit),
	    entry_row_json);
	if (arr == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "folder_path", json_object_new_string(q.folder.path));
	json_object_object_add(o, "entries", arr);
	json_object_object_add(o, "pagination", pagination_json(q.page, q.limit, total));
	return resp_json(r, 200, o);
}

/* --- removing a file and its dataset ------------------------------------------------ */

struct removal {
	const struct config *cfg;
	const char *customer;
	bool force;
	bool by_path;                      /* else by id */
	char id[STORAGE_ID_LEN + 1];
	char path[STORAGE_PATH_MAX + 1];
	/* what the transaction found */
	bool found;                        /* a dataset row */
	bool removed;                      /* and it is gone */
	long long active, links;
	struct stat st;                    /* the file it named, when on disk */
	int fd;                            /* that file, held (file_hold), or -1 */
};

/* Open the stored file path of customer's root without following a link
 * and hold it locked until its unlink: a second removal of the same path
 * that finds no row (the first committed) waits here, then sees the file
 * unlinked, instead of taking it for a file no row names.  Returns the fd
 * of a regular file still there, or -1. */
static int file_hold(const struct config *cfg, const char *customer, const char *path,
                     struct stat *st)
{
	int root = storage_root_open(cfg, customer, false), fd = -1;

	if (root >= 0) {
		fd = storage_file_open(root, path, st);
		close(root);
	}
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX) != 0 || fstat(fd, st) != 0 || st->st_nlink == 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Unlink path when it still holds the file that was (a re-upload of the
 * same path right after the commit is another file and stays). */
static void file_unlink_if_same(const struct config *cfg, const char *customer,
                                const char *path, const struct stat *was)
{
	char folder[STORAGE_PATH_MAX + 1];
	const char *slash = strrchr(path, '/'), *name = slash != NULL ? slash + 1 : path;
	struct stat now;
	int root, dfd;

	snprintf(folder, sizeof folder, "%.*s", slash != NULL ? (int)(slash - path) : 0, path);
	if ((root = storage_root_open(cfg, customer, false)) < 0)
		return;
	dfd = storage_dir_open(root, folder, NULL);
	close(root);
	if (dfd < 0)
		return;
	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == was->st_dev &&
	    now.st_ino == was->st_ino && unlinkat(dfd, name, 0) != 0)
		log_kv(LOG_ERROR, "stored file not removed", "errno=%d customer=%s", errno,
		       customer);
	close(dfd);
}

static int removal_tx(struct db *db, void *arg)
{
	struct removal *x = arg;
	char id[STORAGE_ID_LEN + 1], path[STORAGE_PATH_MAX + 1], links[24] = "0";
	struct db_text row[2] = { { id, sizeof id }, { path, sizeof path } };
	long long n;
	int rc;

	x->found = x->removed = false;
	x->active = x->links = 0;
	if (x->fd >= 0)                    /* a retried transaction holds it again */
		close(x->fd);
	x->fd = -1;
	rc = db_first_row(db, x->by_path
	    ? db_query(db, "SELECT id, file_path FROM datasets WHERE customer_id = ? AND "
	               "path_hash = UNHEX(SHA2(?, 256)) FOR UPDATE", "ss", x->customer, x->path)
	    : db_query(db, "SELECT id, file_path FROM datasets WHERE id = ? AND "
	               "customer_id = ? FOR UPDATE", "ss", x->id, x->customer), row, 2);
	if (rc == 1) {
		x->found = true;
		memcpy(x->id, id, sizeof id);
		memcpy(x->path, path, sizeof path);
	}
	/* The bytes as they are while the row is held (a re-upload of this
	 * path waits for it): only that file is unlinked after the commit. */
	if (rc >= 0 && (x->found || x->by_path))
		x->fd = file_hold(x->cfg, x->customer, x->path, &x->st);
	if (rc <= 0)
		return rc;
	if ((x->active = storage_links_active(db, x->customer, STORAGE_LINKS_OF_DATASET,
	                                      x->id)) < 0)
		return (int)x->active;
	if (x->active > 0 && !x->force)
		return 0;
	rc = db_first_row(db, db_query(db, "SELECT COUNT(*) FROM table_links WHERE "
	                  "dataset_id = ?", "s", x->id),
	                  &(struct db_text){ links, sizeof links }, 1);
	if (rc < 0)
		return rc;
	x->links = strtoll(links, NULL, 10);
	if ((n = db_exec(db, "DELETE FROM datasets WHERE id = ? AND customer_id = ?", "ss",
	                 x->id, x->customer)) < 0)
		return (int)n;
	x->removed = true;
	return 0;
}

/* The file's 404: {"error", "file_path"} as the download's. */
static int file_not_found(struct req *r, const char *path)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "file_path", json_object_new_string(path));
	return storage_reply_with(r, STORAGE_FILE_NOT_FOUND, NULL, o);
}

/* Answer r for the removal x that ran. */
static int removal_answer(struct req *r, struct removal *x)
{
	struct json_object *o;

	if (!x->found && !(x->by_path && x->fd >= 0))
		return x->by_path ? file_not_found(r, x->path)
		                  : storage_reply(r, STORAGE_DATASET_NOT_FOUND);
	if (x->found && !x->removed) {
		o = json_object_new_object();
		json_object_object_add(o, "dataset_id", json_object_new_string(x->id));
		json_object_object_add(o, "active_links", json_object_new_int64(x->active));
		return storage_reply_with(r, STORAGE_DATASET_LINKED, NULL, o);
	}
#ifdef SLUICE_TEST_HOOKS
	if (r->cfg->storage_test_unlink_delay_ms > 0) {
		req_before_slow_work(r);   /* a second removal reaches another worker */
		TEST_HOOK_PAUSE(r->cfg, storage_test_unlink_delay_ms);
	}
#endif
	if (x->fd >= 0)
		file_unlink_if_same(r->cfg, x->customer, x->path, &x->st);
	log_kv(LOG_INFO, "storage file deleted", "customer=%s dataset=%s links=%lld",
	       x->customer, x->found ? x->id : "-", x->links);
	o = json_object_new_object();
	json_object_object_add(o, "file_path", json_object_new_string(x->path));
	json_object_object_add(o, "dataset_id", x->found ? json_object_new_string(x->id) : NULL);
	json_object_object_add(o, "deleted", json_object_new_boolean(true));
	json_object_object_add(o, "links_removed", json_object_new_int64(x->links));
	return resp_json(r, 200, o);
}

/* Run the removal x for r and answer it; the file stays held until then. */
static int removal_run(struct req *r, struct removal *x)
{
	int rc;

	if (req_db_or_reply(r) == NULL)
		return -1;
	x->cfg = r->cfg;
	x->fd = -1;
	if ((rc = db_tx(r->db, "storage file delete", removal_tx, x)) < 0)
		rc = resp_db_error(r, rc);
	else
		rc = removal_answer(r, x);
	if (x->fd >= 0)
		close(x->fd);
	return rc;
}

/* --- DELETE /storage-explorer/storage/files ------------------------------------------ */

struct file_delete_query {
	char path[STORAGE_PATH_MAX + 1];
	bool force;
};

const struct vfield storage_file_delete_query[] = {
	{ "file_path", V_CHECK, 0, 0, 0, NULL, storage_file_check,
	  VOFF(struct file_delete_query, path) },
	{ "force", V_BOOL, 0, 0, 0, NULL, NULL, VOFF(struct file_delete_query, force) },
	VFIELDS_END
};

int storage_file_delete(struct req *r)
{
	struct file_delete_query q = { "", false };
	struct removal x = { .by_path = true };

	if ((x.customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_file_delete_query, &q, NULL) != 0)
		return -1;
	if (q.path[0] == '\0')
		return storage_reply(r, STORAGE_FILE_PATH_REQUIRED);
	x.force = q.force;
	memcpy(x.path, q.path, sizeof x.path);
	return removal_run(r, &x);
}

/* --- DELETE /storage-explorer/datasets/{datasetId} ------------------------------------ */

const struct vfield storage_delete_query[] = {
	{ "force", V_BOOL, 0, 0, 0, NULL, NULL, 0 },
	VFIELDS_END
};

int storage_dataset_delete(struct req *r)
{
	struct removal x = { .by_path = false };

	if ((x.customer = auth_customer_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_delete_query, &x.force, NULL) != 0)
		return -1;
	if (uuid_parse(req_param(r, "dataset_id"), x.id) != 0)
		return storage_reply(r, STORAGE_DATASET_NOT_FOUND);
	return removal_run(r, &x);
}
