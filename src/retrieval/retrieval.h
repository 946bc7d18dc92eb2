/* retrieval.h - the retrieval service: datasets, documents, questions.
 *
 * datasets.c   POST/GET/DELETE /dataset, GET /dataset (the caller's
 *              datasets, paged), the caller's dataset row, the area's
 *              error bodies
 * documents.c  POST /dataset/{id}/documents (JSON or multipart upload),
 *              turning uploaded files into text, GET the documents (paged)
 *              and DELETE one
 * questions.c  POST/GET question, answering a question over the dataset's
 *              index (cached per process), the worker's post-response hook
 * ingest.c     the embedder of a dataset, ingestion in `sluice work`, and
 *              (re)building a dataset's index file from MariaDB
 *
 * MariaDB is the source of truth (rag_* tables); the index file of a dataset
 * is a cache of its snippets that any process can rebuild. */
#ifndef SLUICE_RETRIEVAL_H
#define SLUICE_RETRIEVAL_H

#include <stdbool.h>
#include <stddef.h>

#include "http/router.h"
#include "db/queue.h"
#include "http/validate.h"

struct config;
struct db;
struct json_object;
struct req;
struct rag_rows;
struct rindex;
struct verror;

extern const struct route retrieval_routes[];      /* datasets.c */

/* Handlers, routed by datasets.c's table. */
int rag_documents_post(struct req *r);             /* documents.c */
int rag_documents_list(struct req *r);
int rag_document_delete(struct req *r);
int rag_question_post(struct req *r);              /* questions.c */
int rag_question_get(struct req *r);

/* --- the area's answers, written in one place (datasets.c) -------------------- */
/* Every non-2xx answer of the area but a database or internal failure
 * (http/errors.h): a status and a {"detail"} text.  A text with
 * conversions takes the arguments noted beside its row, in that order. */
enum rag_reply {
	RAG_DATASET_NOT_FOUND,        /* 404 */
	RAG_QUESTION_NOT_FOUND,       /* 404 */
	RAG_DOCUMENT_NOT_FOUND,       /* 404 */
	RAG_DATASET_PROCESSING,       /* 422 */
	RAG_DATASET_FAILED,           /* 422 */
	RAG_QUESTION_NOT_REGISTERED,  /* 500 */
	RAG_EMBEDDER_MISCONFIGURED,   /* 500 */
	RAG_INVALID,                  /* 400: a sentence naming the field */
	RAG_MMR_DISAGREE,             /* 400 */
	RAG_SOURCE_TOO_LONG,          /* 400: document index (size_t), max (int) */
	RAG_UPLOAD_NOT_A_FILE,        /* 400: form field name */
	RAG_UPLOAD_FILE_NAME,         /* 400: file name */
	RAG_UPLOAD_FILE_TYPE,         /* 400: file name */
	RAG_UPLOAD_TOO_MANY_FILES,    /* 400: max (int) */
	RAG_UPLOAD_NOT_UTF8,          /* 400: file name */
	RAG_UPLOAD_BAD_CSV,           /* 400: file name, reason */
	RAG_UPLOAD_BAD_JSON,          /* 400: file name, reason */
	RAG_UPLOAD_NO_TEXT,           /* 400: file name */
	RAG_UPLOAD_TEXT_TOO_LARGE,    /* 413: max (long), file name */
	RAG_UPLOAD_NO_FILES,          /* 400 */
};
/* Writes the answer; returns -1 so a handler can `return rag_reply(...)`. */
int rag_reply(struct req *r, enum rag_reply what, ...);
/* 400 with the validator's sentence; returns -1. */
int rag_reply_verror(struct req *r, const struct verror *e);
/* The query of r checked against fields (NULL: the route takes none) into
 * out: 0, or -1 after a 400 naming the parameter. */
int rag_query_or_reply(struct req *r, const struct vfield *fields, void *out);
/* The body and status of an answer without arguments, for one written
 * elsewhere (the waiter). */
struct json_object *rag_reply_json(enum rag_reply what, int *status);
/* A DATETIME(3) column ("2026-11-23 10:00:00.123") as ISO 8601 UTC, or a
 * JSON null when empty. */
struct json_object *rag_json_time(const char *dbtime);

/* --- ids -------------------------------------------------------------------- */
#define RAG_ID_LEN 36
/* The canonical (lowercase, hyphenated) form of a UUID; -1 when in is not one. */
int rag_id_parse(const char *in, char out[RAG_ID_LEN + 1]);

/* --- limits (docs/api.md lists them) ---------------------------------------- */
#define RAG_NAME_MAX 255                    /* characters */
#define RAG_DOCS_PER_REQUEST 1000
#define RAG_METADATA_MAX 16384              /* bytes of one document's metadata JSON */
#define RAG_UPLOAD_MAX (64L * 1024 * 1024)  /* bytes of one multipart request */
#define RAG_UPLOAD_TEXT_MAX (256L * 1024 * 1024) /* bytes of text made from one upload */
#define RAG_UPLOAD_FILES_MAX 100
#define RAG_QUESTION_MAX 1000               /* characters */
#define RAG_K_MAX 1000                      /* k and fetch_k of a question */
#define RAG_TOP_N_MAX 100                   /* top_n of a question */
#define RAG_QUESTION_FALLBACK_S 5           /* a worker's time to answer, or queue */
#define RAG_QUESTION_BATCH 64               /* questions sluice work answers at once */
#define RAG_QUESTION_ROUNDS_MS 1000         /* ... and keeps answering of one dataset */
#define RAG_QUESTION_ROUNDS_MAX_MS 10000    /* ... up to this while no other dataset waits */
#define RAG_QUESTION_LINGER_MS 50           /* ... while new ones came this recently */
#define RAG_QUESTION_NUDGE_POLL_MS 25       /* ... looking again at least this often */

/* --- the caller's dataset --------------------------------------------------- */
struct rag_dataset {
	char id[RAG_ID_LEN + 1];
	char status[16];
	char embedder[64];
	int dimensions;
	long long snippets;               /* snippet_count as of its last ingestion */
};

/* The dataset raw_id names, when the Basic caller owns it.  0; or the
 * answer was written (404 for a malformed, unknown or another user's id,
 * 503 when the database is down) and -1 is returned. */
int rag_dataset_of_caller(struct req *r, const char *raw_id, struct rag_dataset *ds);

/* --- embedding -------------------------------------------------------------- */
/* The embedder value new datasets get from the config: "builtin" or
 * "openai:<model>". */
void rag_embedder_of_config(const struct config *cfg, char *out, size_t cap);
/* Embed n texts with a dataset's embedder into out (n * dim floats).
 * 0, or -1 with a client-safe reason in err. */
int rag_embed(const struct config *cfg, const char *embedder, size_t dim,
              const char *const *texts, const size_t *lens, size_t n,
              float *out, char *err, size_t errlen);

/* --- index files -------------------------------------------------------------- */
/* <rag_index_dir>/<dataset_id>.idx; 0 or -1 when the path is too long. */
int rag_index_path(const struct config *cfg, const char *dataset_id,
                   char *buf, size_t cap);
/* A dataset's dimensions and (when embedder is not NULL) embedder: 1,
 * 0 when the dataset is gone, < 0 enum db_err. */
int rag_dataset_dim(struct db *db, const char *dataset_id, size_t *dim,
                    char *embedder, size_t ecap);
/* Write a dataset's index file from its snippets (atomic): those in kept
 * (rows an ingestion stored, build.h; may be NULL) that MariaDB still
 * lists, and the others read from MariaDB.  *count gets the number of
 * snippets.  0 or -1 with err. */
int rag_index_build(struct db *db, const struct config *cfg,
                    const char *dataset_id, const struct rag_rows *kept,
                    size_t *count, char *err, size_t errlen);
/* The open index of a dataset, cached per process: reopened when the file
 * was replaced; rebuilt from MariaDB when missing or corrupt only with
 * may_build (never in a serve worker).  Owned by the cache (valid until the
 * next call).  NULL with err on failure. */
const struct rindex *rag_index_get(struct db *db, const struct config *cfg,
                                   const char *dataset_id, size_t dim, bool may_build,
                                   char *err, size_t errlen);
/* Close and forget the cached index of a dataset (after DELETE). */
void rag_index_forget(const char *dataset_id);
/* A question of dataset_id was just ranked here in cpu_ms of CPU time (a
 * batch's per question): what decides whether a worker ranks the next one
 * itself. */
void rag_index_ranked(const char *dataset_id, double cpu_ms);

/* --- questions ---------------------------------------------------------------- */
/* A question POST is registering, ranked by the worker that took the POST
 * before it is stored (answer.c). */
struct rag_posted_question {
	const char *id, *dataset_id, *embedder;
	int dimensions;
	const char *text;
	const char *params;        /* the stored parameters' JSON */
};
/* Rank q in the serve worker that took its POST, from the cached index
 * file (never rebuilt here), without storing: 0 with the result's JSON in
 * *result (the caller's to free), or -1 (err). */
int rag_question_rank_posted(const struct config *cfg, const struct rag_posted_question *q,
                             char **result, char *err, size_t errlen);
/* sluice work, every RAG_QUESTION_FALLBACK_S: queue the questions still
 * processing RAG_QUESTION_FALLBACK_S after they were asked that have no
 * queue row (stored before their ranking by an earlier sluice, whose worker
 * died).  How many were queued, or < 0 enum db_err. */
int rag_question_recover(struct db *db, const struct config *cfg);
/* The GET question body of question_id in dataset_id, while the dataset
 * is owner's ("user:<id>"), into *out.  1, 0 when there is no such
 * question of owner's, < 0 enum db_err. */
int rag_question_render(struct db *db, const char *owner, const char *dataset_id,
                        const char *question_id, struct json_object **out);

/* For the waiter (serve/waiter.c): which questions of ids (n <=
 * DB_IN_BATCH) are no longer processing, and the GET answer of one
 * of owner's ("user:<id>") questions: 0 with *status and *body (200, 404),
 * or < 0 enum db_err. */
int rag_questions_settled(struct db *db, const char *const *ids, size_t n,
                          bool *settled);
int rag_question_wait_answer(struct db *db, const char *owner, const char *dataset_id,
                             const char *question_id, int *status,
                             struct json_object **body);

/* --- ingestion ------------------------------------------------------------------ */
/* In the caller's transaction: the dataset's documents changed (added or
 * deleted), so it is processing again, its failed documents get another
 * chance, its index is stale (index_generation moves on), and an ingestion
 * is queued unless one already is.  0 or < 0 enum db_err. */
int rag_ingest_request(struct db *db, const char *dataset_id, const char *tenant);

/* --- sluice work kinds (work/kinds.c) -------------------------------------------- */
int rag_ingest_work(struct work_ctx *w, const struct work_item *it,
                    char *err, size_t errlen);
int rag_ingest_give_up(struct work_ctx *w, const struct work_item *it,
                       const char *reason);
int rag_question_work(struct work_ctx *w, const struct work_item *it,
                      char *err, size_t errlen);
int rag_question_give_up(struct work_ctx *w, const struct work_item *it,
                         const char *reason);
/* The fairness key of a retrieval user's work items: "user:<id>". */
void rag_tenant(char *buf, size_t cap, long long user_id);

/* --- validation tables -----------------------------------------------------
 * Each route's body and query fields (http/validate.h), defined beside its
 * handler; t/unit/test_vtables.c checks every bound of each at max and
 * max + 1. */
extern const struct vfield rag_question_body[];
extern const struct vfield rag_question_query[];
extern const struct vfield rag_dataset_body[];
extern const struct vfield rag_documents_body[];
extern const struct vfield rag_document_body[];
extern const struct vfield rag_datasets_query[];
extern const struct vfield rag_documents_query[];

#endif
