/* chunk.h - split a document into snippets.
 *
 * Sizes are in characters (UTF-8 code points).  Cuts prefer a paragraph
 * break, then a sentence end, then a space; a word longer than size is cut
 * between code points.  Chunks never start or end inside a UTF-8 sequence,
 * are never empty or all white space, and together cover every
 * non-white-space byte of the text. */
#ifndef SLUICE_CHUNK_H
#define SLUICE_CHUNK_H

#include <stddef.h>

struct chunk { size_t off, len; };        /* byte range of text (UTF-8 safe boundaries) */

/* size >= 1 characters; overlap < size (larger overlaps are clamped to
 * size / 2).  Returns the count, which may exceed max: then only the first
 * max were written and the caller calls again with a bigger out. */
size_t chunk_text(const char *text, size_t len, size_t size, size_t overlap,
                  struct chunk *out, size_t max);

#endif
