/* build.c - a dataset's index file, written from its snippets.
 *
 * The rows come from MariaDB, and, when an ingestion builds the index, from
 * the rows it stored and kept (build.h).  Then the dataset's snippet ids are
 * listed first (ids only, from a covering index), a kept row is taken when
 * its id is listed, and each run of listed ids not kept is read as one
 * range of the primary key.  Reading every row back (an embedding and a
 * text each, over the connector) was 2.4 of the 6.2 s that the index of
 * 100,000 snippets took.  A kept row whose id is not listed was deleted
 * meanwhile and stays out.  With many scattered runs everything is read,
 * as it is without kept rows (a question's rebuild of a lost file). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db/db.h"
#include "retrieval/build.h"
#include "retrieval/index.h"
#include "retrieval/retrieval.h"
#include "util/config.h"
#include "util/log.h"
#include "util/pages.h"
#include "util/timeutil.h"

#define BUILD_RUNS_MAX 64          /* ranges read for ids not kept; more: read all */

int rag_index_path(const struct config *cfg, const char *dataset_id,
                   char *buf, size_t cap)
{
	char dir[CONFIG_PATH_MAX + 32];
	int n;

	if (config_rag_index_dir(cfg, dir, sizeof dir) != 0)
		return -1;
	n = snprintf(buf, cap, "%s/%s.idx", dir, dataset_id);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* mkdir -p for the index directory (0750). */
static int make_dirs(const char *path)
{
	char tmp[CONFIG_PATH_MAX + 32];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof tmp)
		return -1;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0750) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0750) != 0 && errno != EEXIST ? -1 : 0;
}

/* A row's strings are NUL-terminated at offsets into the rows' one buffer
 * of text, so a row costs no allocation of its own, and the rows after a
 * point go (a rollback) by cutting the buffer there. */
struct kept_row {
	char id[RAG_ID_LEN + 1], doc[RAG_ID_LEN + 1];
	long pos;
	size_t meta, text;                /* offsets into strs */
};

struct rag_rows {
	size_t dim, n, cap, vcap;         /* rows, room for rows and for vectors */
	struct kept_row *row;
	float *vecs;                      /* n * dim */
	char *strs;
	size_t used, room;                /* bytes of strs */
};

struct rag_rows *rag_rows_new(size_t dim)
{
	struct rag_rows *r = calloc(1, sizeof *r);

	if (r != NULL)
		r->dim = dim;
	return r;
}

void rag_rows_truncate(struct rag_rows *r, size_t n)
{
	if (r != NULL && r->n > n) {
		r->n = n;
		r->used = r->row[n].meta;          /* where the rows cut begin */
	}
}

void rag_rows_free(struct rag_rows *r)
{
	if (r == NULL)
		return;
	free(r->row);
	free(r->vecs);
	free(r->strs);
	free(r);
}

size_t rag_rows_count(const struct rag_rows *r)
{
	return r != NULL ? r->n : 0;
}

/* p (room for *cap elements of elem bytes) grown to hold need, by
 * doubling, its new part faulted in: the array, or NULL when out of memory
 * (p is then as it was). */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 1024;
	char *q;

	if (need <= *cap && p != NULL)
		return p;
	while (nc < need)
		nc *= 2;
	if ((q = realloc(p, nc * elem)) == NULL)
		return NULL;
	pages_populate(q + *cap * elem, (nc - *cap) * elem);
	*cap = nc;
	return q;
}

/* Append a row; its vector is left for the caller at r->vecs + r->n * dim
 * (before r->n counts it).  The row, or NULL when out of memory (nothing
 * added). */
static struct kept_row *rows_append(struct rag_rows *r, const char *id, const char *doc_id,
                                    long pos, const char *meta, const char *text,
                                    size_t len)
{
	size_t mlen = strlen(meta), need = r->used + mlen + 1 + len + 1;
	struct kept_row *k;
	void *p;

	if ((p = grow(r->row, &r->cap, r->n + 1, sizeof *r->row)) == NULL)
		return NULL;
	r->row = p;
	if ((p = grow(r->vecs, &r->vcap, r->n + 1, r->dim * sizeof *r->vecs)) == NULL)
		return NULL;
	r->vecs = p;
	if ((p = grow(r->strs, &r->room, need, 1)) == NULL)
		return NULL;
	r->strs = p;
	k = &r->row[r->n];
	snprintf(k->id, sizeof k->id, "%s", id);
	snprintf(k->doc, sizeof k->doc, "%s", doc_id);
	k->pos = pos;
	k->meta = r->used;
	memcpy(r->strs + r->used, meta, mlen + 1);
	r->used += mlen + 1;
	k->text = r->used;
	memcpy(r->strs + r->used, text, len);
	r->strs[r->used + len] = '\0';
	r->used += len + 1;
	return k;
}

int rag_rows_add(struct rag_rows *r, const char *id, const char *doc_id, long pos,
                 const char *meta, const char *text, size_t len, const float *vec)
{
	if (r == NULL || rows_append(r, id, doc_id, pos, meta, text, len) == NULL)
		return -1;
	memcpy(r->vecs + r->n * r->dim, vec, r->dim * sizeof *vec);
	r->n++;
	return 0;
}

/* Embeddings are float32 little-endian, whatever the host (ingest.c). */
static void f32_le_get(float *dst, const unsigned char *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)src[4 * i] | (uint32_t)src[4 * i + 1] << 8 |
		             (uint32_t)src[4 * i + 2] << 16 | (uint32_t)src[4 * i + 3] << 24;

		memcpy(&dst[i], &u, 4);
	}
}

/* The dataset's snippets into r: all of them (first NULL), or those of the
 * key range first .. last.  0, or -1 with err. */
static int read_rows(struct db *db, const char *dataset_id, const char *first,
                     const char *last, struct rag_rows *r, char *err, size_t errlen)
{
#define ROW_COLS "SELECT id, embedding, metadata, page_content, document_id, position " \
	"FROM rag_snippets WHERE dataset_id = ? "
	/* In the key's order, not by document: a server-side sort of rows
	 * this wide reads each row again at random after the sort. */
	struct db_stmt *st = first == NULL
		? db_query(db, ROW_COLS "ORDER BY id", "s", dataset_id)
		: db_query(db, ROW_COLS "AND id >= ? AND id <= ? ORDER BY id", "sss",
		           dataset_id, first, last);
	int f;
#undef ROW_COLS

	if (st == NULL) {
		snprintf(err, errlen, "database error");
		return -1;
	}
	while ((f = db_fetch(st)) == 1) {
		if (db_col_len(st, 1) != r->dim * 4) {
			snprintf(err, errlen, "a snippet's embedding does not have %zu dimensions",
			         r->dim);
			db_done(st);
			return -1;
		}
		if (rows_append(r, db_col_str(st, 0), db_col_str(st, 4), (long)db_col_ll(st, 5),
		                db_col_str(st, 2), db_col_str(st, 3), db_col_len(st, 3)) == NULL)
			break;
		f32_le_get(r->vecs + r->n * r->dim, (const unsigned char *)db_col_str(st, 1),
		           r->dim);
		r->n++;
	}
	db_done(st);
	if (f != 0)
		snprintf(err, errlen, f < 0 ? "database error" : "out of memory");
	return f != 0 ? -1 : 0;
}

/* The dataset's snippet ids, in key order (ascii_bin: strcmp's), into
 * *ids (*n of them).  0, or -1 with err. */
static int list_ids(struct db *db, const char *dataset_id, char (**ids)[RAG_ID_LEN + 1],
                    size_t *n, char *err, size_t errlen)
{
	struct db_stmt *st = db_query(db, "SELECT id FROM rag_snippets FORCE INDEX "
	                              "(rag_snippets_dataset_idx) WHERE dataset_id = ? "
	                              "ORDER BY id", "s", dataset_id);
	size_t cap = 0;
	int f;

	*ids = NULL;
	*n = 0;
	if (st == NULL) {
		snprintf(err, errlen, "database error");
		return -1;
	}
	while ((f = db_fetch(st)) == 1) {
		void *p = grow(*ids, &cap, *n + 1, sizeof **ids);

		if (p == NULL)
			break;
		*ids = p;
		snprintf((*ids)[(*n)++], RAG_ID_LEN + 1, "%s", db_col_str(st, 0));
	}
	db_done(st);
	if (f != 0)
		snprintf(err, errlen, f < 0 ? "database error" : "out of memory");
	return f != 0 ? -1 : 0;
}

static int by_id(const void *a, const void *b, void *arg)
{
	const struct kept_row *row = arg;

	return strcmp(row[*(const size_t *)a].id, row[*(const size_t *)b].id);
}

/* Mark in use[] the kept rows whose ids MariaDB lists, and read the runs
 * of listed ids not kept into got (*reads statements); with more than
 * BUILD_RUNS_MAX runs, mark none and read every row.  0, or -1 with err. */
static int take_kept(struct db *db, const char *dataset_id, const struct rag_rows *kept,
                     unsigned char *use, struct rag_rows *got, size_t *reads,
                     char *err, size_t errlen)
{
	char (*ids)[RAG_ID_LEN + 1] = NULL;
	size_t *order = malloc(kept->n * sizeof *order), n = 0, nruns = 0;
	size_t run[BUILD_RUNS_MAX][2];               /* first and last listed index */
	int rc = -1;

	if (order == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (list_ids(db, dataset_id, &ids, &n, err, errlen) != 0)
		goto out;
	for (size_t i = 0; i < kept->n; i++)
		order[i] = i;
	qsort_r(order, kept->n, sizeof *order, by_id, kept->row);
	/* Both in id order: one merge pass. */
	for (size_t i = 0, k = 0; i < n; i++) {
		int c = 1;

		while (k < kept->n && (c = strcmp(kept->row[order[k]].id, ids[i])) < 0)
			k++;
		if (k < kept->n && c == 0) {
			use[order[k++]] = 1;
			continue;
		}
		if (nruns > 0 && run[nruns - 1][1] == i - 1) {
			run[nruns - 1][1] = i;
		} else if (nruns < BUILD_RUNS_MAX) {
			run[nruns][0] = run[nruns][1] = i;
			nruns++;
		} else {
			memset(use, 0, kept->n);
			*reads = 1;
			rc = read_rows(db, dataset_id, NULL, NULL, got, err, errlen);
			goto out;
		}
	}
	rc = 0;
	*reads = nruns;
	for (size_t r = 0; r < nruns && rc == 0; r++)
		rc = read_rows(db, dataset_id, ids[run[r][0]], ids[run[r][1]], got, err, errlen);
out:
	free(ids);
	free(order);
	return rc;
}

int rag_index_build(struct db *db, const struct config *cfg, const char *dataset_id,
                    const struct rag_rows *kept, size_t *count, char *err, size_t errlen)
{
	char path[CONFIG_PATH_MAX + 64], dir[CONFIG_PATH_MAX + 32];
	struct rag_rows *got = NULL;
	struct rindex_row *rows = NULL;
	unsigned char *use = NULL;
	size_t dim = 0, n = 0, nkept = 0, reads = 1;
	double t0 = time_mono_ms();
	int rc = -1, f;

	*count = 0;
	if ((f = rag_dataset_dim(db, dataset_id, &dim, NULL, 0)) != 1) {
		snprintf(err, errlen, f == 0 ? "dataset is gone" : "database error");
		return -1;
	}
	if (rag_index_path(cfg, dataset_id, path, sizeof path) != 0 ||
	    config_rag_index_dir(cfg, dir, sizeof dir) != 0) {
		snprintf(err, errlen, "index path too long");
		return -1;
	}
	if (make_dirs(dir) != 0) {
		log_kv(LOG_ERROR, "cannot create index directory", "dir=%s errno=%d",
		       LOG_Q(dir), errno);
		snprintf(err, errlen, "cannot create the index directory");
		return -1;
	}
	if (kept != NULL && kept->dim == dim)
		nkept = kept->n;
	if ((got = rag_rows_new(dim)) == NULL || (use = calloc(nkept + 1, 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if ((nkept > 0 ? take_kept(db, dataset_id, kept, use, got, &reads, err, errlen)
	               : read_rows(db, dataset_id, NULL, NULL, got, err, errlen)) != 0)
		goto out;
	if ((rows = malloc((nkept + got->n + 1) * sizeof *rows)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nkept + got->n; i++) {
		const struct rag_rows *from = i < nkept ? kept : got;
		size_t j = i < nkept ? i : i - nkept;
		const struct kept_row *k = &from->row[j];

		if (i < nkept && !use[i])
			continue;
		rows[n++] = (struct rindex_row){ from->vecs + j * dim, k->id, from->strs + k->meta,
		                                 from->strs + k->text, k->doc, k->pos };
	}
	rindex_sort(rows, n);
	if (rindex_write_rows(path, n, dim, rows, err, errlen) != 0)
		goto out;
	*count = n;
	rc = 0;
	/* from_memory shows the kept rows were used (t/api/92) */
	log_kv(LOG_INFO, "index file written", "dataset=%s snippets=%zu from_memory=%zu "
	       "read_back=%zu reads=%zu ms=%.0f", dataset_id, n, n - got->n, got->n, reads,
	       time_mono_ms() - t0);
out:
	free(rows);
	free(use);
	rag_rows_free(got);
	return rc;
}
