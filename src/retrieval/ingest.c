/* ingest.c - a dataset's embedder and ingestion in `sluice work`.
 *
 * Ingestion is idempotent, so a claim that a dead process left behind can
 * simply run again: a group of documents has its snippets stored in the
 * same transaction that marks those documents success, and the index file
 * is rewritten whole (atomically, build.c) from the rows, those this
 * ingestion stored taken from memory.  A lease per dataset keeps two work
 * processes from ingesting one dataset at the same time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "retrieval/build.h"
#include "retrieval/chunk.h"
#include "retrieval/embed.h"
#include "retrieval/index.h"
#include "retrieval/openai.h"
#include "retrieval/retrieval.h"
#include "retrieval/vec.h"
#include "db/queue.h"
#include "util/config.h"
#include "util/log.h"
#include "util/test_hooks.h"
#include "util/thread.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#define INGEST_LOCK_WAIT_S 60      /* for another process's ingestion of it */
#define INGEST_LEASE_LOST 1        /* ingest(): another process holds the lease */
#define INGEST_LEASE_POLL_MS 250   /* between tries of a held lease */
#define BUILTIN_BATCH 256
#define INGEST_BUILD_EVERY_MS 30000  /* an index at least this often */

/* --- embedding ------------------------------------------------------------------ */

void rag_embedder_of_config(const struct config *cfg, char *out, size_t cap)
{
	if (strcmp(cfg->embedding_provider, "openai") == 0)
		snprintf(out, cap, "openai:%s", cfg->openai_model);
	else
		snprintf(out, cap, "builtin");
}

int rag_embed(const struct config *cfg, const char *embedder, size_t dim,
              const char *const *texts, const size_t *lens, size_t n,
              float *out, char *err, size_t errlen)
{
	if (strcmp(embedder, "builtin") == 0) {
		for (size_t i = 0; i < n; i++)
			if (embed_builtin(texts[i], lens[i], out + i * dim, dim) != 0) {
				snprintf(err, errlen, "built-in embedder refused dimension %zu", dim);
				return -1;
			}
		return 0;
	}
	if (strncmp(embedder, "openai:", 7) == 0)
		/* the model the dataset was embedded with, not today's config */
		return openai_embed_model(cfg, embedder + 7, texts, lens, n, out, dim,
		                          err, errlen);
	snprintf(err, errlen, "unknown embedder '%.32s'", embedder);
	return -1;
}

/* Embeddings are stored as float32 little-endian, whatever the host
 * (build.c reads them back). */
static void f32_le_put(unsigned char *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &src[i], 4);
		dst[4 * i] = (unsigned char)u;
		dst[4 * i + 1] = (unsigned char)(u >> 8);
		dst[4 * i + 2] = (unsigned char)(u >> 16);
		dst[4 * i + 3] = (unsigned char)(u >> 24);
	}
}

int rag_dataset_dim(struct db *db, const char *dataset_id, size_t *dim,
                    char *embedder, size_t ecap)
{
	struct db_stmt *st = db_query(db, "SELECT dimensions, embedder FROM "
	                              "rag_datasets WHERE id = ?", "s", dataset_id);
	int rc;

	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1) {
		*dim = (size_t)db_col_ll(st, 0);
		if (embedder != NULL)
			snprintf(embedder, ecap, "%s", db_col_str(st, 1));
	}
	db_done(st);
	return rc;                        /* 1 found, 0 gone, < 0 error */
}

/* --- ingestion ----------------------------------------------------------------------- */

/* Words, for token_count. */
static int count_words(const char *s, size_t n)
{
	int words = 0;
	int in = 0;

	for (size_t i = 0; i < n; i++) {
		int sp = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';

		if (!sp && !in)
			words++;
		in = !sp;
	}
	return words;
}

/* A snippet's metadata: the document's, plus where the snippet came from. */
static char *snippet_metadata(struct json_object *doc_meta, const char *doc_id,
                              size_t position)
{
	struct json_object *o = json_object_new_object();
	char *s;

	if (doc_meta != NULL && json_object_is_type(doc_meta, json_type_object)) {
		json_object_object_foreach(doc_meta, k, v)
			json_object_object_add(o, k, json_object_get(v));
	}
	json_object_object_add(o, "document_id", json_object_new_string(doc_id));
	json_object_object_add(o, "chunk", json_object_new_int64((int64_t)position));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* Documents are claimed INGEST_CLAIM at a time in (created_at, id) order,
 * from a cursor, so a claim never walks again over the index entries of
 * documents already done (nor the delete-marked ones their status change
 * leaves until purge catches up).  They are stored in groups, one
 * transaction each: at most INGEST_GROUP_DOCS documents or
 * INGEST_GROUP_TEXT bytes of text, and a group closes after
 * INGEST_GROUP_MS so progress stays visible and a kill -9 loses little.
 * A text longer than INGEST_INLINE_TEXT is read alone, when its turn
 * comes, and is a group of its own. */
#define INGEST_CLAIM 256
#define INGEST_INLINE_TEXT 65536
#define INGEST_GROUP_DOCS 256
#define INGEST_GROUP_TEXT (1 << 20)
#define INGEST_GROUP_MS 250.0

/* A claimed document.  text is NULL until read when it is long. */
struct doc {
	char id[RAG_ID_LEN + 1];
	char created[32];                 /* created_at as the server writes it */
	char *text, *meta;
	size_t len;
};

/* The (created_at, id) window of a group, as SQL over rag_documents d and
 * its seven parameters (dataset, first created, last created, first
 * created and id, last created and id).  Documents of the window that are
 * still processing are the group's, less those deleted since the claim.
 * The bounds on created_at alone are what MariaDB makes a range of on
 * rag_documents_pending_idx; written only as (created_at > ? OR
 * (created_at = ? AND id >= ?)), every statement of every group read all
 * of the dataset's processing documents (92,672 entries for a window of
 * 256, and a 100,000-document ingestion took minutes).
 * PENDING_DOCS names the index outright: statistics taken while a table is
 * small can make MariaDB choose (dataset_id, status) and read every
 * processing document, or, in the DELETE's join, scan all of rag_snippets
 * (every tenant's) for each group or even for each document: STRAIGHT_JOIN
 * keeps the documents first, and the snippets are found by document. */
#define PENDING_DOCS "rag_documents d FORCE INDEX (rag_documents_pending_idx)"
#define GROUP_WINDOW "d.dataset_id = ? AND d.status = 'processing' AND " \
	"d.created_at >= ? AND d.created_at <= ? AND " \
	"(d.created_at > ? OR d.id >= ?) AND (d.created_at < ? OR d.id <= ?)"
#define GROUP_WINDOW_ARGS(ds, f, l) (ds), (f)->created, (l)->created, \
	(f)->created, (f)->id, (l)->created, (l)->id

static void docs_free(struct doc *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(d[i].text);
		free(d[i].meta);
	}
}

/* The next claim after the cursor (after *last, or from the start when
 * last is NULL) into d[0..*n): 0, or < 0 enum db_err. */
static int documents_claim(struct db *db, const char *dataset_id, const struct doc *last,
                           struct doc *d, size_t *n)
{
#define CLAIM_COLS "SELECT id, created_at, metadata, IF(LENGTH(text) <= ?, text, NULL) " \
	"FROM " PENDING_DOCS " WHERE dataset_id = ? AND status = 'processing' "
#define CLAIM_ORDER " ORDER BY created_at, id LIMIT ?"
	struct db_stmt *st;
	int rc;

	*n = 0;
	st = last == NULL
		? db_query(db, CLAIM_COLS CLAIM_ORDER, "isi", (long long)INGEST_INLINE_TEXT,
		           dataset_id, (long long)INGEST_CLAIM)
		: db_query(db, CLAIM_COLS "AND created_at >= ? AND (created_at > ? OR id > ?)"
		           CLAIM_ORDER, "issssi", (long long)INGEST_INLINE_TEXT, dataset_id,
		           last->created, last->created, last->id, (long long)INGEST_CLAIM);
	if (st == NULL)
		return db_last_err(db);
	while ((rc = db_fetch(st)) == 1) {
		struct doc *x = &d[*n];

		*x = (struct doc){ 0 };
		snprintf(x->id, sizeof x->id, "%s", db_col_str(st, 0));
		snprintf(x->created, sizeof x->created, "%s", db_col_str(st, 1));
		x->meta = strdup(db_col_str(st, 2));
		if (!db_col_null(st, 3)) {
			x->len = db_col_len(st, 3);
			x->text = malloc(x->len + 1);
			if (x->text != NULL)
				memcpy(x->text, db_col_str(st, 3), x->len + 1);
		}
		(*n)++;
		if (x->meta == NULL || (!db_col_null(st, 3) && x->text == NULL)) {
			rc = DB_ERR;
			break;
		}
	}
	db_done(st);
	return rc < 0 ? rc : 0;
#undef CLAIM_COLS
#undef CLAIM_ORDER
}

/* A long document's text: 1, 0 when it is gone, < 0 enum db_err. */
static int document_text(struct db *db, struct doc *d)
{
	struct db_stmt *st = db_query(db, "SELECT text FROM rag_documents WHERE id = ?",
	                              "s", d->id);
	int rc;

	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1) {
		d->len = db_col_len(st, 0);
		if ((d->text = malloc(d->len + 1)) == NULL)
			rc = DB_ERR;
		else
			memcpy(d->text, db_col_str(st, 0), d->len + 1);
	}
	db_done(st);
	return rc;
}

/* A group: its documents (moved out of the claim, so that the next claim
 * may be read while the group is stored) and their snippets, chunked and
 * embedded before its transaction, on the preparing thread. */
struct group {
	struct doc *d;
	size_t nd;
	const char **texts;               /* into the documents' texts */
	size_t *lens, *doc, *pos;         /* length, document index, position */
	float *vecs;
	size_t n, cap;
	/* what group_prepare needs, and its outcome */
	const struct config *cfg;
	const char *embedder;
	size_t dim;
	int rc;
	char err[256];
};

static void group_free(struct group *g)
{
	if (g == NULL)
		return;
	docs_free(g->d, g->nd);
	free(g->d);
	free(g->texts);
	free(g->lens);
	free(g->doc);
	free(g->pos);
	free(g->vecs);
	free(g);
}

/* Chunk document di's text into the group. */
static int group_chunk(struct group *g, const struct config *cfg, const struct doc *d,
                       size_t di)
{
	struct chunk *chunks = NULL;
	/* Room for chunks a third shorter than the stride: prose cuts at
	 * about the stride (chunk_size - chunk_overlap), so a long document is
	 * chunked once, not counted and chunked again. */
	size_t stride = (size_t)(cfg->chunk_size - cfg->chunk_overlap), n;
	size_t cap = stride > 3 ? d->len / (stride - stride / 3) + 1 : 64;
	int rc = -1;

	for (;;) {
		struct chunk *c = realloc(chunks, cap * sizeof *c);

		if (c == NULL)
			goto out;
		chunks = c;
		n = chunk_text(d->text, d->len, (size_t)cfg->chunk_size,
		               (size_t)cfg->chunk_overlap, chunks, cap);
		if (n <= cap)
			break;
		cap = n;
	}
	if (g->n + n > g->cap) {
		size_t nc = g->n + n > 2 * g->cap ? g->n + n : 2 * g->cap;
		const char **t = realloc(g->texts, nc * sizeof *t);
		size_t *l, *dd, *p;

		if (t != NULL)
			g->texts = t;
		l = realloc(g->lens, nc * sizeof *l);
		if (l != NULL)
			g->lens = l;
		dd = realloc(g->doc, nc * sizeof *dd);
		if (dd != NULL)
			g->doc = dd;
		p = realloc(g->pos, nc * sizeof *p);
		if (p != NULL)
			g->pos = p;
		if (t == NULL || l == NULL || dd == NULL || p == NULL)
			goto out;
		g->cap = nc;
	}
	for (size_t i = 0; i < n; i++, g->n++) {
		g->texts[g->n] = d->text + chunks[i].off;
		g->lens[g->n] = chunks[i].len;
		g->doc[g->n] = di;
		g->pos[g->n] = i;
	}
	rc = 0;
out:
	free(chunks);
	return rc;
}

static int group_embed(struct group *g)
{
	size_t batch = strcmp(g->embedder, "builtin") == 0 ? BUILTIN_BATCH
	                                                   : (size_t)g->cfg->openai_batch_size;

	if ((g->vecs = malloc((g->n + 1) * g->dim * sizeof *g->vecs)) == NULL) {
		snprintf(g->err, sizeof g->err, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < g->n; i += batch) {
		size_t m = g->n - i < batch ? g->n - i : batch;

		if (rag_embed(g->cfg, g->embedder, g->dim, g->texts + i, g->lens + i, m,
		              g->vecs + i * g->dim, g->err, sizeof g->err) != 0)
			return -1;
	}
	return 0;
}

/* Chunk and embed the group's documents; g->rc 0, or -1 with g->err.  It
 * touches nothing but the group (and the tokeniser's per-process state,
 * which no other thread uses meanwhile), so it runs on the preparing
 * thread while the main thread stores the group before. */
static void *group_prepare(void *arg)
{
	struct group *g = arg;

	g->rc = -1;
	for (size_t i = 0; i < g->nd; i++)
		if (group_chunk(g, g->cfg, &g->d[i], i) != 0) {
			snprintf(g->err, sizeof g->err, "out of memory");
			return NULL;
		}
	if (group_embed(g) == 0)
		g->rc = 0;
	return NULL;
}

/* Multi-row INSERTs of snippets: rows are added one by one and sent
 * SNIPPET_ROWS at a time (db_exec_rows), or sooner when SNIPPET_BYTES of
 * values are waiting. */
#define SNIPPET_ROWS DB_ROWS_MAX
#define SNIPPET_BYTES (4u << 20)
#define SNIPPET_COLS 9
#define SNIPPET_INSERT "INSERT INTO rag_snippets (id, dataset_id, document_id, " \
	"position, page_content, metadata, embedding, norm, token_count) VALUES "
#define SNIPPET_TUPLE "(?, ?, ?, ?, ?, ?, ?, ?, ?)"

struct snippet_rows {
	struct db_param ps[SNIPPET_ROWS * SNIPPET_COLS];
	char ids[SNIPPET_ROWS][UUID_STR_LEN];
	char *content[SNIPPET_ROWS], *meta[SNIPPET_ROWS];
	unsigned char *blobs;             /* SNIPPET_ROWS embeddings */
	size_t n, bytes;
};

static void snippet_rows_clear(struct snippet_rows *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->content[i]);
		free(r->meta[i]);
	}
	r->n = 0;
	r->bytes = 0;
}

/* Send the waiting rows: 0 or < 0 enum db_err. */
static int snippet_rows_flush(struct db *db, struct snippet_rows *r)
{
	int rc = db_exec_rows(db, SNIPPET_INSERT, SNIPPET_TUPLE, SNIPPET_COLS, r->ps, r->n);

	snippet_rows_clear(r);
	return rc;
}

/* Add a row (flushing first when full): 0 or < 0 enum db_err. */
static int snippet_rows_add(struct db *db, struct snippet_rows *r, size_t dim,
                            const char *dataset_id, const char *doc_id, size_t pos,
                            const char *text, size_t len, const float *vec,
                            struct json_object *doc_meta)
{
	struct db_param *p;
	size_t i;
	int rc;

	if ((r->n == SNIPPET_ROWS || r->bytes + len + dim * 4 > SNIPPET_BYTES) &&
	    (rc = snippet_rows_flush(db, r)) != 0)
		return rc;
	i = r->n;
	/* time-ordered ids: the snippets table's key is (dataset_id, id) */
	if (uuid_v7(r->ids[i]) != 0 || (r->content[i] = strndup(text, len)) == NULL)
		return DB_ERR;
	if ((r->meta[i] = snippet_metadata(doc_meta, doc_id, pos)) == NULL) {
		free(r->content[i]);
		return DB_ERR;
	}
	r->n++;
	f32_le_put(r->blobs + i * dim * 4, vec, dim);
	p = r->ps + i * SNIPPET_COLS;
	p[0] = (struct db_param){ .type = 's', .p = r->ids[i] };
	p[1] = (struct db_param){ .type = 's', .p = dataset_id };
	p[2] = (struct db_param){ .type = 's', .p = doc_id };
	p[3] = (struct db_param){ .type = 'i', .i = (long long)pos };
	p[4] = (struct db_param){ .type = 's', .p = r->content[i] };
	p[5] = (struct db_param){ .type = 's', .p = r->meta[i] };
	p[6] = (struct db_param){ .type = 'b', .p = r->blobs + i * dim * 4, .len = dim * 4 };
	p[7] = (struct db_param){ .type = 'd', .d = (double)vec_norm(vec, dim) };
	p[8] = (struct db_param){ .type = 'i', .i = count_words(text, len) };
	r->bytes += len + dim * 4 + strlen(r->meta[i]);
	return 0;
}

enum { GROUP_STORED, GROUP_INTRUDER };

struct group_store {
	const char *dataset_id;
	size_t dim;
	const struct group *g;
	const struct doc *d;        /* the group's documents, d[0..n) */
	size_t n;
	struct snippet_rows *rows;
	struct rag_rows *kept;      /* the rows stored, for the index build */
	size_t kept_before;         /* its count before this group */
	bool replace;               /* delete the documents' snippets first */
};

/* The body of the group's transaction (db_tx): lock the window's rows
 * (which orders this against a DELETE of a document: deleted first, its
 * snippets are not stored; stored first, the DELETE takes them along),
 * store the snippets of the documents still there and mark them success.
 * A DELETE of the dataset takes the same rows in another order; db_tx
 * tries a deadlock again whole.
 *
 * A processing document has no snippets: they are stored only here, in
 * the transaction that marks it success, and a document never leaves
 * success.  So the snippets are inserted without deleting first, which
 * took a fifteenth of the storing (a join of every document of the window
 * to the snippets' index, 0.5 s for 100,000 documents).  Snippets there
 * anyway (written by something else) fail the insert on the unique
 * (document_id, position), and the caller runs the group again with
 * replace set, deleting the documents' snippets first.
 *
 * GROUP_STORED, GROUP_INTRUDER (a document the claim did not see is in
 * the window: nothing done, claim again), or < 0 enum db_err. */
static int group_store_tx(struct db *db, void *arg)
{
	const struct group_store *x = arg;
	const char *dataset_id = x->dataset_id;
	const struct doc *d = x->d;
	size_t n = x->n;
	struct json_object **metas = calloc(n, sizeof *metas);
	bool *live = calloc(n, sizeof *live);
	struct db_stmt *st = NULL;
	int rc;

	rag_rows_truncate(x->kept, x->kept_before);     /* an attempt that did not commit */
	if (metas == NULL || live == NULL) {
		rc = DB_ERR;
		goto out;
	}
	st = db_query(db, "SELECT d.id FROM " PENDING_DOCS " WHERE " GROUP_WINDOW
	              " ORDER BY d.created_at, d.id FOR UPDATE", "sssssss",
	              GROUP_WINDOW_ARGS(dataset_id, &d[0], &d[n - 1]));
	if (st == NULL) {
		rc = db_last_err(db);
		goto out;
	}
	/* Both in (created_at, id) order: one merge pass. */
	for (size_t i = 0; (rc = db_fetch(st)) == 1;) {
		const char *id = db_col_str(st, 0);

		while (i < n && strcmp(d[i].id, id) != 0)
			i++;
		if (i == n) {
			rc = GROUP_INTRUDER;
			break;
		}
		live[i++] = true;
	}
	db_done(st);
	if (rc != 0)
		goto out;
	if (x->replace &&
	    db_exec(db, "DELETE s FROM " PENDING_DOCS " STRAIGHT_JOIN rag_snippets s "
	            "FORCE INDEX (rag_snippets_document_position_uq) "
	            "ON s.document_id = d.id WHERE " GROUP_WINDOW, "sssssss",
	            GROUP_WINDOW_ARGS(dataset_id, &d[0], &d[n - 1])) < 0) {
		rc = db_last_err(db);
		goto out;
	}
	for (size_t i = 0; i < x->g->n; i++) {
		size_t di = x->g->doc[i];

		if (!live[di])
			continue;
		if (metas[di] == NULL)
			metas[di] = json_tokener_parse(d[di].meta);
		if ((rc = snippet_rows_add(db, x->rows, x->dim, dataset_id, d[di].id,
		                           x->g->pos[i], x->g->texts[i], x->g->lens[i],
		                           x->g->vecs + i * x->dim, metas[di])) != 0)
			goto out;
		/* Out of memory here only means the build reads the row back. */
		(void)rag_rows_add(x->kept, x->rows->ids[x->rows->n - 1], d[di].id,
		                   (long)x->g->pos[i], x->rows->meta[x->rows->n - 1],
		                   x->g->texts[i], x->g->lens[i], x->g->vecs + i * x->dim);
	}
	if ((rc = snippet_rows_flush(db, x->rows)) != 0)
		goto out;
	if (db_exec(db, "UPDATE " PENDING_DOCS " SET d.status = 'success', d.error = NULL "
	            "WHERE " GROUP_WINDOW, "sssssss",
	            GROUP_WINDOW_ARGS(dataset_id, &d[0], &d[n - 1])) < 0) {
		rc = db_last_err(db) < 0 ? db_last_err(db) : DB_ERR;
		goto out;
	}
	rc = GROUP_STORED;
out:
	snippet_rows_clear(x->rows);
	for (size_t i = 0; metas != NULL && i < n; i++)
		json_object_put(metas[i]);
	free(metas);
	free(live);
	return rc;
}

/* The claims' cursor: documents d[i..n) of the current claim are not yet
 * in a group; the next claim starts after last, or from the start. */
struct claims {
	struct doc d[INGEST_CLAIM];
	size_t n, i;
	struct doc last;                  /* its id and created only */
	bool from_start;
};

enum { NEXT_NONE, NEXT_GROUP, NEXT_OOM };

/* The next group's documents into a new *out (its texts read, not yet
 * chunked): NEXT_GROUP, NEXT_NONE when no document is left, NEXT_OOM, or
 * < 0 enum db_err. */
static int group_next(struct work_ctx *w, const char *dataset_id, struct claims *c,
                      struct group **out)
{
	struct doc *d = c->d;
	size_t i, j, text = 0;
	double t0 = time_mono_ms();
	int f;

	*out = NULL;
	if (c->i == c->n) {
		docs_free(d, c->n);
		c->i = 0;
		if ((f = documents_claim(w->db, dataset_id, c->from_start ? NULL : &c->last,
		                         d, &c->n)) < 0)
			return f;
		if (c->n == 0)
			return NEXT_NONE;
		c->from_start = false;
	}
	i = j = c->i;
	do {
		if (d[j].text == NULL && j > i)
			break;                    /* a long text is a group of its own */
		TEST_HOOK_PAUSE(w->cfg, rag_test_ingest_delay_ms);
		if (d[j].text == NULL) {
			if ((f = document_text(w->db, &d[j])) < 0)
				return f;
			if (f == 0)
				d[j].len = 0, d[j].text = strdup("");
			if (d[j].text == NULL)
				return NEXT_OOM;
		}
		text += d[j].len;
		j++;
	} while (j < c->n && j - i < INGEST_GROUP_DOCS && text < INGEST_GROUP_TEXT &&
	         d[j - 1].len <= INGEST_INLINE_TEXT && time_mono_ms() - t0 < INGEST_GROUP_MS);
	struct group *g = calloc(1, sizeof *g);
	if (g == NULL || (g->d = malloc((j - i) * sizeof *g->d)) == NULL) {
		free(g);
		return NEXT_OOM;
	}
	/* The texts move into the group. */
	memcpy(g->d, d + i, (j - i) * sizeof *g->d);
	for (size_t k = i; k < j; k++)
		d[k].text = d[k].meta = NULL;
	g->nd = j - i;
	c->last = d[j - 1];
	c->i = j;
	*out = g;
	return NEXT_GROUP;
}

/* Ingest every processing document of the dataset, in claims from a
 * cursor and groups of claims: 0, or -1 with err.  Two groups are in hand
 * at a time: while the main thread stores one (MariaDB's work, mostly),
 * the preparing thread chunks and embeds the next, which used to wait for
 * it.  Only the main thread uses the connection. */
static int ingest_documents(struct work_ctx *w, const char *dataset_id,
                            const char *embedder, size_t dim, struct rag_rows *kept,
                            char *err, size_t errlen)
{
	struct claims *c = calloc(1, sizeof *c);
	struct snippet_rows *rows = calloc(1, sizeof *rows);
	struct group *ready = NULL, *next = NULL;   /* prepared; being prepared */
	pthread_t th;
	bool running = false;
	int rc = -1, f, stored;

	if (c == NULL || rows == NULL ||
	    (rows->blobs = malloc(SNIPPET_ROWS * dim * 4)) == NULL)
		goto oom;
	c->from_start = true;
	for (;;) {
		if ((f = group_next(w, dataset_id, c, &next)) < 0)
			goto dberr;
		if (f == NEXT_OOM)
			goto oom;
		if (next != NULL) {
			next->cfg = w->cfg;
			next->embedder = embedder;
			next->dim = dim;
			if (!(running = thread_start(&th, group_prepare, next)))
				group_prepare(next);      /* no thread: in turn, as before */
		}
		if (ready != NULL) {
			struct group_store gs = { dataset_id, dim, ready, ready->d, ready->nd,
			                          rows, kept, rag_rows_count(kept), false };

			stored = db_tx(w->db, "ingestion group", group_store_tx, &gs);
			if (stored == DB_ERR_DUPLICATE) {
				log_kv(LOG_WARN, "processing documents had snippets; replacing them",
				       "dataset=%s documents=%zu", dataset_id, ready->nd);
				gs.replace = true;
				stored = db_tx(w->db, "ingestion group", group_store_tx, &gs);
			}
			group_free(ready);
			ready = NULL;
			if (stored != GROUP_STORED)
				rag_rows_truncate(kept, gs.kept_before);
			if (stored < 0)
				goto dberr;
			if (stored == GROUP_INTRUDER) {
				/* claim again from the start; the next group with it */
				if (running)
					pthread_join(th, NULL);
				running = false;
				group_free(next);
				next = NULL;
				c->i = c->n;
				c->from_start = true;
				continue;
			}
			if (work_stopping(w)) {
				/* SIGTERM: what is stored stays; the queue row runs again */
				snprintf(err, errlen, "stopped before the end; will continue");
				goto out;
			}
		}
		if (next == NULL)
			break;
		if (running)
			pthread_join(th, NULL);
		running = false;
		if (next->rc != 0) {
			snprintf(err, errlen, "%s", next->err);
			goto out;
		}
		ready = next;
		next = NULL;
	}
	rc = 0;
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
	goto out;
dberr:
	log_kv(LOG_ERROR, "ingestion database error", "dataset=%s error=%s",
	       dataset_id, LOG_Q(db_error(w->db)));
	snprintf(err, errlen, "database error while storing snippets");
out:
	if (running)
		pthread_join(th, NULL);
	group_free(next);
	group_free(ready);
	if (c != NULL)
		docs_free(c->d, c->n);
	free(c);
	if (rows != NULL)
		free(rows->blobs);
	free(rows);
	return rc;
}

/* The dataset's lease (queue_lease_take: cluster-wide, where GET_LOCK is
 * per server), waiting up to INGEST_LOCK_WAIT_S for another item's
 * ingestion of it to end.  1 held, 0 not, < 0 enum db_err. */
static int lease_dataset(struct work_ctx *w, const struct work_item *it,
                         const char *name)
{
	double until = time_mono_ms() + INGEST_LOCK_WAIT_S * 1000.0;
	struct timespec pause = { 0, INGEST_LEASE_POLL_MS * 1000000L };
	int rc;

	while ((rc = queue_lease_take(w->db, name, w->process_id, it->id)) == 0 &&
	       time_mono_ms() < until && !work_stopping(w))
		nanosleep(&pause, NULL);
	return rc;
}

struct give_up {
	const char *dataset_id, *reason;
	bool newer;                 /* a newer ingestion is queued: left to it */
};

/* The body of give_up's transaction (db_tx).  The dataset's row is locked
 * first: a POST of documents locks it too (its inserts' foreign key check,
 * then rag_ingest_request), so either the POST commits first and its
 * ingestion is queued here to be seen, or it waits and then sets this
 * one's failed documents back to processing.  Without that, documents
 * posted while an ingestion gave up were failed with its old reason and
 * never stored.  0 or < 0 enum db_err. */
static int give_up_tx(struct db *db, void *arg)
{
	struct give_up *g = arg;
	int rc;

	g->newer = false;
	rc = db_first_row(db, db_query(db, "SELECT 1 FROM rag_datasets WHERE id = ? "
	                  "FOR UPDATE", "s", g->dataset_id), NULL, 0);
	if (rc <= 0)
		return rc;                /* an error, or deleted: nothing to fail */
	if ((rc = queue_pending(db, "rag_ingest", g->dataset_id)) != 0) {
		g->newer = rc == 1;
		return rc < 0 ? rc : 0;
	}
	if (db_exec(db, "UPDATE rag_documents SET status = 'failed', error = ? "
	            "WHERE dataset_id = ? AND status = 'processing'", "ss",
	            g->reason, g->dataset_id) < 0 ||
	    /* A dataset another ingestion settled meanwhile stays as it is. */
	    db_exec(db, "UPDATE rag_datasets SET status = 'failed', error = ? "
	            "WHERE id = ? AND status = 'processing'", "ss",
	            g->reason, g->dataset_id) < 0)
		return db_last_err(db) < 0 ? db_last_err(db) : DB_ERR;
	return 0;
}

/* Documents left processing become failed with the reason, and so does the
 * dataset: ingestion gave up, unless a newer ingestion of the dataset is
 * queued (it takes them all).  0 or < 0 enum db_err. */
static int give_up(struct work_ctx *w, const char *dataset_id, const char *reason)
{
	struct give_up g = { .dataset_id = dataset_id, .reason = reason };
	int rc;

	TEST_HOOK_PAUSE(w->cfg, rag_test_give_up_delay_ms);
	if ((rc = db_tx(w->db, "rag ingest give up", give_up_tx, &g)) == 0 && g.newer)
		log_kv(LOG_INFO, "ingestion not given up: a newer one is queued",
		       "dataset=%s", dataset_id);
	return rc;
}

enum { DATASET_GONE, DATASET_SETTLED, DATASET_MORE };

/* The dataset's index_generation into *gen: 1, 0 when it is gone, < 0
 * enum db_err. */
static int dataset_generation(struct db *db, const char *dataset_id, long long *gen)
{
	struct db_stmt *st = db_query(db, "SELECT index_generation FROM rag_datasets "
	                              "WHERE id = ?", "s", dataset_id);
	int rc;

	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		*gen = db_col_ll(st, 0);
	db_done(st);
	return rc;
}

/* Is a document of the dataset waiting to be stored?  1 yes, 0 no, < 0
 * enum db_err. */
static int dataset_processing(struct db *db, const char *dataset_id)
{
	return db_first_row(db, db_query(db, "SELECT 1 FROM rag_documents WHERE "
	                    "dataset_id = ? AND status = 'processing' LIMIT 1", "s",
	                    dataset_id), NULL, 0);
}

/* Is there more to ingest after an index built at generation gen?
 * DATASET_GONE (deleted), DATASET_SETTLED (no document is processing and
 * none was deleted since), DATASET_MORE, or < 0 on a database error. */
static int dataset_pending(struct db *db, const char *dataset_id, long long gen)
{
	struct db_stmt *st = db_query(db, "SELECT EXISTS (SELECT 1 FROM rag_documents "
	    "WHERE dataset_id = d.id AND status = 'processing') OR d.index_generation <> ? "
	    "FROM rag_datasets d WHERE d.id = ?", "is", gen, dataset_id);
	int rc;

	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		rc = db_col_ll(st, 0) != 0 ? DATASET_MORE : DATASET_SETTLED;
	else if (rc == 0)
		rc = DATASET_GONE;
	db_done(st);
	return rc;
}

int rag_ingest_request(struct db *db, const char *dataset_id, const char *tenant)
{
	long long rc;

	/* Earlier failures get another chance with the new ingestion. */
	if ((rc = db_exec(db, "UPDATE rag_documents SET status = 'processing', error = NULL "
	    "WHERE dataset_id = ? AND status = 'failed'", "s", dataset_id)) < 0 ||
	    (rc = db_exec(db, "UPDATE rag_datasets SET status = 'processing', error = NULL, "
	    "index_generation = index_generation + 1 WHERE id = ?", "s", dataset_id)) < 0)
		return (int)rc;
	/* One queued ingestion takes every processing document and rebuilds
	 * the index; one already running goes round again when it sees the
	 * new generation. */
	if ((rc = queue_pending(db, "rag_ingest", dataset_id)) != 0)
		return rc < 0 ? (int)rc : 0;
	rc = queue_enqueue(db, &(struct queue_new){ .kind = "rag_ingest",
	                   .ref_id = dataset_id, .tenant = tenant });
	return rc < 0 ? (int)rc : 0;
}

/* Whether the dataset says success: every request since (a POST, a
 * delete) sets it to processing in the transaction that queues this kind
 * of item, so success means an earlier item already built the index this
 * one was queued for.  1 yes, 0 no (or gone), < 0 enum db_err. */
static int dataset_settled(struct db *db, const char *dataset_id)
{
	return db_first_row(db, db_query(db, "SELECT 1 FROM rag_datasets WHERE id = ? AND "
	                    "status = 'success'", "s", dataset_id), NULL, 0);
}

/* Rounds of storing the processing documents and building the index, until
 * the dataset is settled; *kept gets the rows stored (NULL when out of
 * memory: the builds then read every row).  0; INGEST_LEASE_LOST when
 * another process took the lease (this one stalled past QUEUE_LEASE_S);
 * -1 with err. */
static int ingest_rounds(struct work_ctx *w, const struct work_item *it, const char *lease,
                         const char *dataset_id, struct rag_rows **kept,
                         char *err, size_t errlen)
{
	char embedder[64];
	size_t dim = 0, snippets;
	long long gen = 0;
	double built = time_mono_ms();
	long long read0, read1;
	int f;

	/* Queued while another item ingested the dataset, which then took
	 * this item's documents too: a second build of the whole index would
	 * be all this item did. */
	if ((f = dataset_settled(w->db, dataset_id)) != 0) {
		if (f < 0) {
			snprintf(err, errlen, "database error");
			return -1;
		}
		log_kv(LOG_INFO, "dataset already ingested", "dataset=%s", dataset_id);
		return 0;
	}
	read0 = db_rows_read(w->db);
	for (;;) {
		double t0 = time_mono_ms(), t1;

		if ((f = rag_dataset_dim(w->db, dataset_id, &dim, embedder, sizeof embedder)) <= 0) {
			if (f == 0)
				return 0;         /* deleted: nothing to do */
			snprintf(err, errlen, "database error");
			return -1;
		}
		if (*kept == NULL)
			*kept = rag_rows_new(dim);
		if (ingest_documents(w, dataset_id, embedder, dim, *kept, err, errlen) != 0)
			return -1;
		t1 = time_mono_ms();
		/* Documents that came in while this round ran (a client posting
		 * batches) are stored before the index is built: questions wait
		 * for the whole dataset anyway, and an index built per batch made
		 * the cost of N batches grow with N squared.  A steady stream
		 * still gets an index every INGEST_BUILD_EVERY_MS. */
		if ((f = dataset_processing(w->db, dataset_id)) < 0) {
			snprintf(err, errlen, "database error");
			return -1;
		}
		if (f == 1 && t1 - built < INGEST_BUILD_EVERY_MS)
			continue;
		/* Noted before the snippets are read: a deletion committed after
		 * this changes it, and the round is done again. */
		if ((f = dataset_generation(w->db, dataset_id, &gen)) <= 0) {
			if (f == 0)
				return 0;
			snprintf(err, errlen, "database error");
			return -1;
		}
		TEST_HOOK_PAUSE(w->cfg, rag_test_index_delay_ms);
		/* The index file is written by the lease's holder only: one that
		 * lost it (its process stalled past QUEUE_LEASE_S) stops here. */
		if ((f = queue_lease_renew(w->db, lease, w->process_id, it->id)) != 1) {
			snprintf(err, errlen, f == 0 ? "lost the dataset's lease"
			                             : "database error");
			return f == 0 ? INGEST_LEASE_LOST : -1;
		}
		if (rag_index_build(w->db, w->cfg, dataset_id, *kept, &snippets, err, errlen) != 0) {
			if (rag_dataset_dim(w->db, dataset_id, &dim, NULL, 0) == 0)
				return 0;         /* deleted while we worked */
			return -1;
		}
		built = time_mono_ms();
		TEST_HOOK_PAUSE(w->cfg, rag_test_index_delay_ms);
		/* Success unless a document arrived or went meanwhile.  What happened is
		 * read back, never taken from the UPDATE's row count (the row may
		 * already say success, with the same counts: nothing changes). */
		if (db_exec(w->db, "UPDATE rag_datasets SET status = 'success', error = NULL, "
		    "document_count = (SELECT COUNT(*) FROM rag_documents WHERE dataset_id = ? "
		    "AND status = 'success'), snippet_count = ? WHERE id = ? AND "
		    "index_generation = ? AND NOT EXISTS (SELECT 1 FROM rag_documents "
		    "WHERE dataset_id = ? AND status = 'processing')",
		    "sisis", dataset_id, (long long)snippets, dataset_id, gen, dataset_id) < 0 ||
		    (f = dataset_pending(w->db, dataset_id, gen)) < 0) {
			snprintf(err, errlen, "database error");
			return -1;
		}
		if (f == DATASET_GONE) {
			char path[CONFIG_PATH_MAX + 64];

			if (rag_index_path(w->cfg, dataset_id, path, sizeof path) == 0)
				unlink(path);
			return 0;
		}
		if (f == DATASET_SETTLED) {
			/* rows_read shows a plan that reads beyond the dataset's
			 * own rows (t/api/89 bounds it) */
			read1 = db_rows_read(w->db);
			log_kv(LOG_INFO, "dataset ingested",
			       "dataset=%s snippets=%zu documents_ms=%.0f index_ms=%.0f "
			       "rows_read=%lld", dataset_id, snippets, t1 - t0,
			       time_mono_ms() - t1, read0 < 0 || read1 < read0 ? -1 : read1 - read0);
			return 0;
		}
		/* DATASET_MORE: documents came in or went while this round ran. */
	}
}

static int ingest(struct work_ctx *w, const struct work_item *it, const char *lease,
                  const char *dataset_id, char *err, size_t errlen)
{
	struct rag_rows *kept = NULL;
	int rc = ingest_rounds(w, it, lease, dataset_id, &kept, err, errlen);

	rag_rows_free(kept);
	return rc;
}

int rag_ingest_work(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen)
{
	char id[RAG_ID_LEN + 1], lease[RAG_ID_LEN + 16];
	int rc;

	if (rag_id_parse(it->ref_id, id) != 0) {
		snprintf(err, errlen, "bad dataset id");
		return -1;
	}
	snprintf(lease, sizeof lease, "rag_ingest:%s", id);
	if ((rc = lease_dataset(w, it, lease)) < 0 || (rc == 0 && work_stopping(w))) {
		snprintf(err, errlen, rc < 0 ? "database error" : "stopping");
		return -1;
	}
	rc = rc == 1 ? ingest(w, it, lease, id, err, errlen) : INGEST_LEASE_LOST;
	queue_lease_release(w->db, lease, w->process_id, it->id);
	/* The lease's holder (alive: it renewed the lease all the while) takes
	 * every processing document, this item's too, before it settles the
	 * dataset.  This item is done; failing it would, on its last attempt,
	 * fail the documents the holder is storing. */
	if (rc == INGEST_LEASE_LOST) {
		log_kv(LOG_INFO, "dataset ingested by another process", "dataset=%s", id);
		return 0;
	}
	if (rc != 0) {
		if (it->attempts >= it->max_attempts) {
			give_up(w, id, err);
		} else {
			char msg[600];

			snprintf(msg, sizeof msg, "attempt %d of %d failed (%s); retrying",
			         it->attempts, it->max_attempts, err);
			db_exec(w->db, "UPDATE rag_datasets SET error = ? WHERE id = ? "
			        "AND status = 'processing'", "ss", msg, id);
		}
	}
	return rc;
}

int rag_ingest_give_up(struct work_ctx *w, const struct work_item *it,
                       const char *reason)
{
	char id[RAG_ID_LEN + 1];

	if (rag_id_parse(it->ref_id, id) != 0)
		return 0;
	/* Not settled unless written: a deadlock (or a certification failure
	 * Galera's own retry of the statement did not overcome) tries again. */
	return give_up(w, id, reason) < 0 ? -1 : 0;
}
