/* fuzz_jwt.c - libFuzzer target: a bearer token in the Authorization
 * header, checked as every JWT route checks it (auth_jwt_or_reply), and
 * the same token through jwt_verify at a time of the input's choosing.
 *
 * Without the key a fuzzer never gets past the signature check, so the
 * first byte picks how the rest becomes a token:
 *   0  the header value as sent ("Bearer <token>" or a bare token);
 *   1  "<header>.<payload>" in base64url, signed here with the key;
 *   2  "<header JSON>\n<claims JSON>", encoded and signed here,
 * so that modes 1 and 2 reach the claims parser as the key holder's tokens
 * do.  Checked: a refusal is a 401 (403 for a missing permission) that
 * never shows the key, and leaves the claims zeroed; accepted claims are
 * terminated strings within their bounds and in their time window, and
 * sign and verify back to the same claims. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/auth.h"
#include "auth/jwt.h"
#include "http/request.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/base64url.h"
#include "util/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char KEY[] = "fuzz-key-0123456789abcdef0123456789";
#define NOW 1700000000LL
#define LEEWAY 60

/* "<a>.<b>" signed with KEY: a new string, or NULL. */
static char *sign(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char mac[32];
	unsigned int maclen = 0;
	char *sig, *tok = NULL;
	size_t n = alen + 1 + blen;
	char *msg = malloc(n + 1);

	if (msg == NULL)
		return NULL;
	memcpy(msg, a, alen);
	msg[alen] = '.';
	memcpy(msg + alen + 1, b, blen);
	msg[n] = '\0';
	if (HMAC(EVP_sha256(), KEY, (int)sizeof KEY - 1, (unsigned char *)msg, n, mac,
	         &maclen) != NULL && (sig = b64url_encode(mac, maclen)) != NULL) {
		if ((tok = malloc(n + 1 + strlen(sig) + 1)) != NULL)
			sprintf(tok, "%s.%s", msg, sig);
		free(sig);
	}
	free(msg);
	return tok;
}

static char *token_of(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1;
	const char *cut;
	char *h = NULL, *p = NULL, *tok = NULL;

	size--;
	switch (data[0] % 3) {
	case 0:
		if ((tok = malloc(size + 1)) != NULL) {
			memcpy(tok, s, size);
			tok[size] = '\0';
		}
		return tok;
	case 1:
		cut = memchr(s, '.', size);
		if (cut == NULL)
			return NULL;
		return sign(s, (size_t)(cut - s), cut + 1, size - (size_t)(cut - s) - 1);
	default:
		cut = memchr(s, '\n', size);
		if (cut == NULL)
			return NULL;
		h = b64url_encode(s, (size_t)(cut - s));
		p = b64url_encode(cut + 1, size - (size_t)(cut - s) - 1);
		if (h != NULL && p != NULL)
			tok = sign(h, strlen(h), p, strlen(p));
		free(h);
		free(p);
		return tok;
	}
}

static bool field_ok(const char *s)
{
	return strnlen(s, JWT_MAX_FIELD) < JWT_MAX_FIELD;
}

static bool claims_same(const struct jwt_claims *a, const struct jwt_claims *b)
{
	if (strcmp(a->sub, b->sub) != 0 || strcmp(a->customer_id, b->customer_id) != 0 ||
	    strcmp(a->customer_name, b->customer_name) != 0 ||
	    a->npermissions != b->npermissions || a->exp != b->exp ||
	    a->nbf != b->nbf || a->iat != b->iat)
		return false;
	for (size_t i = 0; i < a->npermissions; i++)
		if (strcmp(a->permissions[i], b->permissions[i]) != 0)
			return false;
	return true;
}

/* The direct call: claims bounded and in their window, or all zero. */
static void verify(const char *tok)
{
	static const struct jwt_claims zero;
	struct jwt_claims c, back;
	char *again;
	int rc;

	rc = jwt_verify(tok, strlen(tok), (const unsigned char *)KEY, sizeof KEY - 1,
	                NOW, LEEWAY, &c);
	if (jwt_strerror(rc) == NULL)
		abort();
	if (rc != JWT_OK) {
		if (memcmp(&c, &zero, sizeof c) != 0)
			abort();
		return;
	}
	if (!field_ok(c.sub) || !field_ok(c.customer_id) || !field_ok(c.customer_name) ||
	    c.npermissions > JWT_MAX_PERMISSIONS || NOW > c.exp + LEEWAY ||
	    (c.nbf != 0 && c.nbf > NOW + LEEWAY) || (c.iat != 0 && c.iat > NOW + LEEWAY))
		abort();
	for (size_t i = 0; i < c.npermissions; i++)
		if (!field_ok(c.permissions[i]))
			abort();
	/* Signed again by the service's own signer, the claims verify back
	 * the same (unless the new token would be over the length cap: it
	 * spells out what the original may have left short, and writes a
	 * control character the original sent raw as \u00XX, six bytes for
	 * one, so it may be up to about six times as long). */
	again = jwt_sign(&c, (const unsigned char *)KEY, sizeof KEY - 1);
	if (again == NULL) {
		if (strlen(tok) < JWT_MAX_TOKEN / 7)
			abort();
		return;
	}
	if (jwt_verify(again, strlen(again), (const unsigned char *)KEY, sizeof KEY - 1,
	               NOW, LEEWAY, &back) != JWT_OK || !claims_same(&c, &back))
		abort();
	free(again);
}

/* The request path: as a route requiring permission "read" checks it. */
static void request(struct arena *a, const char *tok)
{
	static struct config cfg;
	size_t n = strlen(tok), outlen;
	char *var = malloc(sizeof "HTTP_AUTHORIZATION=" + n);
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/storage/datasets", var, NULL };
	const char *out;
	struct req r;
	int rc;

	if (var == NULL)
		return;
	sprintf(var, "HTTP_AUTHORIZATION=%s", tok);
	config_defaults(&cfg);
	memcpy(cfg.jwt_secret, KEY, sizeof KEY - 1);
	cfg.jwt_secret_len = sizeof KEY - 1;
	cfg.jwt_leeway = LEEWAY;
	if (req_init_env(&r, a, &cfg, env) != REQ_OK)
		goto out;                  /* over the environment's bounds */
	rc = auth_jwt_or_reply(&r, "read");
	out = resp_test_output(&r, &outlen);
	if (rc == 0 ? (r.status != 0 || r.id.customer_id == NULL || r.id.customer_id[0] == '\0')
	            : (r.status != 401 && r.status != 403))
		abort();
	if (memmem(out, outlen, KEY, sizeof KEY - 1) != NULL)
		abort();
	req_finish(&r);
out:
	free(var);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct arena *a;
	char *tok;

	if (size < 1 || size > 2 * JWT_MAX_TOKEN)
		return 0;
	if (a == NULL && (a = arena_new()) == NULL)
		abort();
	arena_reset(a);
	if ((tok = token_of(data, size)) == NULL)
		return 0;
	verify(tok);
	request(a, tok);
	free(tok);
	return 0;
}
