/* uploads.c - POST /storage-explorer/storage/upload?folder_path=...
 *
 * multipart/form-data, one or more parts named "file".  Each part streams
 * to its own .sluice-partial-<random> file in the target folder as it
 * arrives (64 KiB at a time: memory stays flat whatever the size); only
 * once the whole body has parsed are the partial files renamed to their
 * names, in the same transaction that records the upload, its files, one
 * dataset per file and one storage_infer work item per dataset.  Any
 * failure before that (a bad part, a body over upload_max_bytes, a client
 * that goes away) unlinks every partial file and the folders the upload
 * made, and records nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/rand.h>

#include "auth/auth.h"
#include "db/db.h"
#include "http/errors.h"
#include "http/multipart.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "db/queue.h"
#include "storage/storage.h"
#include "tabular/tabular.h"
#include "util/config.h"
#include "util/log.h"
#include "util/uuid.h"
#include "util/wake.h"

#define UPLOAD_FILES_MAX 100
#define PARTIAL_NAME_MAX 64

struct up_file {
	char name[STORAGE_NAME_MAX + 1];
	char partial[PARTIAL_NAME_MAX];
	char path[STORAGE_PATH_MAX + 1];       /* relative to the customer root */
	char dataset_id[UUID_STR_LEN];
	enum tab_format fmt;
	long long size;
	bool renamed;
};

struct upload {
	struct req *r;
	int dirfd;                              /* the target folder */
	const char *folder;
	struct up_file *files;                  /* UPLOAD_FILES_MAX */
	size_t n;
	int fd;                                 /* the part being written, or -1 */
	/* why a callback stopped, answered by post ("" for the table's text) */
	enum storage_err err;
	char why[512];
};

/* Stop the parse; post answers err with the table's message. */
static int up_stop(struct upload *u, enum storage_err err)
{
	u->err = err;
	u->why[0] = '\0';
	return -1;
}

/* The same with a message that names the file. */
static int up_fail(struct upload *u, enum storage_err err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int up_fail(struct upload *u, enum storage_err err, const char *fmt, ...)
{
	va_list ap;

	u->err = err;
	va_start(ap, fmt);
	vsnprintf(u->why, sizeof u->why, fmt, ap);
	va_end(ap);
	return -1;
}

static int write_fail(struct upload *u, int e)
{
	log_kv(LOG_ERROR, "upload write failed", "errno=%d", e);
	return up_stop(u, e == ENOSPC || e == EDQUOT ? STORAGE_AREA_FULL
	                                             : STORAGE_WRITE_FAILED);
}

static int new_partial(struct upload *u, struct up_file *f)
{
	unsigned char rnd[8];

	for (int tries = 0; tries < 8; tries++) {
		if (RAND_bytes(rnd, sizeof rnd) != 1)
			break;
		snprintf(f->partial, sizeof f->partial, STORAGE_PARTIAL_PREFIX
		         "%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
		         rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
		u->fd = openat(u->dirfd, f->partial,
		               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (u->fd >= 0)
			return 0;
		if (errno != EEXIST)
			return write_fail(u, errno);
	}
	f->partial[0] = '\0';
	return write_fail(u, EIO);
}

/* s for a message: at most 128 bytes, bytes that are not printable UTF-8
 * as '?' (the answer is JSON, which must be UTF-8). */
static const char *printable(const char *s, char *buf, size_t cap)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0' && o + 5 < cap && o < 128;) {
		size_t len = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3
		             : (*p & 0xF8) == 0xF0 ? 4 : 0;
		bool ok = len > 0 && (len == 1 ? *p >= 0x20 && *p != 0x7F : *p >= 0xC2);

		for (size_t k = 1; ok && k < len; k++)
			ok = (p[k] & 0xC0) == 0x80;
		if (ok && len > 1) {
			/* the UTF-8 check proper: overlongs, surrogates, range */
			char one[5] = { 0 }, out[STORAGE_NAME_MAX + 1];
			const char *why;

			memcpy(one, p, len);
			ok = storage_file_name_clean(one, out, &why) == 0;
		}
		if (!ok) {
			buf[o++] = '?';
			p++;
			continue;
		}
		memcpy(buf + o, p, len);
		o += len;
		p += len;
	}
	buf[o] = '\0';
	return buf;
}

static int on_part_begin(void *arg, const struct multipart_part *p)
{
	struct upload *u = arg;
	struct up_file *f;
	const char *why;
	char name[STORAGE_NAME_MAX + 1], shown[160];

	if (strcmp(p->name, "file") != 0 || p->filename == NULL)
		return up_fail(u, STORAGE_UNEXPECTED_FIELD, "Unexpected form field '%s': "
		               "send files in parts named file",
		               printable(p->name, shown, sizeof shown));
	if (storage_file_name_clean(p->filename, name, &why) != 0)
		return up_fail(u, STORAGE_BAD_FILE_NAME, "File '%s' refused: %s",
		               printable(p->filename, shown, sizeof shown), why);
	if (u->n == UPLOAD_FILES_MAX)
		return up_stop(u, STORAGE_TOO_MANY_FILES);
	f = &u->files[u->n];
	memset(f, 0, sizeof *f);
	if (tab_format_from_name(name, &f->fmt) != 0)
		return up_fail(u, STORAGE_UNSUPPORTED_FILE_TYPE, "File '%s' has an unsupported "
		               "type: expected .csv, .txt, .tsv, .json, .jsonl, .ndjson, "
		               ".xlsx, .xls or .parquet", name);
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->files[i].name, name) == 0)
			return up_fail(u, STORAGE_DUPLICATE_FILE,
			               "File '%s' appears twice in the upload", name);
	if ((u->folder[0] != '\0' ? strlen(u->folder) + 1 : 0) + strlen(name) >
	    STORAGE_PATH_MAX)
		return up_fail(u, STORAGE_BAD_FILE_NAME, "File '%s' refused: %s", name,
		               "folder_path and file name together exceed 1024 bytes");
	snprintf(f->name, sizeof f->name, "%s", name);
	snprintf(f->path, sizeof f->path, "%s%s%s", u->folder,
	         u->folder[0] != '\0' ? "/" : "", name);
	u->n++;
	return new_partial(u, f);
}

static int on_part_data(void *arg, const char *data, size_t len)
{
	struct upload *u = arg;
	struct up_file *f = &u->files[u->n - 1];

	while (len > 0) {
		ssize_t w = write(u->fd, data, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return write_fail(u, errno);
		}
		data += w;
		len -= (size_t)w;
		f->size += w;
	}
	return 0;
}

static int on_part_end(void *arg)
{
	struct upload *u = arg;
	int fd = u->fd;

	u->fd = -1;
	/* On disk before the rename makes it visible under its name. */
	if (fdatasync(fd) != 0) {
		int e = errno;

		close(fd);
		return write_fail(u, e);
	}
	if (close(fd) != 0)
		return write_fail(u, errno);
	return 0;
}

/* Unlink every partial file (after a failure, or what a rename left). */
static void drop_partials(struct upload *u)
{
	if (u->fd >= 0) {
		close(u->fd);
		u->fd = -1;
	}
	for (size_t i = 0; i < u->n; i++)
		if (u->files[i].partial[0] != '\0' && !u->files[i].renamed)
			unlinkat(u->dirfd, u->files[i].partial, 0);
}

static struct json_object *uploaded_at(struct db *db, const char *upload_id)
{
	struct db_stmt *st = db_query(db, "SELECT created_at FROM uploads WHERE id = ?",
	                              "s", upload_id);
	struct json_object *t = NULL;

	if (st != NULL && db_fetch(st) == 1)
		t = storage_json_time(db_col_str(st, 0));
	db_done(st);
	return t;
}

struct store_tx {
	struct upload *u;
	const char *customer, *upload_id;
	long long total;
	int rename_errno;             /* a rename failed: its errno (rolled back) */
	const char *rename_path;
};

/* One attempt: the upload, its files' datasets and their inference queued,
 * then the files renamed into place before the COMMIT, so the worker can
 * claim nothing before the files are there.  A rename is not undone by a
 * rollback; a retry skips the files already renamed (the rows it writes
 * again point at the same paths).  0, or < 0. */
static int store_body(struct db *db, void *arg)
{
	struct store_tx *x = arg;
	struct upload *u = x->u;
	char payload[128];
	long long n;
	int rc;

	if ((n = db_exec(db, "INSERT INTO uploads (id, customer_id, folder_path, "
	    "file_count, total_bytes, status, created_at, created_by) VALUES "
	    "(?, ?, ?, ?, ?, 'processing', UTC_TIMESTAMP(3), ?)", "sssiis",
	    x->upload_id, x->customer, u->folder, (long long)u->n, x->total,
	    u->r->id.sub)) < 0)
		return (int)n;
	for (size_t i = 0; i < u->n; i++) {
		struct up_file *f = &u->files[i];
		const struct db_text row[] = {
			{ f->dataset_id, sizeof f->dataset_id },
		};
		char id[UUID_STR_LEN];

		if (uuid_v4(id, '-') != 0)
			return DB_ERR;
		/* A file uploaded again replaces the old one and keeps its
		 * dataset (and its parsing options), inferred anew. */
		if ((n = db_exec(db, "INSERT INTO datasets (id, customer_id, upload_id, "
		    "file_path, file_name, format, size_bytes, status) VALUES "
		    "(?, ?, ?, ?, ?, ?, ?, 'pending') ON DUPLICATE KEY UPDATE "
		    "upload_id = VALUES(upload_id), file_name = VALUES(file_name), "
		    "format = VALUES(format), size_bytes = VALUES(size_bytes), "
		    "status = 'pending', schema_json = NULL, row_count = NULL, "
		    "analyzed_rows = NULL, error = NULL", "ssssssi", id, x->customer,
		    x->upload_id, f->path, f->name, tab_format_name(f->fmt), f->size)) < 0)
			return (int)n;
		rc = db_first_row(db, db_query(db, "SELECT id FROM datasets WHERE "
		                  "customer_id = ? AND path_hash = UNHEX(SHA2(?, 256))",
		                  "ss", x->customer, f->path), row, 1);
		if (rc != 1)
			return rc < 0 ? rc : DB_ERR;
		if ((n = db_exec(db, "INSERT INTO upload_files (upload_id, position, "
		    "file_name, file_path, format, size_bytes, dataset_id) VALUES "
		    "(?, ?, ?, ?, ?, ?, ?)", "sisssis", x->upload_id, (long long)i,
		    f->name, f->path, tab_format_name(f->fmt), f->size,
		    f->dataset_id)) < 0)
			return (int)n;
		snprintf(payload, sizeof payload, "{\"upload_id\":\"%s\",\"position\":%zu}",
		         x->upload_id, i);
		if ((n = queue_enqueue(db, &(struct queue_new){ .kind = "storage_infer",
		    .ref_id = f->dataset_id, .customer_id = x->customer,
		    .payload = payload })) < 0)
			return (int)n;
	}
	for (size_t i = 0; i < u->n; i++) {
		struct up_file *f = &u->files[i];

		if (f->renamed)
			continue;
		if (renameat(u->dirfd, f->partial, u->dirfd, f->name) != 0) {
			x->rename_errno = errno;
			x->rename_path = f->path;
			return DB_ERR;
		}
		f->renamed = true;
	}
	return 0;
}

/* Record it all and rename the files into place, in one transaction
 * (store_body).  Answers. */
static int store(struct upload *u, const char *customer)
{
	struct req *r = u->r;
	struct db *db = r->db;
	char upload_id[UUID_STR_LEN];
	struct store_tx x = { u, customer, upload_id, 0, 0, NULL };
	struct json_object *o, *files, *at;
	int rc;

	for (size_t i = 0; i < u->n; i++)
		x.total += u->files[i].size;
	if (uuid_v4(upload_id, '-') != 0)
		return resp_internal(r, "uuid_v4 failed");
	rc = db_tx(db, "upload", store_body, &x);
	if (x.rename_errno != 0) {
		int e = x.rename_errno;

		if (e == EISDIR || e == ENOTEMPTY || e == EEXIST)
			return storage_replyf(r, STORAGE_PATH_CONFLICT,
			                      "'%s' is a folder in the storage area",
			                      x.rename_path);
		log_kv(LOG_ERROR, "upload rename failed", "errno=%d", e);
		return storage_reply(r, STORAGE_AREA_UNAVAILABLE);
	}
	if (rc < 0)
		return resp_db_error(r, rc);
	fsync(u->dirfd);
	wake_send(r->cfg, WAKE_WORK, "storage_infer", NULL);

	at = uploaded_at(db, upload_id);
	files = json_object_new_array();
	for (size_t i = 0; i < u->n; i++) {
		struct json_object *f = json_object_new_object();

		json_object_object_add(f, "file_name", json_object_new_string(u->files[i].name));
		json_object_object_add(f, "file_size_bytes",
		                       json_object_new_int64(u->files[i].size));
		json_object_object_add(f, "file_format",
		                       json_object_new_string(tab_format_api_name(u->files[i].fmt)));
		json_object_object_add(f, "file_path", json_object_new_string(u->files[i].path));
		json_object_object_add(f, "dataset_id",
		                       json_object_new_string(u->files[i].dataset_id));
		json_object_array_add(files, f);
	}
	o = json_object_new_object();
	json_object_object_add(o, "upload_id", json_object_new_string(upload_id));
	json_object_object_add(o, "folder_path", json_object_new_string(u->folder));
	json_object_object_add(o, "uploaded_at", at);
	json_object_object_add(o, "uploaded_by", r->id.sub != NULL
	                       ? json_object_new_string(r->id.sub) : NULL);
	json_object_object_add(o, "file_count", json_object_new_int64((long long)u->n));
	json_object_object_add(o, "total_size_bytes", json_object_new_int64(x.total));
	json_object_object_add(o, "status", json_object_new_string("processing"));
	json_object_object_add(o, "files", files);
	return resp_json(r, 201, o);
}

static int too_large(struct req *r)
{
	return storage_replyf(r, STORAGE_UPLOAD_TOO_LARGE, "The upload is larger than "
	                      "%ld bytes", r->cfg->upload_max_bytes);
}

/* Stream the body through the parser: 0 parsed whole, -1 answered (or
 * the client went away: r->status 499). */
static int read_body(struct upload *u, const char *boundary)
{
	static const struct multipart_cb cb = { on_part_begin, on_part_data, on_part_end };
	struct req *r = u->r;
	long max = r->cfg->upload_max_bytes;
	struct multipart *m;
	char err[256], *buf;
	size_t got, total = 0;
	const size_t cap = 64 * 1024;
	int rc = -1, frc;

	if ((m = multipart_new(boundary)) == NULL)
		return storage_reply(r, STORAGE_NOT_MULTIPART);
	if ((buf = malloc(cap)) == NULL) {
		multipart_free(m);
		return resp_internal(r, "out of memory");
	}
	req_before_slow_work(r);        /* up to upload_max_bytes to disk */
	for (;;) {
		if (req_read_some(r, buf, cap, &got) != REQ_OK) {
			r->status = 499;        /* the client is gone */
			goto out;
		}
		if (got == 0)
			break;
		total += got;
		if (total > (size_t)max) {
			too_large(r);
			goto out;
		}
		frc = multipart_feed(m, buf, got, &cb, u, err, sizeof err);
		if (frc == MULTIPART_ERR_STOP) {
			storage_reply_with(r, u->err, u->why[0] != '\0' ? u->why : NULL, NULL);
			goto out;
		}
		if (frc != MULTIPART_OK) {
			storage_replyf(r, STORAGE_BAD_UPLOAD, "%s", err);
			goto out;
		}
	}
	if (r->content_length >= 0 && total < (size_t)r->content_length) {
		r->status = 499;
		goto out;
	}
	if (multipart_finish(m, err, sizeof err) != MULTIPART_OK) {
		/* A body cut short without a length (chunked) also ends here. */
		storage_replyf(r, STORAGE_BAD_UPLOAD, "%s", err);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	multipart_free(m);
	return rc;
}

struct upload_query {
	struct storage_folder folder;
};

const struct vfield storage_upload_query[] = {
	STORAGE_FOLDER_ROW(struct upload_query, folder),
	VFIELDS_END
};

int storage_upload_post(struct req *r)
{
	struct upload_query q = { .folder.given = false };
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	const char *folder = q.folder.path;
	struct storage_made_dirs *made = NULL;
	struct upload u;
	const char *customer;
	int rootfd = -1;

	memset(&u, 0, sizeof u);
	u.dirfd = -1;
	u.fd = -1;
	if ((customer = auth_customer_ensure_or_reply(r)) == NULL)
		return -1;
	if (storage_query_or_reply(r, storage_upload_query, &q, NULL) != 0)
		return -1;
	if (multipart_boundary(r->content_type, boundary) != 0)
		return storage_reply(r, STORAGE_NOT_MULTIPART);
	if (r->content_length > r->cfg->upload_max_bytes)
		return too_large(r);

	if ((rootfd = storage_root_open(r->cfg, customer, true)) < 0) {
		log_kv(LOG_ERROR, "storage root unavailable", "errno=%d", -rootfd);
		return storage_reply(r, STORAGE_AREA_UNAVAILABLE);
	}
	made = calloc(1, sizeof *made);
	u.files = calloc(UPLOAD_FILES_MAX, sizeof *u.files);
	if (made == NULL || u.files == NULL) {
		resp_internal(r, "out of memory");
		goto out;
	}
	u.dirfd = storage_dir_open(rootfd, folder, made);
	if (u.dirfd < 0) {
		if (u.dirfd == -ENOTDIR || u.dirfd == -ELOOP)
			storage_replyf(r, STORAGE_NOT_A_FOLDER, "folder_path '%s' is "
			               "not a folder of the storage area", folder);
		else
			storage_reply(r, STORAGE_AREA_UNAVAILABLE);
		goto out;
	}
	u.r = r;
	u.folder = folder;
	if (read_body(&u, boundary) != 0)
		goto out;
	if (u.n == 0)
		storage_reply(r, STORAGE_UPLOAD_NO_FILES);
	else if (req_db_or_reply(r) != NULL)
		store(&u, customer);
out:
	drop_partials(&u);
	if (r->status != 201) {
		storage_dir_unmake(rootfd, made);
		log_kv(LOG_INFO, "upload refused", "status=%d files=%zu", r->status, u.n);
	}
	if (u.dirfd >= 0)
		close(u.dirfd);
	if (rootfd >= 0)
		close(rootfd);
	free(u.files);
	free(made);
	return r->status == 201 ? 0 : -1;
}
