/* test_jwt.c - HS256 tokens: the RFC 7515 A.1 example, refused algorithms,
 * tampering, claim types, time windows, and every size limit at max and
 * max + 1. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "suites.h"
#include "auth/jwt.h"
#include "util/base64url.h"

#define CHECK_CASE(cond, name) do {                                        \
	char m_[256];                                                       \
	snprintf(m_, sizeof m_, "%s [case %s]", #cond, (name));            \
	CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE, __LINE__, m_,  \
	    __FILE__, "", CU_FALSE);                                        \
} while (0)

/* RFC 7515 appendix A.1: the JWK "k" and the resulting token. */
static const char rfc_k[] =
    "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUu"
    "TwjAzZr1Z9CAow";
static const char rfc_token[] =
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
    ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxl"
    "LmNvbS9pc19yb290Ijp0cnVlfQ"
    ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
#define RFC_EXP 1300819380LL

/* Our own tests use this key and clock. */
static const unsigned char key[] = "0123456789abcdef0123456789abcdef";
#define KEYLEN (sizeof key - 1)
#define NOW 1700000000LL
#define EXP "1700003600"              /* NOW + 3600 */
#define HS256 "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

static struct jwt_claims claims;       /* too big for the stack of a test */

static unsigned char *rfc_key(size_t *len)
{
	unsigned char *k = b64url_decode(rfc_k, strlen(rfc_k), len);

	CU_ASSERT_FATAL(k != NULL);
	CU_ASSERT_EQUAL(*len, 64);
	return k;
}

/* "b64(hdr).b64(payload)." followed by the HS256 signature under k, or by
 * sig verbatim when sig is not NULL. */
static char *make_token(const char *hdr, const char *payload,
                        const unsigned char *k, size_t klen, const char *sig)
{
	char *h = b64url_encode(hdr, strlen(hdr));
	char *p = b64url_encode(payload, strlen(payload));
	char *s = NULL, *t;
	size_t cap;

	CU_ASSERT_FATAL(h != NULL && p != NULL);
	cap = strlen(h) + strlen(p) + 128 + (sig != NULL ? strlen(sig) : 0);
	t = malloc(cap);
	CU_ASSERT_FATAL(t != NULL);
	snprintf(t, cap, "%s.%s", h, p);
	if (sig == NULL) {
		unsigned char mac[32];
		unsigned maclen = 0;

		CU_ASSERT_FATAL(HMAC(EVP_sha256(), k, (int)klen,
		    (const unsigned char *)t, strlen(t),
		    mac, &maclen) != NULL && maclen == 32);
		s = b64url_encode(mac, maclen);
		CU_ASSERT_FATAL(s != NULL);
		sig = s;
	}
	strcat(t, ".");
	strcat(t, sig);
	free(h);
	free(p);
	free(s);
	return t;
}

static int verify_at(const char *t, long long now, long long leeway)
{
	return jwt_verify(t, strlen(t), key, KEYLEN, now, leeway, &claims);
}

/* Sign payload with our key and verify at NOW with no leeway. */
static int verify_payload(const char *payload)
{
	char *t = make_token(HS256, payload, key, KEYLEN, NULL);
	int rc = verify_at(t, NOW, 0);

	free(t);
	return rc;
}

static bool claims_zeroed(void)
{
	static const struct jwt_claims zero;

	return memcmp(&claims, &zero, sizeof zero) == 0;
}

static void test_rfc7515_valid(void)
{
	size_t klen;
	unsigned char *k = rfc_key(&klen);
	int rc;

	rc = jwt_verify(rfc_token, strlen(rfc_token), k, klen, 1300819370, 0,
	    &claims);
	CU_ASSERT_EQUAL(rc, JWT_OK);
	CU_ASSERT_EQUAL(claims.exp, RFC_EXP);
	CU_ASSERT_EQUAL(claims.iat, 0);
	CU_ASSERT_EQUAL(claims.nbf, 0);
	CU_ASSERT_STRING_EQUAL(claims.sub, "");
	CU_ASSERT_EQUAL(claims.npermissions, 0);
	/* exactly at exp is still valid */
	rc = jwt_verify(rfc_token, strlen(rfc_token), k, klen, RFC_EXP, 0,
	    &claims);
	CU_ASSERT_EQUAL(rc, JWT_OK);
	free(k);
}

static void test_rfc7515_expired(void)
{
	size_t klen;
	unsigned char *k = rfc_key(&klen);

	memset(&claims, 'x', sizeof claims);
	CU_ASSERT_EQUAL(jwt_verify(rfc_token, strlen(rfc_token), k, klen,
	    RFC_EXP + 1, 0, &claims), JWT_ERR_EXPIRED);
	CU_ASSERT(claims_zeroed());
	CU_ASSERT_EQUAL(jwt_verify(rfc_token, strlen(rfc_token), k, klen,
	    1700000000, 60, &claims), JWT_ERR_EXPIRED);
	free(k);
}

static void test_rfc7515_flipped_signature(void)
{
	static const struct {
		size_t from_end;       /* position counted from the end */
		char to;
		int want;
	} flips[] = {
		{ 43, 'e', JWT_ERR_SIGNATURE },     /* 'd' -> 'e' */
		{ 20, 'A', JWT_ERR_SIGNATURE },
		{ 1,  'o', JWT_ERR_SIGNATURE },     /* 'k' -> 'o': other bits */
		/* 'k' -> 'l' only sets a bit past the 256th: a second spelling
		 * of the same bytes, refused as non-canonical base64url. */
		{ 1,  'l', JWT_ERR_MALFORMED },
		{ 43, '+', JWT_ERR_MALFORMED },     /* not base64url */
	};
	size_t klen, n = strlen(rfc_token);
	unsigned char *k = rfc_key(&klen);
	char *t = strdup(rfc_token);

	CU_ASSERT_FATAL(t != NULL);
	for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
		char name[32];

		memcpy(t, rfc_token, n);
		t[n - flips[i].from_end] = flips[i].to;
		snprintf(name, sizeof name, "flip %zu", i);
		CHECK_CASE(jwt_verify(t, n, k, klen, 1300819370, 0, &claims) ==
		    flips[i].want, name);
		CHECK_CASE(claims_zeroed(), name);
	}
	/* the original still verifies with the key, not with another */
	CU_ASSERT_EQUAL(jwt_verify(rfc_token, n, k, klen, 1300819370, 0,
	    &claims), JWT_OK);
	CU_ASSERT_EQUAL(jwt_verify(rfc_token, n, key, KEYLEN, 1300819370, 0,
	    &claims), JWT_ERR_SIGNATURE);
	free(t);
	free(k);
}

static void fill_claims(struct jwt_claims *c)
{
	memset(c, 0, sizeof *c);
	strcpy(c->sub, "ann@example.com");
	strcpy(c->customer_id, "3f9c2a10-5b7e-4d21-9a0c-12ab34cd56ef");
	strcpy(c->customer_name, "demo/\"quoted\" \xc3\xa9");
	strcpy(c->permissions[0], "PLATFORM.READ");
	strcpy(c->permissions[1], "PLATFORM.WRITE");
	c->npermissions = 2;
	c->iat = NOW;
	c->exp = NOW + 3600;
}

static void test_sign_roundtrip(void)
{
	static struct jwt_claims in;
	char *t;

	fill_claims(&in);
	t = jwt_sign(&in, key, KEYLEN);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_OK);
	CU_ASSERT_STRING_EQUAL(claims.sub, in.sub);
	CU_ASSERT_STRING_EQUAL(claims.customer_id, in.customer_id);
	CU_ASSERT_STRING_EQUAL(claims.customer_name, in.customer_name);
	CU_ASSERT_EQUAL(claims.npermissions, 2);
	CU_ASSERT_STRING_EQUAL(claims.permissions[0], "PLATFORM.READ");
	CU_ASSERT_STRING_EQUAL(claims.permissions[1], "PLATFORM.WRITE");
	CU_ASSERT_EQUAL(claims.iat, NOW);
	CU_ASSERT_EQUAL(claims.nbf, 0);
	CU_ASSERT_EQUAL(claims.exp, NOW + 3600);
	/* the header is the fixed one */
	CU_ASSERT(strncmp(t, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.", 37) == 0);
	free(t);

	/* an empty permission list is still written, as [] */
	in.npermissions = 0;
	in.sub[0] = '\0';
	in.nbf = NOW - 10;
	t = jwt_sign(&in, key, KEYLEN);
	CU_ASSERT_FATAL(t != NULL);
	{
		char *dot1 = strchr(t, '.'), *dot2 = strrchr(t, '.');
		unsigned char *p = b64url_decode(dot1 + 1,
		    (size_t)(dot2 - dot1 - 1), NULL);

		CU_ASSERT_FATAL(p != NULL);
		CU_ASSERT(strstr((char *)p, "\"permissions\":[]") != NULL);
		CU_ASSERT(strstr((char *)p, "\"sub\"") == NULL);
		CU_ASSERT(strstr((char *)p, "\"nbf\":1699999990") != NULL);
		free(p);
	}
	CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_OK);
	CU_ASSERT_EQUAL(claims.npermissions, 0);
	CU_ASSERT_EQUAL(claims.nbf, NOW - 10);
	free(t);

	/* no key, no token */
	CU_ASSERT(jwt_sign(&in, key, 0) == NULL);
	CU_ASSERT(jwt_sign(NULL, key, KEYLEN) == NULL);
	in.npermissions = JWT_MAX_PERMISSIONS + 1;
	CU_ASSERT(jwt_sign(&in, key, KEYLEN) == NULL);
}

/* Headers other than HS256: the token is otherwise well signed. */
static void test_alg_refused(void)
{
	static const char *const hdrs[] = {
		"{\"alg\":\"none\"}",
		"{\"alg\":\"none\",\"typ\":\"JWT\"}",
		"{\"alg\":\"HS512\",\"typ\":\"JWT\"}",
		"{\"alg\":\"RS256\"}",
		"{\"alg\":\"hs256\"}",
		"{\"alg\":\"HS256 \"}",
		"{\"alg\":\"HS2560\"}",
		"{\"alg\":\"HS256\\u0000\"}",
		"{\"alg\":null}",
		"{\"alg\":[\"HS256\"]}",
		"{\"alg\":256}",
		"{\"typ\":\"JWT\"}",
		"{}",
		NULL,
	};

	for (const char *const *h = hdrs; *h != NULL; h++) {
		char *t = make_token(*h, "{\"exp\":" EXP "}", key, KEYLEN, NULL);

		memset(&claims, 'x', sizeof claims);
		CHECK_CASE(verify_at(t, NOW, 0) == JWT_ERR_ALG, *h);
		CHECK_CASE(claims_zeroed(), *h);
		free(t);
	}
}

/* The classic downgrade: "alg":"none" and no signature at all. */
static void test_alg_none(void)
{
	static const char *const sigs[] = { "", "AAAA", "c2lnbmF0dXJl", NULL };

	for (const char *const *s = sigs; *s != NULL; s++) {
		char *t = make_token("{\"alg\":\"none\"}",
		    "{\"exp\":" EXP ",\"permissions\":[\"PLATFORM.WRITE\"]}",
		    NULL, 0, *s);

		CHECK_CASE(verify_at(t, NOW, 0) == JWT_ERR_ALG, *s);
		CHECK_CASE(claims_zeroed(), *s);
		free(t);
	}
}

static void test_header_malformed(void)
{
	static const struct {
		const char *hdr;
		int want;
	} cases[] = {
		{ "{\"alg\":\"HS256\",\"typ\":\"jwt\"}", JWT_OK },
		{ "{\"alg\":\"HS256\"}", JWT_OK },
		{ "{\"alg\":\"HS256\",\"kid\":\"k1\"}", JWT_OK },
		{ " {\"alg\":\"HS256\"}\r\n", JWT_OK },
		{ "{\"alg\":\"HS256\",\"typ\":\"JOSE\"}", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\",\"typ\":\"JWTX\"}", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\",\"typ\":\"JWS\"}", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\",\"typ\":\"jWt\"}", JWT_OK },
		{ "{\"alg\":\"HS256\",\"typ\":1}", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\",\"crit\":[\"exp\"]}", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\"}x", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\"}{}", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\"", JWT_ERR_MALFORMED },
		{ "{'alg':'HS256'}", JWT_ERR_MALFORMED },
		{ "[\"HS256\"]", JWT_ERR_MALFORMED },
		{ "\"HS256\"", JWT_ERR_MALFORMED },
		{ "HS256", JWT_ERR_MALFORMED },
		{ "{\"alg\":\"HS256\",\"x\":[[[[[[[[[[1]]]]]]]]]]}",
		  JWT_ERR_MALFORMED },             /* deeper than 8 */
		{ "{\"alg\":\"HS256\",\"x\":\"\xff\"}", JWT_ERR_MALFORMED },
		{ NULL, 0 },
	};

	for (size_t i = 0; cases[i].hdr != NULL; i++) {
		char *t = make_token(cases[i].hdr, "{\"exp\":" EXP "}", key,
		    KEYLEN, NULL);

		CHECK_CASE(verify_at(t, NOW, 0) == cases[i].want, cases[i].hdr);
		free(t);
	}
}

/* A payload swapped after signing: the old signature must not carry it. */
static void test_tampered_payload(void)
{
	static struct jwt_claims in;
	char *t, *forged, *dot1, *dot2, *p;
	const char *evil = "{\"customer_id\":\"someone-else\","
	    "\"permissions\":[\"PLATFORM.READ\",\"PLATFORM.WRITE\"],"
	    "\"exp\":" EXP "}";
	size_t cap;

	fill_claims(&in);
	t = jwt_sign(&in, key, KEYLEN);
	CU_ASSERT_FATAL(t != NULL);
	dot1 = strchr(t, '.');
	dot2 = strrchr(t, '.');
	p = b64url_encode(evil, strlen(evil));
	CU_ASSERT_FATAL(p != NULL);
	cap = strlen(t) + strlen(p) + 1;
	forged = malloc(cap);
	CU_ASSERT_FATAL(forged != NULL);
	snprintf(forged, cap, "%.*s.%s%s", (int)(dot1 - t), t, p, dot2);

	memset(&claims, 'x', sizeof claims);
	CU_ASSERT_EQUAL(verify_at(forged, NOW, 0), JWT_ERR_SIGNATURE);
	CU_ASSERT(claims_zeroed());
	CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_OK);
	free(p);
	free(forged);
	free(t);
}

static void test_wrong_key(void)
{
	static const unsigned char other[] = "0123456789abcdef0123456789abcdeF";
	char *t = make_token(HS256, "{\"exp\":" EXP "}", other,
	    sizeof other - 1, NULL);

	CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_ERR_SIGNATURE);
	CU_ASSERT_EQUAL(jwt_verify(t, strlen(t), other, sizeof other - 1, NOW,
	    0, &claims), JWT_OK);
	/* an empty key verifies nothing */
	CU_ASSERT_EQUAL(jwt_verify(t, strlen(t), other, 0, NOW, 0, &claims),
	    JWT_ERR_SIGNATURE);
	free(t);
}

static void test_claims(void)
{
	static const struct {
		const char *payload;
		int want;
	} cases[] = {
		{ "{\"exp\":" EXP "}", JWT_OK },
		{ "{\"exp\":" EXP ",\"iss\":\"x\",\"aud\":[1,2]}", JWT_OK },
		{ "{\"exp\":" EXP ",\"customer_id\":42}", JWT_OK },
		{ "{\"exp\":" EXP ",\"permissions\":[]}", JWT_OK },
		{ "{\"sub\":\"a\"}", JWT_ERR_CLAIMS },           /* exp missing */
		{ "{}", JWT_ERR_CLAIMS },
		{ "{\"exp\":\"" EXP "\"}", JWT_ERR_CLAIMS },
		{ "{\"exp\":1700003600.0}", JWT_ERR_CLAIMS },
		{ "{\"exp\":1.7e9}", JWT_ERR_CLAIMS },
		{ "{\"exp\":null}", JWT_ERR_CLAIMS },
		{ "{\"exp\":true}", JWT_ERR_CLAIMS },
		{ "{\"exp\":-1}", JWT_ERR_CLAIMS },
		{ "{\"exp\":9223372036854775807}", JWT_ERR_CLAIMS },
		{ "{\"exp\":18446744073709551615}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"nbf\":\"1\"}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"nbf\":null}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"iat\":1.5}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"sub\":5}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"sub\":null}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"sub\":\"a\\u0000b\"}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"customer_name\":{}}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"customer_id\":true}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"customer_id\":1.5}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"permissions\":\"PLATFORM.READ\"}",
		  JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"permissions\":null}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"permissions\":{}}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"permissions\":[1]}", JWT_ERR_CLAIMS },
		{ "{\"exp\":" EXP ",\"permissions\":[\"A\",[\"B\"]]}",
		  JWT_ERR_CLAIMS },
		{ "[{\"exp\":" EXP "}]", JWT_ERR_MALFORMED },
		{ "not json", JWT_ERR_MALFORMED },
		{ "{\"exp\":" EXP "} x", JWT_ERR_MALFORMED },
		{ NULL, 0 },
	};

	for (size_t i = 0; cases[i].payload != NULL; i++) {
		memset(&claims, 'x', sizeof claims);
		CHECK_CASE(verify_payload(cases[i].payload) == cases[i].want,
		    cases[i].payload);
		if (cases[i].want != JWT_OK)
			CHECK_CASE(claims_zeroed(), cases[i].payload);
	}
	CU_ASSERT_EQUAL(verify_payload("{\"exp\":" EXP ",\"customer_id\":42}"),
	    JWT_OK);
	CU_ASSERT_STRING_EQUAL(claims.customer_id, "42");
}

/* exp, nbf and iat against now, with and without leeway. */
static void test_time_window(void)
{
	static const struct {
		const char *what;
		long long exp, nbf, iat, leeway;
		int want;
	} cases[] = {
		{ "exp == now",              NOW,       0, 0, 0,  JWT_OK },
		{ "exp == now - 1",          NOW - 1,   0, 0, 0,  JWT_ERR_EXPIRED },
		{ "now == exp + leeway",     NOW - 60,  0, 0, 60, JWT_OK },
		{ "now == exp + leeway + 1", NOW - 61,  0, 0, 60, JWT_ERR_EXPIRED },
		{ "negative leeway is 0",    NOW,       0, 0, -5, JWT_OK },
		{ "negative leeway, expired", NOW - 1,  0, 0, -5, JWT_ERR_EXPIRED },
		{ "nbf == now",              NOW + 99, NOW, 0, 0, JWT_OK },
		{ "nbf == now + 1",          NOW + 99, NOW + 1, 0, 0,
		  JWT_ERR_NOT_YET_VALID },
		{ "nbf within leeway",       NOW + 99, NOW + 60, 0, 60, JWT_OK },
		{ "nbf beyond leeway",       NOW + 99, NOW + 61, 0, 60,
		  JWT_ERR_NOT_YET_VALID },
		{ "nbf in the past",         NOW + 99, NOW - 3600, 0, 0, JWT_OK },
		{ "iat within leeway",       NOW + 99, 0, NOW + 60, 60, JWT_OK },
		{ "iat beyond leeway",       NOW + 99, 0, NOW + 61, 60,
		  JWT_ERR_NOT_YET_VALID },
		{ "iat in the past",         NOW + 99, 0, NOW - 10, 0, JWT_OK },
		{ NULL, 0, 0, 0, 0, 0 },
	};

	for (size_t i = 0; cases[i].what != NULL; i++) {
		char payload[160], *t;
		int n;

		n = snprintf(payload, sizeof payload, "{\"exp\":%lld", cases[i].exp);
		if (cases[i].nbf != 0)
			n += snprintf(payload + n, sizeof payload - (size_t)n,
			    ",\"nbf\":%lld", cases[i].nbf);
		if (cases[i].iat != 0)
			n += snprintf(payload + n, sizeof payload - (size_t)n,
			    ",\"iat\":%lld", cases[i].iat);
		snprintf(payload + n, sizeof payload - (size_t)n, "}");
		t = make_token(HS256, payload, key, KEYLEN, NULL);
		CHECK_CASE(verify_at(t, NOW, cases[i].leeway) == cases[i].want,
		    cases[i].what);
		free(t);
	}
}

/* A token of exactly n characters, padded through an ignored claim. */
static char *token_of_length(size_t n)
{
	size_t pad;

	for (pad = 0; pad < JWT_MAX_TOKEN; pad++) {
		char *payload = malloc(pad + 64), *t;

		CU_ASSERT_FATAL(payload != NULL);
		snprintf(payload, pad + 64, "{\"exp\":" EXP ",\"pad\":\"%*s\"}",
		    (int)pad, "");
		t = make_token(HS256, payload, key, KEYLEN, NULL);
		free(payload);
		if (strlen(t) == n)
			return t;
		if (strlen(t) > n) {
			free(t);
			break;
		}
		free(t);
	}
	return NULL;
}

static void test_max_token(void)
{
	char *t = token_of_length(JWT_MAX_TOKEN), *u;

	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_OK);
	free(t);

	u = token_of_length(JWT_MAX_TOKEN + 1);
	CU_ASSERT_FATAL(u != NULL);
	CU_ASSERT_EQUAL(verify_at(u, NOW, 0), JWT_ERR_TOO_LONG);
	/* and it is refused on length alone, before the content is looked at */
	memset(u, '.', JWT_MAX_TOKEN + 1);
	CU_ASSERT_EQUAL(jwt_verify(u, JWT_MAX_TOKEN + 1, key, KEYLEN, NOW, 0,
	    &claims), JWT_ERR_TOO_LONG);
	CU_ASSERT_EQUAL(jwt_verify(u, (size_t)-1, key, KEYLEN, NOW, 0,
	    &claims), JWT_ERR_TOO_LONG);
	free(u);
}

/* jwt_sign does not produce what jwt_verify would refuse. */
static void test_sign_too_long(void)
{
	static struct jwt_claims in;

	memset(&in, 0, sizeof in);
	for (size_t i = 0; i < JWT_MAX_PERMISSIONS; i++) {
		memset(in.permissions[i], 'P', JWT_MAX_FIELD - 1);
		in.permissions[i][JWT_MAX_FIELD - 1] = '\0';
	}
	in.npermissions = JWT_MAX_PERMISSIONS;
	in.exp = NOW + 60;
	CU_ASSERT(jwt_sign(&in, key, KEYLEN) == NULL);

	/* an unterminated field is refused, not read past */
	memset(&in, 0, sizeof in);
	memset(in.sub, 'a', sizeof in.sub);
	in.exp = NOW + 60;
	CU_ASSERT(jwt_sign(&in, key, KEYLEN) == NULL);
}

static char *permissions_payload(size_t n)
{
	size_t cap = 64 + n * 16, len;
	char *p = malloc(cap);

	CU_ASSERT_FATAL(p != NULL);
	len = (size_t)snprintf(p, cap, "{\"exp\":" EXP ",\"permissions\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(p + len, cap - len, "%s\"P%zu\"",
		    i > 0 ? "," : "", i);
	snprintf(p + len, cap - len, "]}");
	return p;
}

static void test_max_permissions(void)
{
	static struct jwt_claims in;
	char *p, *t;

	p = permissions_payload(JWT_MAX_PERMISSIONS);
	CU_ASSERT_EQUAL(verify_payload(p), JWT_OK);
	CU_ASSERT_EQUAL(claims.npermissions, JWT_MAX_PERMISSIONS);
	CU_ASSERT_STRING_EQUAL(claims.permissions[JWT_MAX_PERMISSIONS - 1], "P63");
	free(p);

	p = permissions_payload(JWT_MAX_PERMISSIONS + 1);
	CU_ASSERT_EQUAL(verify_payload(p), JWT_ERR_CLAIMS);
	free(p);

	/* and through jwt_sign */
	memset(&in, 0, sizeof in);
	for (size_t i = 0; i < JWT_MAX_PERMISSIONS; i++)
		snprintf(in.permissions[i], JWT_MAX_FIELD, "PERM.%zu", i);
	in.npermissions = JWT_MAX_PERMISSIONS;
	in.exp = NOW + 60;
	t = jwt_sign(&in, key, KEYLEN);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_OK);
	CU_ASSERT_EQUAL(claims.npermissions, JWT_MAX_PERMISSIONS);
	CU_ASSERT(jwt_has_permission(&claims, "PERM.63"));
	free(t);
}

/* Every string claim at JWT_MAX_FIELD - 1 characters fits, at
 * JWT_MAX_FIELD it does not. */
static void test_max_field(void)
{
	static const char *const fmts[] = {
		"{\"exp\":" EXP ",\"sub\":\"%s\"}",
		"{\"exp\":" EXP ",\"customer_id\":\"%s\"}",
		"{\"exp\":" EXP ",\"customer_name\":\"%s\"}",
		"{\"exp\":" EXP ",\"permissions\":[\"x\",\"%s\"]}",
		NULL,
	};
	char value[JWT_MAX_FIELD + 1], payload[JWT_MAX_FIELD + 128];

	for (const char *const *f = fmts; *f != NULL; f++) {
		memset(value, 'v', JWT_MAX_FIELD - 1);
		value[JWT_MAX_FIELD - 1] = '\0';
		snprintf(payload, sizeof payload, *f, value);
		CHECK_CASE(verify_payload(payload) == JWT_OK, *f);
		CHECK_CASE(strlen(claims.sub) + strlen(claims.customer_id) +
		    strlen(claims.customer_name) +
		    strlen(claims.permissions[1]) == JWT_MAX_FIELD - 1, *f);

		value[JWT_MAX_FIELD - 1] = 'v';
		value[JWT_MAX_FIELD] = '\0';
		snprintf(payload, sizeof payload, *f, value);
		CHECK_CASE(verify_payload(payload) == JWT_ERR_CLAIMS, *f);
	}
}

/* Anything but three parts; h, p and s stand for well-formed parts. */
static void test_structure(void)
{
	static const struct {
		const char *shape;
		int want;
	} cases[] = {
		{ "h.p.s",   JWT_OK },
		{ "h.p",     JWT_ERR_MALFORMED },
		{ "h.p.s.s", JWT_ERR_MALFORMED },
		{ "h.p.s.",  JWT_ERR_MALFORMED },
		{ "h.p.",    JWT_ERR_MALFORMED },
		{ "h..s",    JWT_ERR_MALFORMED },
		{ ".p.s",    JWT_ERR_MALFORMED },
		{ "..",      JWT_ERR_MALFORMED },
		{ ".",       JWT_ERR_MALFORMED },
		{ "",        JWT_ERR_MALFORMED },
		{ "h",       JWT_ERR_MALFORMED },
		{ "hps",     JWT_ERR_MALFORMED },
		{ "h.p.s ",  JWT_ERR_MALFORMED },
		{ " h.p.s",  JWT_ERR_MALFORMED },
		{ "h.p.s=",  JWT_ERR_MALFORMED },
		{ "h.p.!",   JWT_ERR_MALFORMED },
		{ "h.!.s",   JWT_ERR_SIGNATURE },   /* signed over other bytes */
		{ "h.p.x",   JWT_ERR_SIGNATURE },   /* 31-byte signature */
		{ "h.p.y",   JWT_ERR_SIGNATURE },   /* 33-byte signature */
		{ NULL, 0 },
	};
	char *good = make_token(HS256, "{\"exp\":" EXP "}", key, KEYLEN, NULL);
	char *h, *p, *s, *short_sig, *long_sig;
	unsigned char raw[33];
	char *dot1, *dot2;

	memset(raw, 0xab, sizeof raw);
	short_sig = b64url_encode(raw, 31);
	long_sig = b64url_encode(raw, 33);
	dot1 = strchr(good, '.');
	dot2 = strrchr(good, '.');
	h = strndup(good, (size_t)(dot1 - good));
	p = strndup(dot1 + 1, (size_t)(dot2 - dot1 - 1));
	s = strdup(dot2 + 1);
	CU_ASSERT_FATAL(h && p && s && short_sig && long_sig);

	for (size_t i = 0; cases[i].shape != NULL; i++) {
		char t[1024] = "";

		for (const char *c = cases[i].shape; *c != '\0'; c++) {
			const char *part = *c == 'h' ? h : *c == 'p' ? p :
			    *c == 's' ? s : *c == 'x' ? short_sig :
			    *c == 'y' ? long_sig : NULL;
			char one[2] = { *c, '\0' };

			strcat(t, part != NULL ? part : one);
		}
		memset(&claims, 'x', sizeof claims);
		CHECK_CASE(verify_at(t, NOW, 0) == cases[i].want, cases[i].shape);
		if (cases[i].want != JWT_OK)
			CHECK_CASE(claims_zeroed(), cases[i].shape);
	}

	/* a NUL byte inside the given length */
	{
		size_t n = strlen(good);
		char *t = malloc(n + 1);

		CU_ASSERT_FATAL(t != NULL);
		memcpy(t, good, n + 1);
		t[n - 5] = '\0';
		CU_ASSERT_EQUAL(jwt_verify(t, n, key, KEYLEN, NOW, 0, &claims),
		    JWT_ERR_MALFORMED);
		free(t);
	}
	/* the right MAC followed by one more byte is not the right MAC */
	{
		char *hp = strndup(good, (size_t)(dot2 - good)), *ext, *t;
		unsigned char mac[33];
		unsigned maclen = 0;
		size_t cap;

		CU_ASSERT_FATAL(hp != NULL);
		CU_ASSERT_FATAL(HMAC(EVP_sha256(), key, (int)KEYLEN,
		    (const unsigned char *)hp, strlen(hp), mac, &maclen) != NULL);
		mac[32] = 0;
		ext = b64url_encode(mac, sizeof mac);
		CU_ASSERT_FATAL(ext != NULL);
		cap = strlen(hp) + strlen(ext) + 2;
		t = malloc(cap);
		CU_ASSERT_FATAL(t != NULL);
		snprintf(t, cap, "%s.%s", hp, ext);
		CU_ASSERT_EQUAL(verify_at(t, NOW, 0), JWT_ERR_SIGNATURE);
		free(t);
		free(ext);
		free(hp);
	}
	CU_ASSERT_EQUAL(jwt_verify(NULL, 0, key, KEYLEN, NOW, 0, &claims),
	    JWT_ERR_MALFORMED);
	/* len, not the terminator, delimits the token */
	CU_ASSERT_EQUAL(jwt_verify(good, strlen(good) - 1, key, KEYLEN, NOW, 0,
	    &claims), JWT_ERR_MALFORMED);

	free(h);
	free(p);
	free(s);
	free(short_sig);
	free(long_sig);
	free(good);
}

static void test_has_permission(void)
{
	static struct jwt_claims c;

	fill_claims(&c);
	CU_ASSERT_TRUE(jwt_has_permission(&c, "PLATFORM.READ"));
	CU_ASSERT_TRUE(jwt_has_permission(&c, "PLATFORM.WRITE"));
	CU_ASSERT_FALSE(jwt_has_permission(&c, "platform.read"));
	CU_ASSERT_FALSE(jwt_has_permission(&c, "PLATFORM"));
	CU_ASSERT_FALSE(jwt_has_permission(&c, "PLATFORM.READX"));
	CU_ASSERT_FALSE(jwt_has_permission(&c, "STORAGE_EXPLORER.READ"));
	CU_ASSERT_FALSE(jwt_has_permission(&c, ""));
	CU_ASSERT_FALSE(jwt_has_permission(&c, NULL));
	CU_ASSERT_FALSE(jwt_has_permission(NULL, "PLATFORM.READ"));
	/* only the first npermissions count */
	strcpy(c.permissions[2], "STORAGE_EXPLORER.READ");
	CU_ASSERT_FALSE(jwt_has_permission(&c, "STORAGE_EXPLORER.READ"));
	c.npermissions = 0;
	CU_ASSERT_FALSE(jwt_has_permission(&c, "PLATFORM.READ"));
}

static void test_strerror(void)
{
	static const struct {
		int err;
		const char *text;
	} cases[] = {
		{ JWT_ERR_MALFORMED,     "malformed token" },
		{ JWT_ERR_TOO_LONG,      "token too long" },
		{ JWT_ERR_ALG,           "unsupported algorithm" },
		{ JWT_ERR_SIGNATURE,     "bad signature" },
		{ JWT_ERR_EXPIRED,       "token expired" },
		{ JWT_ERR_NOT_YET_VALID, "token not yet valid" },
		{ JWT_ERR_CLAIMS,        "invalid claims" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK_CASE(strcmp(jwt_strerror(cases[i].err), cases[i].text) == 0,
		    cases[i].text);
	CU_ASSERT_PTR_NOT_NULL(jwt_strerror(12345));
}

int suite_jwt(void)
{
	static const struct test_case tests[] = {
		{ "RFC 7515 A.1 verifies", test_rfc7515_valid },
		{ "RFC 7515 A.1 expired", test_rfc7515_expired },
		{ "RFC 7515 A.1 flipped signature", test_rfc7515_flipped_signature },
		{ "sign/verify roundtrip", test_sign_roundtrip },
		{ "other algorithms refused", test_alg_refused },
		{ "alg none refused", test_alg_none },
		{ "header checks", test_header_malformed },
		{ "tampered payload", test_tampered_payload },
		{ "wrong key", test_wrong_key },
		{ "claim types", test_claims },
		{ "exp/nbf/iat and leeway", test_time_window },
		{ "token length max and max+1", test_max_token },
		{ "sign refuses oversize", test_sign_too_long },
		{ "permissions max and max+1", test_max_permissions },
		{ "field length max and max+1", test_max_field },
		{ "three parts", test_structure },
		{ "jwt_has_permission", test_has_permission },
		{ "jwt_strerror", test_strerror },
		{ NULL, NULL },
	};

	return suite_add("jwt", tests);
}
