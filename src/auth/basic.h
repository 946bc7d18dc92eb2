/* basic.h - HTTP Basic credentials: header parsing, PBKDF2 password hashes,
 * and a small per-worker cache of recent successful checks.
 *
 * Stored hash format (one string, self-describing so the iteration count can
 * rise over time without invalidating old hashes):
 *     pbkdf2-sha256$<iterations>$<base64 salt>$<base64 hash>
 * with a 16-byte random salt and a 32-byte derived key. */
#ifndef SLUICE_BASIC_H
#define SLUICE_BASIC_H

#include <stdbool.h>
#include <stddef.h>

#define BASIC_MAX_USER 128
#define BASIC_MAX_PASSWORD 1024
#define BASIC_MIN_ITERATIONS 1000
#define BASIC_MAX_ITERATIONS 10000000

/* PBKDF2-HMAC-SHA256 (RFC 8018) via OpenSSL.  0 or -1. */
int pbkdf2_sha256(const char *pw, size_t pwlen,
                  const unsigned char *salt, size_t saltlen,
                  unsigned iterations, unsigned char *out, size_t outlen);

/* A new stored hash with a fresh random salt; malloc'd, NULL on failure. */
char *basic_password_hash(const char *password, unsigned iterations);
/* 1 when password matches stored, 0 when not, -1 when stored is malformed.
 * Compares in constant time. */
int basic_password_verify(const char *password, const char *stored);

/* Parse "Basic <base64(user:password)>" (scheme case-insensitive).
 * 0 or -1 (malformed, too long, no colon, NUL byte, empty user). */
int basic_header_parse(const char *header, char *user, size_t usercap,
                       char *password, size_t pwcap);

/* A cache that remembers that (user, password) verified, until ttl.
 * Entries are keyed by an HMAC of user and password under a random key,
 * so the cache never holds a password.  basic_cache_new makes one for this
 * process; basic_cache_new_shared one in a shared mapping (with a lock)
 * that processes forked afterwards use together, as serve's workers do. */
struct basic_cache;
struct basic_cache *basic_cache_new(size_t slots);
struct basic_cache *basic_cache_new_shared(size_t slots);
void basic_cache_free(struct basic_cache *c);
/* 1 and *user_id when a fresh entry matches, else 0.  2 (a match too)
 * hands this caller the entry's renewal: it is in the last quarter of its
 * ttl, and nobody was handed it in the last BASIC_RENEW_RETRY_S.  The
 * caller checks the password again, then puts (a new ttl) or drops the
 * entry, so that the requests of a busy user never all find it expired at
 * once (each of them would need a PBKDF2). */
#define BASIC_RENEW_RETRY_S 2
int basic_cache_get(struct basic_cache *c, const char *user,
                    const char *password, long long now, long long *user_id);
void basic_cache_put(struct basic_cache *c, const char *user,
                     const char *password, long long user_id,
                     long long now, int ttl);
/* Forget (user, password): it no longer verifies. */
void basic_cache_drop(struct basic_cache *c, const char *user, const char *password);

#endif
