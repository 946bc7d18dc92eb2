/* title.h - a document's title, from its metadata: the field BM25F weighs
 * above the body (index.c adds it to the document's first snippet). */
#ifndef SLUICE_TITLE_H
#define SLUICE_TITLE_H

#include <stddef.h>

/* The longest title kept, in bytes; a longer one is cut at a character. */
#define DOC_TITLE_MAX 1024

/* The title in the metadata JSON object meta (a snippet's, as stored):
 * metadata.title when it is a string, else metadata.source's file name
 * without its directory and extension ("guides/git-rebase.md" gives
 * "git-rebase", "ls.1" gives "ls").  Written to out (cap > DOC_TITLE_MAX
 * bytes) NUL-terminated; returns its length, 0 when there is none or meta
 * is not a JSON object. */
size_t doc_title(const char *meta, char *out, size_t cap);

#endif
