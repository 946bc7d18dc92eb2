/* jwt.c - HS256 JSON Web Tokens (RFC 7519, RFC 7515 compact form).
 *
 * Order of work in jwt_verify, cheapest and least trusting first: length
 * cap, split, header (alg must be HS256), signature check in constant time,
 * and only then the payload is parsed.  An attacker without the key never
 * reaches the claims parser. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/jwt.h"
#include "util/base64url.h"

#define JWT_SIG_LEN 32                 /* HMAC-SHA256 */
#define JWT_JSON_DEPTH 8               /* header and claims are flat */

/* NumericDate claims outside [0, year 9999] are refused, which also keeps
 * every sum below far from overflow. */
#define JWT_MAX_TIME 253402300799LL
#define JWT_MAX_LEEWAY 31536000LL      /* a year: anything more is a bug */

/* Parse buf[0..len) as exactly one JSON object (trailing whitespace
 * allowed).  Returns a new reference or NULL. */
static json_object *parse_object(const unsigned char *buf, size_t len)
{
	struct json_tokener *tok;
	json_object *obj = NULL;
	size_t end;

	if (len == 0 || len > JWT_MAX_TOKEN || memchr(buf, '\0', len) != NULL)
		return NULL;
	if ((tok = json_tokener_new_ex(JWT_JSON_DEPTH)) == NULL)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, (const char *)buf, (int)len);
	if (obj == NULL || json_tokener_get_error(tok) != json_tokener_success)
		goto bad;
	for (end = json_tokener_get_parse_end(tok); end < len; end++)
		if (strchr(" \t\r\n", buf[end]) == NULL)
			goto bad;
	if (!json_object_is_type(obj, json_type_object))
		goto bad;
	json_tokener_free(tok);
	return obj;
bad:
	json_object_put(obj);
	json_tokener_free(tok);
	return NULL;
}

/* HMAC-SHA256 of in[0..n) into mac[JWT_SIG_LEN].  0 or -1. */
static int hs256(const unsigned char *key, size_t keylen,
                 const void *in, size_t n, unsigned char *mac)
{
	unsigned int maclen = 0;

	/* An empty key would make every token forgeable. */
	if (key == NULL || keylen == 0 || keylen > INT32_MAX)
		return -1;
	if (HMAC(EVP_sha256(), key, (int)keylen, in, n, mac, &maclen) == NULL ||
	    maclen != JWT_SIG_LEN)
		return -1;
	return 0;
}

/* a + b, saturated: now and leeway come from the caller. */
static long long sat_add(long long a, long long b)
{
	long long r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? LLONG_MAX : LLONG_MIN;
	return r;
}

static int check_header(json_object *hdr)
{
	json_object *v;

	if (!json_object_object_get_ex(hdr, "alg", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) != 5 ||
	    strcmp(json_object_get_string(v), "HS256") != 0)
		return JWT_ERR_ALG;
	if (json_object_object_get_ex(hdr, "typ", &v) &&
	    (!json_object_is_type(v, json_type_string) ||
	     json_object_get_string_len(v) != 3 ||
	     strcasecmp(json_object_get_string(v), "JWT") != 0))
		return JWT_ERR_MALFORMED;
	/* RFC 7515 4.1.11: extensions we do not understand must be refused,
	 * and we understand none. */
	if (json_object_object_get_ex(hdr, "crit", NULL))
		return JWT_ERR_MALFORMED;
	return JWT_OK;
}

/* A NumericDate claim: absent leaves *out at 0; present must be an
 * integer in range. */
static int get_time(json_object *claims, const char *name, bool required,
                    long long *out)
{
	json_object *v;
	int64_t t;

	*out = 0;
	if (!json_object_object_get_ex(claims, name, &v))
		return required ? JWT_ERR_CLAIMS : JWT_OK;
	if (!json_object_is_type(v, json_type_int))
		return JWT_ERR_CLAIMS;
	t = json_object_get_int64(v);
	if (t < 0 || t > JWT_MAX_TIME)
		return JWT_ERR_CLAIMS;
	*out = t;
	return JWT_OK;
}

/* Copy a JSON string into dst[JWT_MAX_FIELD]; refuses NUL bytes and
 * anything that would not fit. */
static int copy_string(json_object *v, char *dst)
{
	int len;

	if (!json_object_is_type(v, json_type_string))
		return JWT_ERR_CLAIMS;
	len = json_object_get_string_len(v);
	if (len < 0 || len > JWT_MAX_FIELD - 1)
		return JWT_ERR_CLAIMS;
	if (memchr(json_object_get_string(v), '\0', (size_t)len) != NULL)
		return JWT_ERR_CLAIMS;
	memcpy(dst, json_object_get_string(v), (size_t)len);
	dst[len] = '\0';
	return JWT_OK;
}

static int get_string(json_object *claims, const char *name, char *dst)
{
	json_object *v;

	if (!json_object_object_get_ex(claims, name, &v))
		return JWT_OK;
	return copy_string(v, dst);
}

static int get_claims(json_object *claims, struct jwt_claims *out)
{
	json_object *v;
	size_t i, n;
	int rc;

	if ((rc = get_time(claims, "exp", true, &out->exp)) != JWT_OK ||
	    (rc = get_time(claims, "nbf", false, &out->nbf)) != JWT_OK ||
	    (rc = get_time(claims, "iat", false, &out->iat)) != JWT_OK)
		return rc;
	if ((rc = get_string(claims, "sub", out->sub)) != JWT_OK ||
	    (rc = get_string(claims, "customer_name", out->customer_name)) != JWT_OK)
		return rc;

	/* customer_id: a string, or an integer kept as its decimal text. */
	if (json_object_object_get_ex(claims, "customer_id", &v)) {
		if (json_object_is_type(v, json_type_int)) {
			const char *s = json_object_to_json_string_ext(v,
			    JSON_C_TO_STRING_PLAIN);

			if (s == NULL || strlen(s) > JWT_MAX_FIELD - 1)
				return JWT_ERR_CLAIMS;
			strcpy(out->customer_id, s);
		} else if ((rc = copy_string(v, out->customer_id)) != JWT_OK)
			return rc;
	}

	if (json_object_object_get_ex(claims, "permissions", &v)) {
		if (!json_object_is_type(v, json_type_array))
			return JWT_ERR_CLAIMS;
		n = json_object_array_length(v);
		if (n > JWT_MAX_PERMISSIONS)
			return JWT_ERR_CLAIMS;
		for (i = 0; i < n; i++) {
			rc = copy_string(json_object_array_get_idx(v, i),
			    out->permissions[i]);
			if (rc != JWT_OK)
				return rc;
		}
		out->npermissions = n;
	}
	return JWT_OK;
}

int jwt_verify(const char *token, size_t len,
               const unsigned char *key, size_t keylen,
               long long now, long long leeway, struct jwt_claims *out)
{
	const char *dot1, *dot2, *end;
	unsigned char *hbuf = NULL, *pbuf = NULL, *sig = NULL;
	unsigned char mac[JWT_SIG_LEN];
	json_object *hdr = NULL, *claims = NULL;
	size_t hlen, plen, slen;
	int rc = JWT_ERR_MALFORMED;

	memset(out, 0, sizeof *out);
	if (token == NULL)
		return JWT_ERR_MALFORMED;
	if (len > JWT_MAX_TOKEN)
		return JWT_ERR_TOO_LONG;
	if (leeway < 0)
		leeway = 0;
	if (leeway > JWT_MAX_LEEWAY)
		leeway = JWT_MAX_LEEWAY;

	/* Exactly three parts; header and payload never empty.  An empty
	 * signature is judged after the header, so that "alg":"none" with
	 * no signature is reported as the algorithm problem it is. */
	end = token + len;
	if ((dot1 = memchr(token, '.', len)) == NULL ||
	    (dot2 = memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1))) == NULL ||
	    memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)) != NULL)
		goto out;
	if (dot1 == token || dot2 == dot1 + 1)
		goto out;

	if ((hbuf = b64url_decode(token, (size_t)(dot1 - token), &hlen)) == NULL ||
	    (hdr = parse_object(hbuf, hlen)) == NULL)
		goto out;
	if ((rc = check_header(hdr)) != JWT_OK)
		goto out;

	rc = JWT_ERR_MALFORMED;
	if (dot2 + 1 == end ||
	    (sig = b64url_decode(dot2 + 1, (size_t)(end - dot2 - 1), &slen)) == NULL)
		goto out;
	rc = JWT_ERR_SIGNATURE;
	if (slen != JWT_SIG_LEN ||
	    hs256(key, keylen, token, (size_t)(dot2 - token), mac) != 0 ||
	    CRYPTO_memcmp(mac, sig, JWT_SIG_LEN) != 0)
		goto out;

	/* Authentic from here on; still parsed as untrusted input. */
	rc = JWT_ERR_MALFORMED;
	if ((pbuf = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &plen)) == NULL ||
	    (claims = parse_object(pbuf, plen)) == NULL)
		goto out;
	if ((rc = get_claims(claims, out)) != JWT_OK)
		goto out;

	if (now > sat_add(out->exp, leeway))
		rc = JWT_ERR_EXPIRED;
	else if (out->nbf != 0 && sat_add(now, leeway) < out->nbf)
		rc = JWT_ERR_NOT_YET_VALID;
	else if (out->iat != 0 && out->iat > sat_add(now, leeway))
		rc = JWT_ERR_NOT_YET_VALID;
	else
		rc = JWT_OK;
out:
	json_object_put(hdr);
	json_object_put(claims);
	free(hbuf);
	free(pbuf);
	free(sig);
	OPENSSL_cleanse(mac, sizeof mac);
	if (rc != JWT_OK)
		memset(out, 0, sizeof *out);
	return rc;
}

/* Adds name: s when s is a non-empty, properly terminated field. */
static int add_field(json_object *obj, const char *name, const char *s)
{
	size_t n = strnlen(s, JWT_MAX_FIELD);

	if (n == JWT_MAX_FIELD)
		return -1;
	if (n == 0)
		return 0;
	return json_object_object_add(obj, name, json_object_new_string_len(s,
	    (int)n));
}

static int add_time(json_object *obj, const char *name, long long t)
{
	return json_object_object_add(obj, name, json_object_new_int64(t));
}

static char *encode_json(json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	return s == NULL ? NULL : b64url_encode(s, strlen(s));
}

char *jwt_sign(const struct jwt_claims *c,
               const unsigned char *key, size_t keylen)
{
	json_object *hdr = NULL, *claims = NULL, *perms = NULL;
	char *h64 = NULL, *p64 = NULL, *s64 = NULL, *token = NULL;
	unsigned char mac[JWT_SIG_LEN];
	size_t i, hl, pl, sl;

	if (c == NULL || c->npermissions > JWT_MAX_PERMISSIONS)
		return NULL;
	if ((hdr = json_object_new_object()) == NULL ||
	    (claims = json_object_new_object()) == NULL ||
	    (perms = json_object_new_array()) == NULL)
		goto out;
	if (json_object_object_add(hdr, "alg", json_object_new_string("HS256")) ||
	    json_object_object_add(hdr, "typ", json_object_new_string("JWT")))
		goto out;

	if (add_field(claims, "sub", c->sub) != 0 ||
	    add_field(claims, "customer_id", c->customer_id) != 0 ||
	    add_field(claims, "customer_name", c->customer_name) != 0)
		goto out;
	for (i = 0; i < c->npermissions; i++) {
		size_t n = strnlen(c->permissions[i], JWT_MAX_FIELD);

		if (n == JWT_MAX_FIELD || json_object_array_add(perms,
		    json_object_new_string_len(c->permissions[i], (int)n)) != 0)
			goto out;
	}
	if (json_object_object_add(claims, "permissions", perms) != 0)
		goto out;
	perms = NULL;                  /* owned by claims now */
	if ((c->iat != 0 && add_time(claims, "iat", c->iat) != 0) ||
	    (c->nbf != 0 && add_time(claims, "nbf", c->nbf) != 0) ||
	    add_time(claims, "exp", c->exp) != 0)
		goto out;

	if ((h64 = encode_json(hdr)) == NULL || (p64 = encode_json(claims)) == NULL)
		goto out;
	hl = strlen(h64);
	pl = strlen(p64);
	/* Never hand out a token that jwt_verify would refuse as too long;
	 * 43 is the unpadded length of a 32-byte signature. */
	if (hl + 1 + pl + 1 + 43 > JWT_MAX_TOKEN)
		goto out;
	if ((token = malloc(JWT_MAX_TOKEN + 1)) == NULL)
		goto out;
	memcpy(token, h64, hl);
	token[hl] = '.';
	memcpy(token + hl + 1, p64, pl);
	if (hs256(key, keylen, token, hl + 1 + pl, mac) != 0 ||
	    (s64 = b64url_encode(mac, sizeof mac)) == NULL) {
		free(token);
		token = NULL;
		goto out;
	}
	sl = strlen(s64);
	token[hl + 1 + pl] = '.';
	memcpy(token + hl + 1 + pl + 1, s64, sl + 1);
out:
	json_object_put(hdr);
	json_object_put(claims);
	json_object_put(perms);
	free(h64);
	free(p64);
	free(s64);
	OPENSSL_cleanse(mac, sizeof mac);
	return token;
}

bool jwt_has_permission(const struct jwt_claims *c, const char *perm)
{
	size_t i;

	if (c == NULL || perm == NULL || perm[0] == '\0')
		return false;
	for (i = 0; i < c->npermissions && i < JWT_MAX_PERMISSIONS; i++)
		if (strcmp(c->permissions[i], perm) == 0)
			return true;
	return false;
}

const char *jwt_strerror(int err)
{
	switch (err) {
	case JWT_OK:
		return "ok";
	case JWT_ERR_MALFORMED:
		return "malformed token";
	case JWT_ERR_TOO_LONG:
		return "token too long";
	case JWT_ERR_ALG:
		return "unsupported algorithm";
	case JWT_ERR_SIGNATURE:
		return "bad signature";
	case JWT_ERR_EXPIRED:
		return "token expired";
	case JWT_ERR_NOT_YET_VALID:
		return "token not yet valid";
	case JWT_ERR_CLAIMS:
		return "invalid claims";
	}
	return "invalid token";
}
