/* build.h - the snippet rows an ingestion keeps for its index builds.
 *
 * A snippet row never changes once stored (a document stored again gets
 * new snippet ids), so the rows an ingestion wrote are, for as long as
 * MariaDB still lists their ids, what reading them back would give.
 * rag_index_build (retrieval.h) takes them from here and reads only the
 * rest. */
#ifndef SLUICE_RETRIEVAL_BUILD_H
#define SLUICE_RETRIEVAL_BUILD_H

#include <stddef.h>

struct rag_rows;

/* NULL when out of memory. */
struct rag_rows *rag_rows_new(size_t dim);
void rag_rows_free(struct rag_rows *r);
size_t rag_rows_count(const struct rag_rows *r);
/* Keep a copy of a stored row (vec has the rows' dim floats): 0, or -1
 * when out of memory (r is then as it was). */
int rag_rows_add(struct rag_rows *r, const char *id, const char *doc_id, long pos,
                 const char *meta, const char *text, size_t len, const float *vec);
/* Forget every row after the first n (their transaction rolled back). */
void rag_rows_truncate(struct rag_rows *r, size_t n);

#endif
