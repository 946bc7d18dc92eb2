/* multipart.h - a streaming multipart/form-data parser (RFC 7578, 2046).
 *
 * The body is fed in pieces of any size and never held whole: each part's
 * bytes go to a callback as they arrive, so the caller decides where they
 * go (memory within its own limit, or a file).  Bounded: a boundary of at
 * most 70 characters, part headers of at most MULTIPART_HEADER_MAX bytes;
 * the caller bounds the total through req_multipart_or_reply's max and the
 * number and size of parts in its callbacks. */
#ifndef SLUICE_MULTIPART_H
#define SLUICE_MULTIPART_H

#include <stddef.h>

struct req;

#define MULTIPART_BOUNDARY_MAX 70
#define MULTIPART_HEADER_MAX 8192         /* one part's header block */

enum multipart_err {
	MULTIPART_OK = 0,
	MULTIPART_ERR_BAD = -1,           /* malformed body: message in err */
	MULTIPART_ERR_STOP = -2,          /* a callback returned -1 */
};

/* One part, as its headers describe it; strings live until part_end. */
struct multipart_part {
	const char *name;                 /* form field name, "" when none */
	const char *filename;             /* as sent (may hold a path); NULL when not a file */
	const char *content_type;         /* "" when none */
};

/* Each returns 0 to go on or -1 to stop the parse (MULTIPART_ERR_STOP);
 * a callback that stops keeps its own reason in arg. */
struct multipart_cb {
	int (*part_begin)(void *arg, const struct multipart_part *p);
	int (*part_data)(void *arg, const char *data, size_t len);
	int (*part_end)(void *arg);
};

struct multipart;

/* The boundary parameter of a multipart/form-data Content-Type into out
 * (MULTIPART_BOUNDARY_MAX + 1 bytes); 0, or -1 when the type is another or
 * the boundary is missing or not made of RFC 2046 characters. */
int multipart_boundary(const char *content_type,
                       char out[MULTIPART_BOUNDARY_MAX + 1]);

/* NULL when boundary is not a valid one. */
struct multipart *multipart_new(const char *boundary);
void multipart_free(struct multipart *m);   /* NULL is fine */

/* Parse the next len bytes.  0, or a negative enum multipart_err (the
 * parser is then finished: feed no more). */
int multipart_feed(struct multipart *m, const char *data, size_t len,
                   const struct multipart_cb *cb, void *arg,
                   char *err, size_t errlen);
/* After the last byte: 0 when the closing boundary was seen, else
 * MULTIPART_ERR_BAD. */
int multipart_finish(struct multipart *m, char *err, size_t errlen);

/* Stream r's multipart/form-data body through the parser.  Answers itself
 * (and returns -1) for a wrong Content-Type (415), a body over max bytes
 * (413) and a malformed body (400); returns MULTIPART_ERR_STOP without
 * answering when a callback stopped, so the caller answers with its
 * reason; 0 when the whole body was parsed. */
int req_multipart_or_reply(struct req *r, long max,
                           const struct multipart_cb *cb, void *arg);

#endif
