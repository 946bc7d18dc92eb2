/* index.h - one dataset's search index file: vectors, norms, their 8-bit
 * codes, snippet ids, metadata, texts, which document each snippet belongs
 * to, and the BM25 postings of the snippets and of the documents.
 *
 * Written to a temp file in the same directory, fsync'd and renamed, then
 * the directory fsync'd (atomic); opened with mmap read-only; carries a
 * magic, version, dim, count and a checksum so a torn or foreign file is
 * refused.  The layout is described in index.c. */
#ifndef SLUICE_INDEX_H
#define SLUICE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "retrieval/bm25.h"
#include "retrieval/vec_codes.h"

#define RINDEX_MAX_DIM 4096
#define RINDEX_MAX_COUNT 50000000u

struct rindex;
/* metadata_json[i] may be NULL ("{}"); texts[i] may be NULL ("").
 * doc_ids[i] names row i's document: consecutive rows with the same id are
 * one document's snippets in order (the caller sorts by document, then
 * position); NULL makes every row a document of its own. */
int rindex_write(const char *path, size_t n, size_t dim, const float *vecs,
                 const char *const *snippet_ids, const char *const *metadata_json,
                 const char *const *texts, const char *const *doc_ids,
                 char *err, size_t errlen);
/* The same from rows whose values lie anywhere (an ingestion's kept rows
 * and rows read back, without copying them together first); pos orders a
 * document's rows for rindex_sort and is not written. */
struct rindex_row {
	const float *vec;
	const char *id, *meta, *text, *doc;
	long pos;
};
int rindex_write_rows(const char *path, size_t n, size_t dim, const struct rindex_row *rows,
                      char *err, size_t errlen);
/* Rows read in another order (a table's key) put in rindex_write's: by
 * document id, then by pos within a document. */
void rindex_sort(struct rindex_row *rows, size_t n);
struct rindex *rindex_open(const char *path, char *err, size_t errlen);  /* NULL: missing/corrupt */
/* Which file an open index maps, as fstat saw it when it was opened: a
 * file is replaced by a rename, never changed in place, so two processes
 * whose indexes have the same identity map the same rows. */
struct rindex_file {
	uint64_t dev, ino, size;
	int64_t mtime_s, mtime_ns;
	int64_t ctime_s, ctime_ns;       /* no one can set it back: a file
	                                  * written in place always differs */
};
const struct rindex_file *rindex_file(const struct rindex *ix);
struct rindex_file rindex_file_of(const struct stat *st);
bool rindex_file_same(const struct rindex_file *a, const struct rindex_file *b);
void rindex_close(struct rindex *ix);
size_t rindex_count(const struct rindex *ix);
size_t rindex_dim(const struct rindex *ix);
const float *rindex_vectors(const struct rindex *ix);   /* 64-byte aligned */
const float *rindex_norms(const struct rindex *ix);
/* The rows' 8-bit codes, for vec_topk_coded. */
const struct vec_codes *rindex_codes(const struct rindex *ix);
const char *rindex_snippet_id(const struct rindex *ix, size_t row);
const char *rindex_metadata(const struct rindex *ix, size_t row);     /* JSON text */
const char *rindex_text(const struct rindex *ix, size_t row);
const struct bm25 *rindex_bm25(const struct rindex *ix);        /* rows */
const struct bm25 *rindex_bm25_docs(const struct rindex *ix);   /* documents */
size_t rindex_doc_count(const struct rindex *ix);
uint32_t rindex_row_doc(const struct rindex *ix, size_t row);   /* row < count */
size_t rindex_doc_first_row(const struct rindex *ix, size_t doc); /* doc <= ndocs */
/* The same as arrays, for loops over many rows: count rows' documents,
 * and ndocs + 1 documents' first rows. */
const uint32_t *rindex_row_docs(const struct rindex *ix);
const uint32_t *rindex_doc_first_rows(const struct rindex *ix);

#endif
