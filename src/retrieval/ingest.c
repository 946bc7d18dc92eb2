/* ingest.c - a dataset's embedder, ingestion in `sluice work`, and the
 * index file built from MariaDB.
 *
 * Ingestion is idempotent, so a claim that a dead process left behind can
 * simply run again: each document's snippets are replaced in the same
 * transaction that marks the document success, and the index file is
 * rewritten whole (atomically) from the rows.  A named lock per dataset
 * keeps two work processes from ingesting one dataset at the same time. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
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
#include "util/timeutil.h"
#include "util/uuid.h"

#define INGEST_LOCK_WAIT_S 60      /* for another process's ingestion of it */
#define BUILTIN_BATCH 256

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

/* --- index files ------------------------------------------------------------------ */

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

/* Embeddings are stored as float32 little-endian, whatever the host. */
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

static void f32_le_get(float *dst, const unsigned char *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)src[4 * i] | (uint32_t)src[4 * i + 1] << 8 |
		             (uint32_t)src[4 * i + 2] << 16 | (uint32_t)src[4 * i + 3] << 24;

		memcpy(&dst[i], &u, 4);
	}
}

static int dataset_dim(struct db *db, const char *dataset_id, size_t *dim,
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

int rag_index_build(struct db *db, const struct config *cfg,
                    const char *dataset_id, size_t *count,
                    char *err, size_t errlen)
{
	char path[CONFIG_PATH_MAX + 64], dir[CONFIG_PATH_MAX + 32];
	char **ids = NULL, **meta = NULL, **texts = NULL, **docs = NULL;
	float *vecs = NULL;
	size_t n = 0, cap = 0, dim = 0;
	struct db_stmt *st = NULL;
	int rc = -1, f;

	*count = 0;
	if ((f = dataset_dim(db, dataset_id, &dim, NULL, 0)) != 1) {
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
	st = db_query(db, "SELECT id, embedding, metadata, page_content, document_id FROM rag_snippets "
	              "WHERE dataset_id = ? ORDER BY document_id, position", "s", dataset_id);
	if (st == NULL) {
		snprintf(err, errlen, "database error");
		return -1;
	}
	while ((f = db_fetch(st)) == 1) {
		if (n == cap) {
			size_t nc = cap == 0 ? 1024 : cap * 2;
			char **a = realloc(ids, nc * sizeof *a), **b, **c, **d;
			float *v;

			if (a != NULL)
				ids = a;
			b = realloc(meta, nc * sizeof *b);
			if (b != NULL)
				meta = b;
			c = realloc(texts, nc * sizeof *c);
			if (c != NULL)
				texts = c;
			d = realloc(docs, nc * sizeof *d);
			if (d != NULL)
				docs = d;
			v = realloc(vecs, nc * dim * sizeof *v);
			if (v != NULL)
				vecs = v;
			if (a == NULL || b == NULL || c == NULL || d == NULL || v == NULL) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			cap = nc;
		}
		if (db_col_len(st, 1) != dim * 4) {
			snprintf(err, errlen, "a snippet's embedding does not have %zu dimensions", dim);
			goto out;
		}
		f32_le_get(vecs + n * dim, (const unsigned char *)db_col_str(st, 1), dim);
		ids[n] = strdup(db_col_str(st, 0));
		meta[n] = strdup(db_col_str(st, 2));
		texts[n] = strdup(db_col_str(st, 3));
		docs[n] = strdup(db_col_str(st, 4));
		n++;
		if (ids[n - 1] == NULL || meta[n - 1] == NULL || texts[n - 1] == NULL ||
		    docs[n - 1] == NULL) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	db_done(st);
	st = NULL;
	if (f < 0) {
		snprintf(err, errlen, "database error");
		goto out;
	}
	if (rindex_write(path, n, dim, vecs, (const char *const *)ids,
	                 (const char *const *)meta, (const char *const *)texts,
	                 (const char *const *)docs, err, errlen) != 0)
		goto out;
	*count = n;
	rc = 0;
out:
	db_done(st);
	for (size_t i = 0; i < n; i++) {
		free(ids[i]);
		free(meta[i]);
		free(texts[i]);
		free(docs[i]);
	}
	free(ids);
	free(meta);
	free(texts);
	free(docs);
	free(vecs);
	return rc;
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

/* Lock a document's row for the transaction: 1, 0 when it is gone, < 0
 * enum db_err. */
static int document_hold(struct db *db, const char *doc_id)
{
	return db_first_row(db, db_query(db, "SELECT 1 FROM rag_documents WHERE id = ? "
	                                 "FOR UPDATE", "s", doc_id), NULL, 0);
}

/* Chunk, embed and store one document (nothing when it was deleted
 * meanwhile); 0 or -1 with err. */
static int ingest_document(struct work_ctx *w, const char *dataset_id,
                           const char *embedder, size_t dim, const char *doc_id,
                           const char *text, size_t len, const char *meta_json,
                           char *err, size_t errlen)
{
	const struct config *cfg = w->cfg;
	struct chunk *chunks = NULL;
	const char **ctexts = NULL;
	size_t *clens = NULL;
	float *vecs = NULL;
	unsigned char *blob = NULL;
	struct json_object *meta = NULL;
	size_t n, cap = 64, batch;
	bool in_tx = false;
	int rc = -1, held;

	for (;;) {
		struct chunk *c = realloc(chunks, cap * sizeof *c);

		if (c == NULL) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		chunks = c;
		n = chunk_text(text, len, (size_t)cfg->chunk_size,
		               (size_t)cfg->chunk_overlap, chunks, cap);
		if (n <= cap)
			break;
		cap = n;
	}
	ctexts = calloc(n + 1, sizeof *ctexts);
	clens = calloc(n + 1, sizeof *clens);
	vecs = malloc((n + 1) * dim * sizeof *vecs);
	blob = malloc(dim * 4);
	if (ctexts == NULL || clens == NULL || vecs == NULL || blob == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ctexts[i] = text + chunks[i].off;
		clens[i] = chunks[i].len;
	}
	batch = strcmp(embedder, "builtin") == 0 ? BUILTIN_BATCH
	                                          : (size_t)cfg->openai_batch_size;
	for (size_t i = 0; i < n; i += batch) {
		size_t m = n - i < batch ? n - i : batch;

		if (rag_embed(cfg, embedder, dim, ctexts + i, clens + i, m,
		              vecs + i * dim, err, errlen) != 0)
			goto out;
	}
	meta = json_tokener_parse(meta_json);

	if (db_begin(w->db) != DB_OK)
		goto dberr;
	in_tx = true;
	/* The row lock orders this against DELETE of the document: deleted
	 * first, its snippets are not stored (the ingestion of a deleted
	 * document ends here); stored first, the DELETE takes them along. */
	if ((held = document_hold(w->db, doc_id)) < 0)
		goto dberr;
	if (held == 0) {
		rc = 0;
		goto out;
	}
	if (db_exec(w->db, "DELETE FROM rag_snippets WHERE document_id = ?", "s", doc_id) < 0)
		goto dberr;
	for (size_t i = 0; i < n; i++) {
		char id[UUID_STR_LEN], *smeta;
		char *content = strndup(ctexts[i], clens[i]);
		long long r;

		if (content == NULL || uuid_v4(id, '-') != 0 ||
		    (smeta = snippet_metadata(meta, doc_id, i)) == NULL) {
			free(content);
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		f32_le_put(blob, vecs + i * dim, dim);
		r = db_exec(w->db, "INSERT INTO rag_snippets (id, dataset_id, document_id, "
		            "position, page_content, metadata, embedding, norm, token_count) "
		            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", "sssissbdi",
		            id, dataset_id, doc_id, (long long)i, content, smeta,
		            blob, dim * 4, (double)vec_norm(vecs + i * dim, dim),
		            (long long)count_words(ctexts[i], clens[i]));
		free(content);
		free(smeta);
		if (r < 0)
			goto dberr;
	}
	if (db_exec(w->db, "UPDATE rag_documents SET status = 'success', error = NULL "
	            "WHERE id = ?", "s", doc_id) < 0 || db_commit(w->db) != DB_OK)
		goto dberr;
	in_tx = false;
	rc = 0;
	goto out;
dberr:
	log_kv(LOG_ERROR, "ingestion database error", "dataset=%s error=%s",
	       dataset_id, LOG_Q(db_error(w->db)));
	snprintf(err, errlen, "database error while storing snippets");
out:
	if (in_tx)
		db_rollback(w->db);
	json_object_put(meta);
	free(chunks);
	free(ctexts);
	free(clens);
	free(vecs);
	free(blob);
	return rc;
}

/* The next processing document of the dataset: 1 with *doc filled (free
 * the strings), 0 none left, < 0 database error. */
struct doc {
	char id[RAG_ID_LEN + 1];
	char *text, *meta;
	size_t len;
};

static int next_document(struct db *db, const char *dataset_id, struct doc *d)
{
	struct db_stmt *st = db_query(db, "SELECT id, text, metadata FROM rag_documents "
	    "WHERE dataset_id = ? AND status = 'processing' ORDER BY created_at, id "
	    "LIMIT 1", "s", dataset_id);
	int rc;

	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1) {
		snprintf(d->id, sizeof d->id, "%s", db_col_str(st, 0));
		d->len = db_col_len(st, 1);
		d->text = malloc(d->len + 1);
		d->meta = strdup(db_col_str(st, 2));
		if (d->text == NULL || d->meta == NULL) {
			free(d->text);
			free(d->meta);
			rc = DB_ERR;
		} else {
			memcpy(d->text, db_col_str(st, 1), d->len + 1);
		}
	}
	db_done(st);
	return rc;
}

static int lock_dataset(struct db *db, const char *dataset_id, bool take)
{
	char name[64];
	struct db_stmt *st;
	int got = 0;

	snprintf(name, sizeof name, "sluice_rag_ingest:%s", dataset_id);
	if (!take) {
		st = db_query(db, "SELECT RELEASE_LOCK(?)", "s", name);
		if (st != NULL)
			db_fetch(st);
		db_done(st);
		return 0;
	}
	st = db_query(db, "SELECT GET_LOCK(?, ?)", "si", name, (long long)INGEST_LOCK_WAIT_S);
	if (st != NULL && db_fetch(st) == 1)
		got = db_col_ll(st, 0) == 1;
	db_done(st);
	return got ? 0 : -1;
}

/* Documents left processing become failed with the reason, and so does the
 * dataset: ingestion gave up. */
static void give_up(struct db *db, const char *dataset_id, const char *reason)
{
	db_exec(db, "UPDATE rag_documents SET status = 'failed', error = ? "
	        "WHERE dataset_id = ? AND status = 'processing'", "ss", reason, dataset_id);
	db_exec(db, "UPDATE rag_datasets SET status = 'failed', error = ? WHERE id = ?",
	        "ss", reason, dataset_id);
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

static int ingest(struct work_ctx *w, const char *dataset_id, char *err, size_t errlen)
{
	char embedder[64];
	size_t dim = 0, snippets;
	long long gen = 0;
	int f;

	for (;;) {
		struct doc d;
		double t0 = time_mono_ms(), t1;

		if ((f = dataset_dim(w->db, dataset_id, &dim, embedder, sizeof embedder)) <= 0) {
			if (f == 0)
				return 0;         /* deleted: nothing to do */
			snprintf(err, errlen, "database error");
			return -1;
		}
		while ((f = next_document(w->db, dataset_id, &d)) == 1) {
			TEST_HOOK_PAUSE(w->cfg, rag_test_ingest_delay_ms);
			f = ingest_document(w, dataset_id, embedder, dim, d.id, d.text,
			                    d.len, d.meta, err, errlen);
			free(d.text);
			free(d.meta);
			if (f != 0)
				return -1;
			if (work_stopping(w)) {
				/* SIGTERM: what is stored stays; the queue row runs again */
				snprintf(err, errlen, "stopped before the end; will continue");
				return -1;
			}
		}
		if (f < 0) {
			snprintf(err, errlen, "database error");
			return -1;
		}
		t1 = time_mono_ms();
		/* Noted before the snippets are read: a deletion committed after
		 * this changes it, and the round is done again. */
		if ((f = dataset_generation(w->db, dataset_id, &gen)) <= 0) {
			if (f == 0)
				return 0;
			snprintf(err, errlen, "database error");
			return -1;
		}
		TEST_HOOK_PAUSE(w->cfg, rag_test_index_delay_ms);
		if (rag_index_build(w->db, w->cfg, dataset_id, &snippets, err, errlen) != 0) {
			if (dataset_dim(w->db, dataset_id, &dim, NULL, 0) == 0)
				return 0;         /* deleted while we worked */
			return -1;
		}
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
			log_kv(LOG_INFO, "dataset ingested",
			       "dataset=%s snippets=%zu documents_ms=%.0f index_ms=%.0f",
			       dataset_id, snippets, t1 - t0, time_mono_ms() - t1);
			return 0;
		}
		/* DATASET_MORE: documents came in or went while this round ran. */
	}
}

int rag_ingest_work(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen)
{
	char id[RAG_ID_LEN + 1];
	int rc;

	if (rag_id_parse(it->ref_id, id) != 0) {
		snprintf(err, errlen, "bad dataset id");
		return -1;
	}
	if (lock_dataset(w->db, id, true) != 0) {
		snprintf(err, errlen, "another process is ingesting this dataset");
		return -1;
	}
	rc = ingest(w, id, err, errlen);
	lock_dataset(w->db, id, false);
	if (rc != 0) {
		if (it->attempts >= it->max_attempts) {
			give_up(w->db, id, err);
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
	give_up(w->db, id, reason);
	return db_connected(w->db) ? 0 : -1;
}
