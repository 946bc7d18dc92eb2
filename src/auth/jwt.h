/* jwt.h - JSON Web Tokens, HS256 only (RFC 7519, RFC 7515).
 *
 * Any other alg, "none" included, is refused.  The signature is compared in
 * constant time before the payload is parsed.  exp is required; nbf and iat
 * are honoured when present, with a leeway for clock skew. */
#ifndef SLUICE_JWT_H
#define SLUICE_JWT_H

#include <stdbool.h>
#include <stddef.h>

#define JWT_MAX_TOKEN 8192
#define JWT_MAX_PERMISSIONS 64
#define JWT_MAX_FIELD 256

struct jwt_claims {
	char sub[JWT_MAX_FIELD];
	char customer_id[JWT_MAX_FIELD];
	char customer_name[JWT_MAX_FIELD];
	char permissions[JWT_MAX_PERMISSIONS][JWT_MAX_FIELD];
	size_t npermissions;
	long long iat, nbf, exp;          /* 0 when absent (exp never is) */
};

enum jwt_err {
	JWT_OK = 0,
	JWT_ERR_MALFORMED = -1,           /* not three base64url parts of JSON */
	JWT_ERR_TOO_LONG = -2,
	JWT_ERR_ALG = -3,                 /* alg missing or not HS256 */
	JWT_ERR_SIGNATURE = -4,
	JWT_ERR_EXPIRED = -5,
	JWT_ERR_NOT_YET_VALID = -6,       /* nbf (or iat) in the future */
	JWT_ERR_CLAIMS = -7,              /* exp missing, or a claim of the wrong type/size */
};

/* Verify token[0..len) with key and fill *out.  now is the current Unix
 * time; leeway in seconds.  *out is zeroed on failure. */
int jwt_verify(const char *token, size_t len,
               const unsigned char *key, size_t keylen,
               long long now, long long leeway, struct jwt_claims *out);

/* Sign claims (iat/nbf written when non-zero) as an HS256 token.
 * Returns a malloc'd string or NULL. */
char *jwt_sign(const struct jwt_claims *c,
               const unsigned char *key, size_t keylen);

bool jwt_has_permission(const struct jwt_claims *c, const char *perm);
const char *jwt_strerror(int err);     /* a short reason safe to show a client */

#endif
