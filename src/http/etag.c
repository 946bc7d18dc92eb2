/* etag.c - strong entity tags over an answer's bytes, and If-None-Match.
 *
 * SHA-256 rather than a fast non-cryptographic hash: it is already linked,
 * runs at over a gigabyte a second here, and nobody can make two different
 * bodies share a tag, even with a body of their own choosing. */
#include <stdbool.h>
#include <string.h>

#include <openssl/evp.h>

#include "http/etag.h"
#include "http/request.h"
#include "http/response.h"

#define ETAG_DIGITS 32

void etag_of(const char *body, size_t len, char out[ETAG_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (EVP_Digest(body != NULL ? body : "", len, md, &mdlen, EVP_sha256(),
	               NULL) != 1 || mdlen * 2 < ETAG_DIGITS)
		memset(md, 0, sizeof md);   /* never reached with OpenSSL's SHA-256 */
	out[0] = '"';
	for (size_t i = 0; i < ETAG_DIGITS / 2; i++) {
		out[1 + 2 * i] = hex[md[i] >> 4];
		out[2 + 2 * i] = hex[md[i] & 0xf];
	}
	out[ETAG_DIGITS + 1] = '"';
	out[ETAG_DIGITS + 2] = '\0';
}

static bool ows(char c)
{
	return c == ' ' || c == '\t';
}

/* etagc = %x21 / %x23-7E / obs-text */
static bool etagc(unsigned char c)
{
	return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

bool etag_none_match(const char *s, const char *etag)
{
	size_t elen = strlen(etag);
	const char *p;

	if (s == NULL)
		return false;
	while (ows(*s))
		s++;
	if (*s == '*') {
		for (p = s + 1; ows(*p); p++)
			;
		return *p == '\0';
	}
	/* #entity-tag: empty members and OWS around commas are allowed */
	while (*s != '\0') {
		if (*s == ',' || ows(*s)) {
			s++;
			continue;
		}
		if (s[0] == 'W' && s[1] == '/')
			s += 2;
		p = s;
		if (*p++ != '"')
			return false;
		while (etagc((unsigned char)*p))
			p++;
		if (*p++ != '"')
			return false;
		if ((size_t)(p - s) == elen && memcmp(s, etag, elen) == 0)
			return true;
		s = p;
		while (ows(*s))
			s++;
		if (*s != ',' && *s != '\0')
			return false;
	}
	return false;
}

int resp_raw_etag(struct req *r, const char *content_type, const char *body,
                  size_t len)
{
	char etag[ETAG_SIZE];

	etag_of(body, len, etag);
	resp_header(r, "ETag", etag);
	if (etag_none_match(req_header(r, "If-None-Match"), etag))
		return resp_empty(r, 304);
	return resp_raw(r, 200, content_type, body, len);
}
