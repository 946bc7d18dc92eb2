/* base64url.c - base64 and base64url (RFC 4648) over libb64.
 *
 * libb64 is lenient in both directions: its encoder breaks lines every 72
 * characters and ends with a newline, and its decoder skips any character
 * it does not know.  So the encoder's output is post-processed, and every
 * input is validated here, completely, before libb64 sees it.  Decoding is
 * canonical: unused bits in the last character must be zero, so one byte
 * string has exactly one accepted encoding (a token's signature cannot be
 * varied without changing its value). */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <b64/cencode.h>
#include <b64/cdecode.h>

#include "util/base64url.h"

/* libb64 counts in int; feed it bounded chunks.  A multiple of 3 (encode)
 * and of 4 (decode) keeps the line-break counter and state simple. */
#define B64_CHUNK (3 * 4 * 65536)

/* Largest input either direction accepts: keeps size arithmetic far from
 * overflow on any platform. */
#define B64_MAX_INPUT ((size_t)1 << 30)

/* Value of c in the standard (url == false) or url alphabet, or -1. */
static int b64_value(unsigned char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

static char *encode(const void *in, size_t n, bool url)
{
	const char *p = in;
	base64_encodestate st;
	size_t groups, cap, len = 0, i, j;
	char *out;

	if (n > B64_MAX_INPUT || (in == NULL && n > 0))
		return NULL;
	/* 4 characters per 3 bytes, a newline per 72 characters, the final
	 * newline, and the NUL. */
	groups = (n + 2) / 3;
	cap = groups * 4 + groups / 18 + 3;
	if ((out = malloc(cap)) == NULL)
		return NULL;
	base64_init_encodestate(&st);
	while (n > 0) {
		int chunk = n > B64_CHUNK ? B64_CHUNK : (int)n;

		len += (size_t)base64_encode_block(p, chunk, out + len, &st);
		p += chunk;
		n -= (size_t)chunk;
	}
	len += (size_t)base64_encode_blockend(out + len, &st);

	/* Drop the line breaks (and, for url, the padding); map 62 and 63. */
	for (i = j = 0; i < len; i++) {
		char c = out[i];

		if (c == '\n' || (url && c == '='))
			continue;
		if (url && c == '+')
			c = '-';
		else if (url && c == '/')
			c = '_';
		out[j++] = c;
	}
	out[j] = '\0';
	return out;
}

/* Check in[0..n) as a complete encoding.  For the standard alphabet the
 * length is a multiple of 4 with at most two '=' at the end; for url there
 * is no '=' at all and n % 4 != 1.  On success *ndata is the number of
 * alphabet characters. */
static bool validate(const char *in, size_t n, bool url, size_t *ndata)
{
	size_t i, data = n;
	int last;

	if (url) {
		if (n % 4 == 1)
			return false;
	} else {
		if (n % 4 != 0)
			return false;
		if (n > 0 && in[n - 1] == '=')
			data--;
		if (data < n && data > 0 && in[data - 1] == '=')
			data--;
		/* A third '=' is caught below: it is not in the alphabet. */
	}
	for (i = 0; i < data; i++)
		if (b64_value((unsigned char)in[i], url) < 0)
			return false;
	*ndata = data;
	if (data == 0)
		return true;

	/* Canonical form: the bits past the last whole byte are zero. */
	last = b64_value((unsigned char)in[data - 1], url);
	if (data % 4 == 2 && (last & 0x0f) != 0)
		return false;
	if (data % 4 == 3 && (last & 0x03) != 0)
		return false;
	return true;
}

static unsigned char *decode(const char *in, size_t n, size_t *outlen, bool url)
{
	base64_decodestate st;
	unsigned char *out = NULL;
	char *tmp = NULL;
	const char *src = in;
	size_t ndata = 0, len = 0, i;

	if (outlen != NULL)
		*outlen = 0;
	if (n > B64_MAX_INPUT || (in == NULL && n > 0))
		return NULL;
	if (!validate(in, n, url, &ndata))
		return NULL;

	/* libb64 only knows the standard alphabet. */
	if (url && ndata > 0) {
		if ((tmp = malloc(ndata)) == NULL)
			return NULL;
		for (i = 0; i < ndata; i++)
			tmp[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
		src = tmp;
	}
	if ((out = malloc(ndata / 4 * 3 + 3)) == NULL)
		goto out;
	base64_init_decodestate(&st);
	for (i = 0; i < ndata; ) {
		int chunk = ndata - i > B64_CHUNK ? B64_CHUNK : (int)(ndata - i);

		len += (size_t)base64_decode_block(src + i, chunk,
		    (char *)out + len, &st);
		i += (size_t)chunk;
	}
	out[len] = '\0';
	if (outlen != NULL)
		*outlen = len;
out:
	free(tmp);
	return out;
}

char *b64url_encode(const void *in, size_t n)
{
	return encode(in, n, true);
}

unsigned char *b64url_decode(const char *in, size_t n, size_t *outlen)
{
	return decode(in, n, outlen, true);
}

char *b64_encode(const void *in, size_t n)
{
	return encode(in, n, false);
}

unsigned char *b64_decode(const char *in, size_t n, size_t *outlen)
{
	return decode(in, n, outlen, false);
}
