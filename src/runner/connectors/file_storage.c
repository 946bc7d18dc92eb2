/* file_storage.c - the file_storage connector: load the data files under
 * the job's prefix in the customer's storage area, each file once per
 * version.
 *
 * input.prefix is relative to <storage_root>/customers/<customer_id>/ and
 * selects files as an object-store prefix does: "exports/" is every file in
 * exports/ and below it, "exports/2026-" every file whose path starts so.
 * The walk never follows a symbolic link (openat with O_NOFOLLOW from the
 * customer's root down), and skips every name starting with '.' (uploads
 * in progress are ".sluice-partial-..."), so nothing outside the area and
 * nothing half-written is read.
 *
 * A file is loaded when file_storage_processed has no record of it with
 * the same last-modified time and size.  Loading one file is one
 * transaction: the rows an earlier version of it left (_source_file = its
 * path) are deleted, its rows are inserted, and its processed record is
 * saved (state_save_processed_file); a failure rolls all of it back.
 *
 * The destination table is created from the first file loaded into it
 * (types inferred by infer_file), plus _source_file and _source_row.  Each
 * later file's types are inferred too: a column whose values widened (more
 * decimal places, a DATE column with times) is widened first, a column the
 * table lacks is added, and a type the table cannot take fails the file
 * before any DDL (db/wh_evolve.h).  When the file's rows then fail, the
 * columns added for it (or the table created for it) are removed again;
 * a widening stays, harmless to the rows already there. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/warehouse.h"
#include "runner/connector.h"
#include "runner/connectors/dest.h"
#include "runner/connectors/file_storage.h"
#include "tabular/tabular.h"
#include "util/config.h"
#include "util/str.h"

#define FS_PREFIX_MAX 1024           /* bytes of input.prefix */
#define FS_PATH_MAX 1024             /* bytes of a file's path (the column's size) */
#define FS_FILES_MAX 100000          /* files looked at in one run */
#define FS_DEPTH_MAX 32              /* folder levels below the prefix */
#define FS_COLUMNS_MAX 4000
#define FS_BATCH_ROWS 5000
#define FS_ANALYZE_ROWS 10000        /* rows whose values set a new column's type */
#define FS_SOURCE_FILE "_source_file"
#define FS_SOURCE_ROW "_source_row"

#define LOGI(e, ...) do { if ((e)->log != NULL) run_log_info((e)->log, __VA_ARGS__); } while (0)
#define LOGW(e, ...) do { if ((e)->log != NULL) run_log_warning((e)->log, __VA_ARGS__); } while (0)
#define LOGE(e, ...) do { if ((e)->log != NULL) run_log_error((e)->log, __VA_ARGS__); } while (0)

struct fs_file {
	char *path;                      /* relative to the customer's root */
	long long size;
	struct timespec mtime;
};

struct fs_list {
	struct fs_file *v;
	size_t n, cap;
	long long symlinks, too_long;
	bool truncated;
};

struct fs_run {
	const struct job_spec *job;
	struct task_env *env;
	const char *schema, *table;
	struct tab_opts opts;
	bool table_ready;                /* the destination exists */
};

/* ==== paths ================================================================ */

bool file_storage_prefix_ok(const char *p, size_t len)
{
	if (len != strlen(p) || len > FS_PREFIX_MAX || p[0] == '/' ||
	    strchr(p, '\\') != NULL)
		return false;
	for (const char *seg = p; seg != NULL; seg = strchr(seg, '/')) {
		if (*seg == '/')
			seg++;
		if (seg[0] == '.' && seg[1] == '.' && (seg[2] == '/' || seg[2] == '\0'))
			return false;
	}
	return true;
}

static bool customer_id_ok(const char *id)
{
	size_t n = id != NULL ? strlen(id) : 0;

	if (n == 0 || n > 64)
		return false;
	for (; *id != '\0'; id++)
		if (!isalnum((unsigned char)*id) && *id != '-' && *id != '_')
			return false;
	return true;
}

static int list_add(struct fs_list *l, const char *path, const struct stat *st)
{
	if (l->n == l->cap) {
		size_t cap = l->cap != 0 ? l->cap * 2 : 64;
		struct fs_file *v = realloc(l->v, cap * sizeof *v);

		if (v == NULL)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	if ((l->v[l->n].path = strdup(path)) == NULL)
		return -1;
	l->v[l->n].size = (long long)st->st_size;
	l->v[l->n].mtime = st->st_mtim;
	l->n++;
	return 0;
}

/* Files below dirfd (whose path is rel, "" or "a/b/"), whose names start
 * with name_prefix at this level.  Takes dirfd.  0 or -1 (out of memory). */
static int walk(int dirfd, const char *rel, const char *name_prefix, int depth,
                struct fs_list *l)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;
	size_t plen = strlen(name_prefix);
	int rc = 0;

	if (d == NULL) {
		close(dirfd);
		return 0;
	}
	while (rc == 0 && !l->truncated && (e = readdir(d)) != NULL) {
		char path[FS_PATH_MAX + 2];
		struct stat st;
		int n;

		if (e->d_name[0] == '.' || strncmp(e->d_name, name_prefix, plen) != 0)
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		n = snprintf(path, sizeof path, "%s%s", rel, e->d_name);
		if (n < 0 || (size_t)n > FS_PATH_MAX) {
			l->too_long++;
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			l->symlinks++;
		} else if (S_ISDIR(st.st_mode) && depth < FS_DEPTH_MAX) {
			int fd = openat(dirfd, e->d_name,
			                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0 && (size_t)n + 1 <= FS_PATH_MAX) {
				path[n] = '/';
				path[n + 1] = '\0';
				rc = walk(fd, path, "", depth + 1, l);
			} else if (fd >= 0) {
				close(fd);
			}
		} else if (S_ISREG(st.st_mode)) {
			if (l->n >= FS_FILES_MAX)
				l->truncated = true;
			else if (list_add(l, path, &st) != 0)
				rc = -1;
		}
	}
	closedir(d);
	return rc;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fs_file *)a)->path, ((const struct fs_file *)b)->path);
}

/* The customer's storage area as a directory descriptor, reached without
 * following a symbolic link below storage_root.  The descriptor, -2 when
 * the area does not exist (nothing uploaded yet), or -1 with err. */
static int area_open(const struct config *cfg, const char *customer_id,
                     char *err, size_t errlen)
{
	int root, cust, area;

	root = open(cfg->storage_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		str_errf(err, errlen, "the storage area cannot be read");
		return -1;
	}
	cust = openat(root, "customers", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(root);
	if (cust < 0)
		return -2;
	area = openat(cust, customer_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(cust);
	return area >= 0 ? area : -2;
}

/* Open rel (a path below the area) for reading, one component at a time,
 * never through a symbolic link.  The descriptor or -1. */
static int open_below(int area, const char *rel)
{
	char buf[FS_PATH_MAX + 1];
	char *save = NULL, *seg, *next;
	int fd = dup(area);

	if (fd < 0 || str_copy(buf, sizeof buf, rel) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (seg = strtok_r(buf, "/", &save); seg != NULL; seg = next) {
		int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC;
		int nfd;

		next = strtok_r(NULL, "/", &save);
		if (next != NULL)
			flags |= O_DIRECTORY;
		nfd = openat(fd, seg, flags);
		close(fd);
		if (nfd < 0)
			return -1;
		fd = nfd;
	}
	return fd;
}

/* List the files under prefix, never through a symbolic link.  0 (the
 * list may be empty: no such folder), or -1 with err. */
static int list_files(int area, const char *prefix, struct fs_list *l,
                      char *err, size_t errlen)
{
	char dirpart[FS_PREFIX_MAX + 1];
	const char *slash = strrchr(prefix, '/');
	const char *name_prefix = slash != NULL ? slash + 1 : prefix;
	char rel[FS_PATH_MAX + 2] = "";
	int fd, next;
	char *save = NULL, *seg;

	if ((fd = dup(area)) < 0) {
		str_errf(err, errlen, "the storage area cannot be read");
		return -1;
	}
	memcpy(dirpart, prefix, (size_t)(name_prefix - prefix));
	dirpart[name_prefix - prefix] = '\0';
	for (seg = strtok_r(dirpart, "/", &save); seg != NULL;
	     seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (seg[0] == '.') {          /* hidden folders hold nothing to load */
			close(fd);
			return 0;
		}
		next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR) {
				str_errf(err, errlen, "the prefix names a symbolic link or a file "
				         "where a folder should be ('%.100s')", seg);
				return -1;
			}
			return 0;
		}
		fd = next;
		if (strlen(rel) + strlen(seg) + 1 > FS_PATH_MAX) {
			close(fd);
			return 0;
		}
		strcat(rel, seg);
		strcat(rel, "/");
	}
	if (walk(fd, rel, name_prefix, 0, l) != 0) {
		str_errf(err, errlen, "out of memory listing the files");
		return -1;
	}
	qsort(l->v, l->n, sizeof *l->v, file_cmp);
	return 0;
}

static void list_free(struct fs_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
}

/* ==== processed records ======================================================== */

static void mtime_sql(const struct timespec *t, char *buf, size_t cap)
{
	struct tm tm;
	time_t s = t->tv_sec;

	gmtime_r(&s, &tm);
	snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d.%03d",
	         (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100, tm.tm_mday % 100,
	         tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100,
	         (int)(t->tv_nsec / 1000000) % 1000);
}

/* 1 when the job has processed this version of the file, 0 not, -1 error. */
static int processed(struct task_env *env, const char *job_id,
                     const struct fs_file *f, const char *mtime)
{
	struct db_stmt *st;
	int rc;

	st = db_query(env->db, "SELECT 1 FROM file_storage_processed WHERE job_id = ? "
	              "AND path_hash = UNHEX(SHA2(?, 256)) AND file_path = ? "
	              "AND last_modified = ? AND size_bytes = ?", "ssssi", job_id,
	              f->path, f->path, mtime, f->size);
	if (st == NULL)
		return -1;
	rc = db_fetch(st);
	db_done(st);
	return rc < 0 ? -1 : rc;
}

/* ==== columns ==================================================================== */

static enum dest_kind kind_of(const struct infer_column *c, int *scale)
{
	*scale = 0;
	switch (c->type) {
	case INFER_INTEGER:
	case INFER_BIGINT:    return DEST_BIGINT;
	case INFER_DECIMAL:
		/* Room for more digits than the first file showed. */
		*scale = c->scale < 6 ? 6 : c->scale > 30 ? 30 : c->scale;
		return DEST_DECIMAL;
	case INFER_DOUBLE:    return DEST_DOUBLE;
	case INFER_BOOLEAN:   return DEST_BOOL;
	case INFER_DATE:      return DEST_DATE;
	case INFER_TIMESTAMP: return DEST_DATETIME;
	case INFER_VARCHAR:   break;
	}
	return DEST_TEXT;
}

static bool name_taken(char (*names)[DEST_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(names[i], name) == 0)
			return true;
	return false;
}

/* MariaDB compares column names without case. */
void file_storage_column_names(const struct tab_cell *cells, size_t n,
                               char (*names)[DEST_NAME_MAX])
{
	for (size_t i = 0; i < n; i++) {
		char base[DEST_NAME_MAX], cand[DEST_NAME_MAX + 16];
		const char *t = cells[i].text;
		size_t len = cells[i].len, chars = 0, cut = 0;

		while (len > 0 && isspace((unsigned char)*t)) {
			t++;
			len--;
		}
		while (len > 0 && isspace((unsigned char)t[len - 1]))
			len--;
		/* at most 64 characters, cut at a character boundary */
		while (cut < len && chars < WH_IDENT_MAX) {
			cut++;
			while (cut < len && ((unsigned char)t[cut] & 0xC0) == 0x80)
				cut++;
			chars++;
		}
		if (cut >= sizeof base)
			cut = 0;
		memcpy(base, t, cut);
		base[cut] = '\0';
		while (cut > 0 && base[cut - 1] == ' ')
			base[--cut] = '\0';
		if (cut == 0 || !wh_ident_ok(base) || memchr(t, '\0', cut) != NULL)
			snprintf(base, sizeof base, "column_%zu", i + 1);
		snprintf(cand, sizeof cand, "%s", base);
		for (int k = 2; name_taken(names, i, cand) ||
		     strcasecmp(cand, FS_SOURCE_FILE) == 0 ||
		     strcasecmp(cand, FS_SOURCE_ROW) == 0; k++) {
			char suffix[16];
			size_t sl = (size_t)snprintf(suffix, sizeof suffix, "_%d", k);
			size_t bl = strlen(base);

			/* keep the result within 64 bytes (ASCII suffix) */
			if (bl + sl > WH_IDENT_MAX) {
				bl = WH_IDENT_MAX - sl;
				while (bl > 0 && ((unsigned char)base[bl] & 0xC0) == 0x80)
					bl--;
			}
			snprintf(cand, sizeof cand, "%.*s%s", (int)bl, base, suffix);
		}
		if (str_copy(names[i], DEST_NAME_MAX, cand) != 0)
			snprintf(names[i], DEST_NAME_MAX, "column_%zu", i + 1);
	}
}

/* ==== one file =================================================================== */

struct header_grab {
	char (*names)[DEST_NAME_MAX];
	size_t n;
	bool oom;
};

static int grab_header(void *arg, const struct tab_cell *cells, size_t n)
{
	struct header_grab *h = arg;

	if (n > FS_COLUMNS_MAX)
		n = FS_COLUMNS_MAX;
	h->names = calloc(n > 0 ? n : 1, sizeof *h->names);
	if (h->names == NULL) {
		h->oom = true;
		return -1;
	}
	h->n = n;
	file_storage_column_names(cells, n, h->names);
	return 1;                         /* the header is all we want */
}

static int grab_row(void *arg, const struct tab_cell *cells, size_t n)
{
	(void)arg;
	(void)cells;
	(void)n;
	return 1;
}

struct loader {
	struct fs_run *r;
	const char *path;
	struct dest_writer *wr;
	size_t nfile;                     /* columns of the file */
	enum dest_kind *kinds;            /* of each file column */
	const char **vals;                /* nfile + 2 */
	size_t *lens;
	char (*scratch)[DEST_DATETIME_LEN];
	char rowno[24];
	long long rows;
	char err[512];
};

static int load_header(void *arg, const struct tab_cell *cells, size_t n)
{
	(void)arg;
	(void)cells;
	(void)n;
	return 0;
}

static int load_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct loader *ld = arg;

	for (size_t i = 0; i < ld->nfile; i++) {
		const struct tab_cell *c = i < n ? &cells[i] : NULL;
		const char *v;

		ld->vals[i] = NULL;
		ld->lens[i] = 0;
		if (c == NULL || tab_cell_is_null(c, ld->kinds[i] == DEST_TEXT))
			continue;
		v = c->text;
		ld->vals[i] = v;
		ld->lens[i] = c->len;
		/* The forms MariaDB does not take as written; a value that does
		 * not parse goes as written and the column's type decides. */
		switch (ld->kinds[i]) {
		case DEST_BOOL:
			if (dest_bool_norm(v, c->len, &ld->vals[i]) == 0)
				ld->lens[i] = 1;
			break;
		case DEST_DATETIME:
			if (dest_datetime_norm(v, c->len, ld->scratch[i]) == 0) {
				ld->vals[i] = ld->scratch[i];
				ld->lens[i] = strlen(ld->scratch[i]);
			}
			break;
		case DEST_DATE:
			if (dest_date_norm(v, c->len, ld->scratch[i]) == 0) {
				ld->vals[i] = ld->scratch[i];
				ld->lens[i] = strlen(ld->scratch[i]);
			}
			break;
		default:
			break;
		}
	}
	ld->rows++;
	snprintf(ld->rowno, sizeof ld->rowno, "%lld", ld->rows);
	ld->vals[ld->nfile] = ld->path;
	ld->lens[ld->nfile] = strlen(ld->path);
	ld->vals[ld->nfile + 1] = ld->rowno;
	ld->lens[ld->nfile + 1] = strlen(ld->rowno);
	if (dest_writer_add(ld->wr, ld->vals, ld->lens, ld->err, sizeof ld->err) != 0)
		return -1;
	return 0;
}

/* What ensuring a file's columns changed in the table, to be undone when
 * the file's rows fail: the table created for it, or the columns added. */
struct fs_ddl {
	struct task_env *env;
	bool made;
	char (*added)[DEST_NAME_MAX];
	size_t nadded, cap;
};

static void fs_evolved(void *arg, const char *column, const char *from, const char *to)
{
	struct fs_ddl *d = arg;

	if (from != NULL)
		run_log_widened(d->env->log, column, from, to);
	else if (d->nadded < d->cap)
		snprintf(d->added[d->nadded++], DEST_NAME_MAX, "%s", column);
}

/* Make the table hold the file's columns with the types inferred from this
 * file: create it, or widen the columns whose values widened and add those
 * it lacks (a type the table cannot take fails here, before any DDL).
 * kinds[i] is the type of names[i] in this file, for its values.  0; -2
 * when the file cannot be read (reason in err); -1 when the table cannot
 * take the file (a column named in err) or on a warehouse error. */
static int ensure_columns(struct fs_run *r, const char *path, const char *shown,
                          enum tab_format fmt, char (*names)[DEST_NAME_MAX],
                          size_t n, enum dest_kind *kinds, struct fs_ddl *ddl,
                          char *err, size_t errlen)
{
	struct infer_result ir = { 0 };
	struct dest_col *cols = NULL;
	struct dest_evolve ev = { 0, fs_evolved, ddl };
	size_t nc = 0;
	int rc = -1, made;

	if (infer_file(path, fmt, &r->opts, &ir, err, errlen) != 0)
		return -2;
	if ((cols = calloc(n + 2, sizeof *cols)) == NULL ||
	    (ddl->added = calloc(n + 2, sizeof *ddl->added)) == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	ddl->cap = n + 2;
	for (size_t i = 0; i < n; i++) {
		struct dest_col *c = &cols[nc++];

		snprintf(c->name, sizeof c->name, "%s", names[i]);
		c->nullable = true;
		c->kind = i < ir.ncols ? kind_of(&ir.cols[i], &c->scale) : DEST_TEXT;
		kinds[i] = c->kind;
	}
	snprintf(cols[nc].name, DEST_NAME_MAX, "%s", FS_SOURCE_FILE);
	cols[nc].kind = DEST_TEXT;
	cols[nc].varchar_len = FS_PATH_MAX;
	cols[nc++].nullable = true;
	snprintf(cols[nc].name, DEST_NAME_MAX, "%s", FS_SOURCE_ROW);
	cols[nc].kind = DEST_BIGINT;
	cols[nc++].nullable = true;
	made = dest_table_ensure(r->env->wh, r->schema, r->table, cols, nc, NULL, 0,
	                         FS_SOURCE_FILE, &ev, err, errlen);
	if (made < 0)
		goto out;
	ddl->made = made == 1;
	if (made)
		LOGI(r->env, "table %s.%s created with %zu columns, types inferred "
		     "from %s", r->schema, r->table, nc, shown);
	else if (ddl->nadded > 0)
		LOGI(r->env, "%s: %zu columns added to %s.%s", shown, ddl->nadded,
		     r->schema, r->table);
	r->table_ready = true;
	rc = 0;
out:
	free(cols);
	infer_result_free(&ir);
	return rc;
}

/* The file's rows failed: the table created for it, or the columns added
 * for it, go again (they hold no row: the load rolled back). */
static void undo_ddl(struct fs_run *r, struct fs_ddl *ddl)
{
	struct strbuf b = { 0 };
	char err[256];

	if (ddl->made) {
		if (wh_table_drop(r->env->wh, r->schema, r->table, err, sizeof err) == 0)
			r->table_ready = false;
		else
			LOGW(r->env, "table %s.%s created for a file that failed is left: %s",
			     r->schema, r->table, err);
		return;
	}
	if (ddl->nadded == 0)
		return;
	strbuf_adds(&b, "ALTER TABLE ");
	dest_ident(&b, r->schema);
	strbuf_adds(&b, ".");
	dest_ident(&b, r->table);
	for (size_t i = 0; i < ddl->nadded; i++) {
		strbuf_adds(&b, i > 0 ? ", DROP COLUMN IF EXISTS " : " DROP COLUMN IF EXISTS ");
		dest_ident(&b, ddl->added[i]);
	}
	if (b.oom || wh_exec(r->env->wh, b.p, err, sizeof err) < 0)
		LOGW(r->env, "%zu columns added for a file that failed are left in %s.%s",
		     ddl->nadded, r->schema, r->table);
	strbuf_free(&b);
}

static int txn_delete_old(struct fs_run *r, const struct fs_file *f,
                          long long *removed, char *err, size_t errlen)
{
	struct strbuf del = { 0 };
	const char *param[1] = { f->path };

	strbuf_adds(&del, "DELETE FROM ");
	dest_ident(&del, r->schema);
	strbuf_adds(&del, ".");
	dest_ident(&del, r->table);
	strbuf_adds(&del, " WHERE ");
	dest_ident(&del, FS_SOURCE_FILE);
	strbuf_adds(&del, " = ?");
	if (del.oom) {
		strbuf_free(&del);
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	*removed = wh_exec_bound(r->env->wh, del.p, param, 1, err, errlen);
	strbuf_free(&del);
	return *removed < 0 ? -1 : 0;
}

/* Load one file (open as fd) in one transaction: its earlier rows out,
 * its rows in, its processed record saved.  0; 1 when it failed (reason in
 * err; rolled back); -1 when the task cannot go on (out of memory). */
static int load_file(struct fs_run *r, int fd, const struct fs_file *f,
                     enum tab_format fmt, const char *mtime, char *err,
                     size_t errlen)
{
	struct header_grab h = { 0 };
	struct tab_sink hs = { grab_header, grab_row, &h };
	struct tab_sink ls = { load_header, load_row, NULL };
	struct tab_stats stats = { 0 };
	struct loader ld = { .r = r, .path = f->path };
	struct fs_ddl ddl = { .env = r->env };
	const char **colnames = NULL;
	char path[64], why[512] = "";
	long long removed = 0;
	bool in_txn = false;
	int rc = 1, tr;

	/* The readers open by name: this name is the descriptor opened
	 * without following links, whatever happens to the path meanwhile. */
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	/* An empty file has no rows (and no header): only its record is saved
	 * (and the rows of an earlier version of it removed). */
	tr = f->size == 0 ? 0 : tab_read(path, fmt, &r->opts, &hs, NULL, why, sizeof why);
	if (tr != 0) {
		str_errf(err, errlen, "%s: %s", f->path, h.oom ? "out of memory" : why);
		goto out;
	}
	ld.nfile = h.n;
	ld.kinds = calloc(h.n + 1, sizeof *ld.kinds);
	ld.vals = calloc(h.n + 2, sizeof *ld.vals);
	ld.lens = calloc(h.n + 2, sizeof *ld.lens);
	ld.scratch = calloc(h.n + 1, sizeof *ld.scratch);
	colnames = calloc(h.n + 2, sizeof *colnames);
	if (ld.kinds == NULL || ld.vals == NULL || ld.lens == NULL ||
	    ld.scratch == NULL || colnames == NULL) {
		str_errf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	if (h.names != NULL) {
		tr = ensure_columns(r, path, f->path, fmt, h.names, h.n, ld.kinds, &ddl,
		                    why, sizeof why);
		if (tr != 0) {
			str_errf(err, errlen, "%s: %s", f->path, why);
			goto out;
		}
	}
	for (size_t i = 0; i < h.n; i++)
		colnames[i] = h.names[i];
	colnames[h.n] = FS_SOURCE_FILE;
	colnames[h.n + 1] = FS_SOURCE_ROW;

	if (wh_begin(r->env->wh) != 0) {
		str_errf(err, errlen, "warehouse: cannot begin a transaction: %s",
		         wh_error(r->env->wh));
		goto out;
	}
	in_txn = true;
	/* An empty file (no header) before the table exists has no rows to
	 * replace: only its record is saved. */
	if (r->table_ready || h.names != NULL ||
	    wh_table_exists(r->env->wh, r->schema, r->table, why, sizeof why) == 1) {
		if (txn_delete_old(r, f, &removed, why, sizeof why) != 0) {
			str_errf(err, errlen, "%s: removing the rows of its earlier version "
			         "failed: %s", f->path, why);
			goto out;
		}
	}
	if (h.names != NULL) {
		ld.wr = dest_writer_new(r->env->wh, r->schema, r->table, colnames,
		                        h.n + 2, false, FS_BATCH_ROWS, why, sizeof why);
		if (ld.wr == NULL) {
			str_errf(err, errlen, "%s: %s", f->path, why);
			goto out;
		}
		ls.arg = &ld;
		tr = tab_read(path, fmt, &r->opts, &ls, &stats, why, sizeof why);
		if (tr == TAB_ERR_STOP) {
			str_errf(err, errlen, "%s: loading rows up to row %lld failed: %s",
			         f->path, ld.rows, ld.err);
			goto out;
		}
		if (tr != 0) {
			str_errf(err, errlen, "%s: %s", f->path, why);
			goto out;
		}
		if (dest_writer_flush(ld.wr, why, sizeof why) != 0) {
			str_errf(err, errlen, "%s: %s", f->path, why);
			goto out;
		}
	}
	if (state_save_processed_file(r->env, r->job->job_id, f->path, mtime,
	                              f->size, why, sizeof why) != 0) {
		str_errf(err, errlen, "%s: saving its processed record failed: %s",
		         f->path, why);
		goto out;
	}
	if (state_save_rows(r->env, r->env->rows_loaded + ld.rows, why, sizeof why) != 0) {
		str_errf(err, errlen, "%s: %s", f->path, why);
		goto out;
	}
	if (wh_commit(r->env->wh) != 0) {
		str_errf(err, errlen, "%s: commit failed: %s", f->path, wh_error(r->env->wh));
		goto out;
	}
	in_txn = false;
	ddl.made = false;                 /* the rows are in: the DDL stays */
	ddl.nadded = 0;
	if (state_after_commit(r->env, why, sizeof why) != 0) {
		str_errf(err, errlen, "%s: %s", f->path, why);
		goto out;
	}
	r->env->rows_read += ld.rows;
	r->env->rows_loaded += ld.rows;
	if (removed > 0)
		LOGI(r->env, "%s: %lld rows loaded, replacing the %lld rows of its "
		     "earlier version", f->path, ld.rows, removed);
	else
		LOGI(r->env, "%s: %lld rows loaded", f->path, ld.rows);
	if (stats.ragged_rows > 0)
		LOGW(r->env, "%s: %lld rows have more or fewer cells than the header "
		     "(first: row %lld); missing cells are NULL, extra cells are not "
		     "loaded", f->path, stats.ragged_rows, stats.first_ragged_row);
	rc = 0;
out:
	if (in_txn)
		wh_rollback(r->env->wh);
	if (rc != 0)
		undo_ddl(r, &ddl);
	free(ddl.added);
	dest_writer_free(ld.wr);
	free(h.names);
	free(ld.kinds);
	free(ld.vals);
	free(ld.lens);
	free(ld.scratch);
	free(colnames);
	return rc;
}

/* ==== the task =================================================================== */

static void opts_from_input(struct json_object *in, struct tab_opts *o)
{
	struct json_object *v = NULL;

	tab_opts_init(o);
	o->max_analyze_rows = FS_ANALYZE_ROWS;
	if (json_object_object_get_ex(in, "delimiter", &v) &&
	    json_object_is_type(v, json_type_string) && json_object_get_string_len(v) == 1)
		o->delimiter = json_object_get_string(v)[0];
	if (json_object_object_get_ex(in, "encoding", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(o->encoding, sizeof o->encoding, "%s", json_object_get_string(v));
	if (json_object_object_get_ex(in, "skip_rows", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
		o->skip_rows = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(in, "header_row", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= -1)
		o->header_row = (long)json_object_get_int64(v);
	if (json_object_object_get_ex(in, "sheet_name", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(o->sheet_name, sizeof o->sheet_name, "%s", json_object_get_string(v));
}

int file_storage_extract_load(const struct job_spec *job, struct task_env *env,
                              char *err, size_t errlen)
{
	struct fs_run r = { .job = job, .env = env };
	struct fs_list l = { 0 };
	struct json_object *pv = NULL;
	const char *prefix;
	char first_err[1024] = "";
	long long loaded = 0, unchanged = 0, unsupported = 0, failed = 0;
	int rc = -1, area = -1;

	if (!json_object_object_get_ex(job->input, "prefix", &pv) ||
	    !json_object_is_type(pv, json_type_string)) {
		str_errf(err, errlen, "input.prefix is required (a folder or path prefix "
		         "in the customer's storage area)");
		return -1;
	}
	prefix = json_object_get_string(pv);
	if (!file_storage_prefix_ok(prefix, (size_t)json_object_get_string_len(pv))) {
		str_errf(err, errlen, "input.prefix must be a relative path without '..' "
		         "segments, backslashes or NUL, at most %d bytes", FS_PREFIX_MAX);
		return -1;
	}
	if (!customer_id_ok(job->customer_id)) {
		str_errf(err, errlen, "the job's customer id is not valid");
		return -1;
	}
	if (job->dest_table == NULL || !wh_ident_ok(job->dest_table)) {
		str_errf(err, errlen, "output.raw.table_name is missing or not valid");
		return -1;
	}
	r.table = job->dest_table;
	r.schema = job->dest_schema != NULL && job->dest_schema[0] != '\0' ?
	           job->dest_schema : wh_default_schema(env->wh);
	opts_from_input(job->input, &r.opts);
	area = area_open(env->cfg, job->customer_id, err, errlen);
	if (area == -1)
		return -1;
	if (area >= 0 && list_files(area, prefix, &l, err, errlen) != 0)
		goto out;
	LOGI(env, "%zu files under prefix '%s' into %s.%s%s", l.n, prefix, r.schema,
	     r.table, l.truncated ? " (the listing stopped at the limit; the rest "
	     "waits for the next run)" : "");
	if (l.symlinks > 0)
		LOGW(env, "%lld symbolic links under the prefix are not followed", l.symlinks);
	if (l.too_long > 0)
		LOGW(env, "%lld files have paths longer than %d bytes: not loaded",
		     l.too_long, FS_PATH_MAX);
	for (size_t i = 0; i < l.n; i++) {
		struct fs_file *f = &l.v[i];
		char mtime[32], ferr[1024];
		enum tab_format fmt;
		struct stat st;
		int p, lr, fd;

		if (tab_format_from_name(f->path, &fmt) != 0) {
			if (unsupported++ == 0)
				LOGW(env, "%s: not a format this connector loads (CSV, TXT, "
				     "TSV, JSON, JSON lines, XLSX, XLS, Parquet): skipped", f->path);
			continue;
		}
		mtime_sql(&f->mtime, mtime, sizeof mtime);
		if ((p = processed(env, job->job_id, f, mtime)) < 0) {
			str_errf(err, errlen, "reading the processed-file records failed");
			goto out;
		}
		if (p == 1) {
			unchanged++;
			continue;
		}
		/* Read what the descriptor holds, and record its time and size as
		 * they were when it was opened. */
		if ((fd = open_below(area, f->path)) < 0 || fstat(fd, &st) != 0 ||
		    !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			LOGW(env, "%s: gone or replaced since the listing: skipped", f->path);
			continue;
		}
		f->size = (long long)st.st_size;
		f->mtime = st.st_mtim;
		mtime_sql(&f->mtime, mtime, sizeof mtime);
		lr = load_file(&r, fd, f, fmt, mtime, ferr, sizeof ferr);
		close(fd);
		if (lr == 0) {
			loaded++;
			continue;
		}
		failed++;
		if (env->log != NULL)
			run_log_error(env->log, "%s", ferr);
		if (first_err[0] == '\0')
			snprintf(first_err, sizeof first_err, "%s", ferr);
		/* A value the table refuses fails the file; a warehouse that no
		 * longer answers fails every file after it: stop there. */
		if (lr < 0 || wh_exec(env->wh, "SELECT 1", NULL, 0) < 0)
			break;
	}
	if (unsupported > 1)
		LOGW(env, "%lld files in all were skipped for their format", unsupported);
	LOGI(env, "files: %lld loaded, %lld unchanged since they were processed, "
	     "%lld failed; %lld rows written", loaded, unchanged, failed,
	     env->rows_loaded);
	if (failed > 0) {
		str_errf(err, errlen, "%lld file%s failed to load; first: %s", failed,
		         failed == 1 ? "" : "s", first_err);
		goto out;
	}
	rc = 0;
out:
	if (area >= 0)
		close(area);
	list_free(&l);
	return rc;
}
