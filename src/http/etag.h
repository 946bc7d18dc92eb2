/* etag.h - strong entity tags over an answer's bytes, and If-None-Match.
 *
 * The tag is a digest of the exact body, so it changes whenever a byte of
 * the answer does and no write path has to remember to bump anything: a
 * tag can never outlive the body it names. */
#ifndef SLUICE_ETAG_H
#define SLUICE_ETAG_H

#include <stdbool.h>
#include <stddef.h>

struct req;

/* '"' + 32 hex digits (the first 128 bits of SHA-256) + '"' + NUL */
#define ETAG_SIZE 35

/* The strong tag of body[0..len) into out, quoted as it goes on the wire. */
void etag_of(const char *body, size_t len, char out[ETAG_SIZE]);

/* Whether an If-None-Match value matches the strong tag etag (RFC 9110
 * 13.1.2): "*", or a comma-separated list of tags one of which equals it
 * by the weak comparison (a W/ prefix is ignored).  A malformed list
 * matches nothing, so the caller gets the full answer. */
bool etag_none_match(const char *if_none_match, const char *etag);

/* Answer 200 with body and its ETag, or 304 with the ETag and no body when
 * the request's If-None-Match matches.  0, or -1 as resp_raw. */
int resp_raw_etag(struct req *r, const char *content_type, const char *body,
                  size_t len);

#endif
