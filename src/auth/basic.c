/* basic.c - HTTP Basic credentials (RFC 7617) and PBKDF2 password hashes.
 *
 * Secrets pass through here: every buffer that held a password or a
 * derived key is wiped with OPENSSL_cleanse before it is released, and
 * every comparison of secret-derived bytes is constant time. */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "auth/basic.h"
#include "util/base64url.h"
#include "util/shm.h"

#define HASH_PREFIX "pbkdf2-sha256$"
#define HASH_SALT_LEN 16
#define HASH_KEY_LEN 32
#define HASH_MIN_SALT 8
#define HASH_MAX_SALT 64
#define HASH_MAX_ITER_DIGITS 8         /* strlen("10000000") */

/* Largest decoded "user:password", and its base64 length. */
#define HDR_MAX_DECODED (BASIC_MAX_USER + BASIC_MAX_PASSWORD + 1)
#define HDR_MAX_B64 ((HDR_MAX_DECODED + 2) / 3 * 4)

#define CACHE_MAX_SLOTS ((size_t)1 << 20)

int pbkdf2_sha256(const char *pw, size_t pwlen,
                  const unsigned char *salt, size_t saltlen,
                  unsigned iterations, unsigned char *out, size_t outlen)
{
	/* The lower bound for stored hashes is policy (BASIC_MIN_ITERATIONS,
	 * enforced where hashes are made and read); the primitive accepts
	 * any positive count so that it can be checked against RFC vectors. */
	if (iterations < 1 || iterations > BASIC_MAX_ITERATIONS)
		return -1;
	if ((pw == NULL && pwlen > 0) || (salt == NULL && saltlen > 0) ||
	    out == NULL || outlen == 0)
		return -1;
	if (pwlen > INT_MAX || saltlen > INT_MAX || outlen > INT_MAX)
		return -1;
	if (PKCS5_PBKDF2_HMAC(pw != NULL ? pw : "", (int)pwlen,
	    salt != NULL ? salt : (const unsigned char *)"", (int)saltlen,
	    (int)iterations, EVP_sha256(), (int)outlen, out) != 1)
		return -1;
	return 0;
}

char *basic_password_hash(const char *password, unsigned iterations)
{
	unsigned char salt[HASH_SALT_LEN], key[HASH_KEY_LEN];
	char *salt64 = NULL, *key64 = NULL, *out = NULL;
	size_t pwlen, cap;

	if (password == NULL || iterations < BASIC_MIN_ITERATIONS ||
	    iterations > BASIC_MAX_ITERATIONS)
		return NULL;
	/* A longer password could never be presented in a header. */
	if ((pwlen = strlen(password)) > BASIC_MAX_PASSWORD)
		return NULL;
	if (RAND_bytes(salt, sizeof salt) != 1)
		return NULL;
	if (pbkdf2_sha256(password, pwlen, salt, sizeof salt, iterations,
	    key, sizeof key) != 0)
		goto out;
	if ((salt64 = b64_encode(salt, sizeof salt)) == NULL ||
	    (key64 = b64_encode(key, sizeof key)) == NULL)
		goto out;
	cap = sizeof HASH_PREFIX + HASH_MAX_ITER_DIGITS + 2 +
	    strlen(salt64) + strlen(key64);
	if ((out = malloc(cap)) == NULL)
		goto out;
	snprintf(out, cap, HASH_PREFIX "%u$%s$%s", iterations, salt64, key64);
out:
	OPENSSL_cleanse(key, sizeof key);
	if (key64 != NULL)
		OPENSSL_cleanse(key64, strlen(key64));
	free(salt64);
	free(key64);
	return out;
}

/* Strict decimal: digits only, no leading zero, at most maxdigits. */
static int parse_uint(const char *s, size_t n, size_t maxdigits, unsigned *out)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > maxdigits || (s[0] == '0' && n > 1))
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > UINT_MAX)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int basic_password_verify(const char *password, const char *stored)
{
	const char *it, *salt64, *key64, *d;
	unsigned char *salt = NULL, *want = NULL;
	unsigned char got[HASH_KEY_LEN];
	size_t saltlen = 0, keylen = 0;
	unsigned iterations;
	int rc = -1;

	if (password == NULL || stored == NULL)
		return -1;
	if (strncmp(stored, HASH_PREFIX, strlen(HASH_PREFIX)) != 0)
		return -1;
	it = stored + strlen(HASH_PREFIX);
	if ((d = strchr(it, '$')) == NULL ||
	    parse_uint(it, (size_t)(d - it), HASH_MAX_ITER_DIGITS, &iterations) != 0 ||
	    iterations < BASIC_MIN_ITERATIONS || iterations > BASIC_MAX_ITERATIONS)
		return -1;
	salt64 = d + 1;
	if ((d = strchr(salt64, '$')) == NULL)
		return -1;
	key64 = d + 1;
	/* Bound the lengths before decoding; base64 of 32 bytes is 44. */
	if ((size_t)(d - salt64) > (HASH_MAX_SALT + 2) / 3 * 4 ||
	    strlen(key64) != (HASH_KEY_LEN + 2) / 3 * 4)
		return -1;
	if ((salt = b64_decode(salt64, (size_t)(d - salt64), &saltlen)) == NULL ||
	    saltlen < HASH_MIN_SALT || saltlen > HASH_MAX_SALT)
		goto out;
	if ((want = b64_decode(key64, strlen(key64), &keylen)) == NULL ||
	    keylen != HASH_KEY_LEN)
		goto out;
	if (pbkdf2_sha256(password, strlen(password), salt, saltlen, iterations,
	    got, sizeof got) != 0)
		goto out;
	rc = CRYPTO_memcmp(got, want, HASH_KEY_LEN) == 0 ? 1 : 0;
out:
	OPENSSL_cleanse(got, sizeof got);
	if (want != NULL)
		OPENSSL_cleanse(want, keylen);
	free(salt);
	free(want);
	return rc;
}

int basic_header_parse(const char *header, char *user, size_t usercap,
                       char *password, size_t pwcap)
{
	unsigned char *dec = NULL;
	const char *b64, *colon;
	size_t n, declen = 0, ulen, plen, i;
	int rc = -1;

	if (user == NULL || password == NULL || usercap == 0 || pwcap == 0)
		return -1;
	user[0] = password[0] = '\0';
	if (header == NULL || strncasecmp(header, "Basic", 5) != 0 ||
	    header[5] != ' ')
		return -1;
	for (b64 = header + 5; *b64 == ' '; b64++)
		;
	/* Optional whitespace after the field value is not part of it. */
	n = strnlen(b64, HDR_MAX_B64 + 65);
	if (n > HDR_MAX_B64 + 64)
		return -1;
	while (n > 0 && (b64[n - 1] == ' ' || b64[n - 1] == '\t'))
		n--;
	if (n == 0 || n > HDR_MAX_B64)
		return -1;
	if ((dec = b64_decode(b64, n, &declen)) == NULL)
		return -1;
	if (declen > HDR_MAX_DECODED || memchr(dec, '\0', declen) != NULL)
		goto out;
	if ((colon = memchr(dec, ':', declen)) == NULL)
		goto out;
	/* The user-id ends at the first colon; the password keeps the rest,
	 * colons included (RFC 7617 section 2). */
	ulen = (size_t)(colon - (const char *)dec);
	plen = declen - ulen - 1;
	if (ulen == 0 || ulen > BASIC_MAX_USER || ulen >= usercap ||
	    plen > BASIC_MAX_PASSWORD || plen >= pwcap)
		goto out;
	/* RFC 7617: no control characters in the user-id.  The name reaches
	 * logs and queries; the password only reaches PBKDF2. */
	for (i = 0; i < ulen; i++)
		if (dec[i] < 0x20 || dec[i] == 0x7f)
			goto out;
	memcpy(user, dec, ulen);
	user[ulen] = '\0';
	memcpy(password, colon + 1, plen);
	password[plen] = '\0';
	rc = 0;
out:
	OPENSSL_cleanse(dec, declen + 1);
	free(dec);
	if (rc != 0) {
		user[0] = '\0';
		OPENSSL_cleanse(password, pwcap);
		password[0] = '\0';
	}
	return rc;
}

/* --- cache -------------------------------------------------------------- */

struct basic_cache_entry {
	unsigned char digest[32];
	long long user_id;
	long long expires;
	long long renew_at;               /* from then on, basic_cache_get hands out */
	long long renewal_retry;          /* ... a renewal, one per BASIC_RENEW_RETRY_S */
	bool used;
};

struct basic_cache {
	unsigned char key[32];
	size_t nslots;
	bool shared;                      /* a MAP_SHARED mapping, locked */
	pthread_mutex_t lock;             /* when shared */
	struct basic_cache_entry slot[];
};

struct basic_cache *basic_cache_new(size_t slots)
{
	struct basic_cache *c;

	if (slots == 0 || slots > CACHE_MAX_SLOTS)
		return NULL;
	if ((c = calloc(1, sizeof *c + slots * sizeof c->slot[0])) == NULL)
		return NULL;
	if (RAND_bytes(c->key, sizeof c->key) != 1) {
		free(c);
		return NULL;
	}
	c->nslots = slots;
	return c;
}

struct basic_cache *basic_cache_new_shared(size_t slots)
{
	struct basic_cache *c;
	size_t size;

	if (slots == 0 || slots > CACHE_MAX_SLOTS)
		return NULL;
	size = sizeof *c + slots * sizeof c->slot[0];
	if ((c = shm_map(size)) == NULL)
		return NULL;
	c->nslots = slots;
	c->shared = true;
	if (RAND_bytes(c->key, sizeof c->key) != 1 || shm_mutex_init(&c->lock) != 0) {
		munmap(c, size);
		return NULL;
	}
	return c;
}

void basic_cache_free(struct basic_cache *c)
{
	size_t size;

	if (c == NULL)
		return;
	size = sizeof *c + c->nslots * sizeof c->slot[0];
	if (c->shared) {
		OPENSSL_cleanse(c, size);
		munmap(c, size);
		return;
	}
	OPENSSL_cleanse(c, size);
	free(c);
}

static void cache_lock(struct basic_cache *c)
{
	if (c->shared)
		shm_mutex_lock(&c->lock);
}

static void cache_unlock(struct basic_cache *c)
{
	if (c->shared)
		shm_mutex_unlock(&c->lock);
}

/* HMAC-SHA256(cache key, user || 0x00 || password) into digest, and the
 * slot it maps to.  The key is secret and random, so neither the digest
 * nor the slot can be predicted or steered from outside.  0 or -1. */
static int cache_key(const struct basic_cache *c, const char *user,
                     const char *password, unsigned char *digest,
                     size_t *slot)
{
	unsigned char buf[BASIC_MAX_USER + 1 + BASIC_MAX_PASSWORD];
	unsigned int dlen = 0;
	uint64_t h = 0;
	size_t ulen, plen, i;
	int rc = -1;

	if (c == NULL || user == NULL || password == NULL)
		return -1;
	if ((ulen = strnlen(user, BASIC_MAX_USER + 1)) > BASIC_MAX_USER ||
	    (plen = strnlen(password, BASIC_MAX_PASSWORD + 1)) > BASIC_MAX_PASSWORD)
		return -1;
	memcpy(buf, user, ulen);
	buf[ulen] = 0x00;
	memcpy(buf + ulen + 1, password, plen);
	if (HMAC(EVP_sha256(), c->key, (int)sizeof c->key, buf, ulen + 1 + plen,
	    digest, &dlen) != NULL && dlen == 32) {
		for (i = 0; i < 8; i++)
			h = h << 8 | digest[i];
		*slot = (size_t)(h % c->nslots);
		rc = 0;
	}
	OPENSSL_cleanse(buf, ulen + 1 + plen);
	return rc;
}

int basic_cache_get(struct basic_cache *c, const char *user,
                    const char *password, long long now, long long *user_id)
{
	struct basic_cache_entry *e;
	unsigned char digest[32];
	size_t slot;
	int hit = 0;

	if (cache_key(c, user, password, digest, &slot) != 0)
		return 0;
	cache_lock(c);
	e = &c->slot[slot];
	if (e->used && CRYPTO_memcmp(e->digest, digest, sizeof digest) == 0) {
		if (now < e->expires) {
			if (user_id != NULL)
				*user_id = e->user_id;
			hit = 1;
			if (now >= e->renew_at && now >= e->renewal_retry) {
				e->renewal_retry = now + BASIC_RENEW_RETRY_S;
				hit = 2;
			}
		} else
			memset(e, 0, sizeof *e);
	}
	cache_unlock(c);
	OPENSSL_cleanse(digest, sizeof digest);
	return hit;
}

void basic_cache_put(struct basic_cache *c, const char *user,
                     const char *password, long long user_id,
                     long long now, int ttl)
{
	struct basic_cache_entry *e;
	unsigned char digest[32];
	size_t slot;

	if (ttl <= 0)
		return;
	if (cache_key(c, user, password, digest, &slot) != 0)
		return;
	cache_lock(c);
	e = &c->slot[slot];
	memcpy(e->digest, digest, sizeof digest);
	e->user_id = user_id;
	if (__builtin_add_overflow(now, (long long)ttl, &e->expires))
		e->expires = LLONG_MAX;
	/* The last quarter of its life (at least its last second). */
	e->renew_at = e->expires - (ttl >= 4 ? ttl / 4 : 1);
	e->renewal_retry = 0;
	e->used = true;
	cache_unlock(c);
	OPENSSL_cleanse(digest, sizeof digest);
}

void basic_cache_drop(struct basic_cache *c, const char *user, const char *password)
{
	struct basic_cache_entry *e;
	unsigned char digest[32];
	size_t slot;

	if (cache_key(c, user, password, digest, &slot) != 0)
		return;
	cache_lock(c);
	e = &c->slot[slot];
	if (e->used && CRYPTO_memcmp(e->digest, digest, sizeof digest) == 0)
		memset(e, 0, sizeof *e);
	cache_unlock(c);
	OPENSSL_cleanse(digest, sizeof digest);
}
