/* body_cache.h - rendered answers kept as files and sent by nginx.
 *
 * Some reads cost much to render but little to name: the pipelines
 * listing is a join of a customer's pipelines, jobs and bookmarks, and
 * the versions of those rows (sql/015) say whether it changed.  Such an
 * answer is rendered once per name into <render_cache_dir>/<owner>/<name>
 * and later requests with the same name are answered with
 * X-Accel-Redirect to nginx's internal location BODY_CACHE_URI, which
 * sends the file: the worker pays one small query and a stat.
 *
 * The name is a digest of everything the body is made of (the caller's
 * row versions, the owner, the render's format and this binary's
 * version), so a name always stands for the same bytes and is the
 * answer's strong ETag.  Files are replaced, never rewritten: a new name
 * is a new file, written aside and renamed into place.  A file not used
 * for BODY_CACHE_KEEP_S is removed when its owner's next file is stored. */
#ifndef SLUICE_BODY_CACHE_H
#define SLUICE_BODY_CACHE_H

#include <stddef.h>

#include "http/etag.h"

struct req;

#define BODY_CACHE_URI     "/_sluice_render/"
#define BODY_CACHE_KEEP_S  30

/* The digest a name is made from: SHA-256 through these. */
struct body_digest {
	void *md;                      /* EVP_MD_CTX */
};

struct body_key {
	char dir[17];                  /* 16 hex digits of the owner's digest */
	char name[33];                 /* 32 hex digits of the body's digest */
	char etag[ETAG_SIZE];          /* the name, quoted */
};

/* Start a digest for owner's answer of kind format ("pipelines/1"); add
 * the versions that decide the body; finish into a key.  A key whose
 * digest failed (out of memory) has an empty name, which nothing finds. */
int body_digest_init(struct body_digest *d, const char *format,
                     const char *owner);
void body_digest_ll(struct body_digest *d, long long v);
void body_digest_key(struct body_digest *d, const char *owner,
                     struct body_key *k);

/* Answer from the cache: 304 when If-None-Match names k, else 200 sent
 * by nginx from k's file.  1 answered, 0 not cached (or the cache is off:
 * render and call body_cache_reply), -1 as resp_raw. */
int body_cache_send(struct req *r, const struct body_key *k,
                    const char *content_type);

/* Store body under k (best effort: a failure is logged and the next
 * request renders again), then answer it with k's ETag, or 304. */
int body_cache_reply(struct req *r, const struct body_key *k,
                     const char *content_type, const char *body, size_t len);

#endif
