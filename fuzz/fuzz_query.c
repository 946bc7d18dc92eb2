/* fuzz_query.c - libFuzzer target: the request target as the web server
 * passes it (REQUEST_URI, and QUERY_STRING after the '?'), read by
 * req_init_env (the path, percent-decoded) and req_query (form-encoded
 * parameters), as a handler reads them.
 *
 * Checked: a path is at most 2048 bytes; every parameter a handler asks for
 * is absent, malformed, or a string no longer than the query; and when the
 * whole query decodes, every name in it is found with its first value, and
 * the decoded pairs percent-encoded again read back the same. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/request.h"
#include "util/arena.h"
#include "util/str.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_URI_MAX 4096
#define FUZZ_PAIRS_MAX 64

/* The names the handlers ask for. */
static const char *const asked[] = {
	"file_path", "folder_path", "level", "limit", "ms", "page", "task_id", "wait", "",
};

struct pair {
	char *name, *value;
	bool has_value;
};

/* req_init_env on uri (and its query); 0 or REQ_ERR_BAD. */
static int request(struct req *r, struct arena *a, const char *uri, char *buf, size_t cap)
{
	char *uri_var = buf, *qs_var = buf + cap / 2;
	const char *q = strchr(uri, '?');
	char *env[] = { "REQUEST_METHOD=GET", uri_var, qs_var, NULL };

	snprintf(uri_var, cap / 2, "REQUEST_URI=%s", uri);
	snprintf(qs_var, cap / 2, "QUERY_STRING=%s", q != NULL ? q + 1 : "");
	return req_init_env(r, a, NULL, env);
}

/* Percent-encode s (every byte but letters and digits) onto out. */
static void encode(char *out, size_t *o, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			out[(*o)++] = (char)c;
		else
			*o += (size_t)sprintf(out + *o, "%%%02X", c);
	}
}

/* The query's pairs, decoded with the service's decoder; -1 when a part
 * does not decode. */
static int split(struct arena *a, const char *q, struct pair *p, size_t *n)
{
	*n = 0;
	while (*q != '\0' && *n < FUZZ_PAIRS_MAX) {
		size_t len = strcspn(q, "&"), nlen = strcspn(q, "=");

		if (nlen > len)
			nlen = len;
		if (len > 0) {
			p[*n].name = arena_alloc(a, nlen + 1);
			p[*n].has_value = nlen < len;
			p[*n].value = arena_alloc(a, len + 1);
			if (str_url_decode(p[*n].name, nlen + 1, q, nlen, true) != 0 ||
			    (p[*n].has_value && str_url_decode(p[*n].value, len - nlen,
			        q + nlen + 1, len - nlen - 1, true) != 0))
				return -1;
			(*n)++;
		}
		q += len;
		if (*q == '&')
			q++;
	}
	return *q == '\0' ? 0 : -1;
}

/* The first value of name among p[0..n). */
static const char *first(const struct pair *p, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(p[i].name, name) == 0)
			return p[i].has_value ? p[i].value : "";
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct arena *a;
	static char env[8 * FUZZ_URI_MAX], uri[FUZZ_URI_MAX + 1];
	static char again[3 * FUZZ_URI_MAX + 16];
	struct pair p[FUZZ_PAIRS_MAX];
	struct req r, r2;
	const char *v, *w;
	size_t n, o;
	int err;

	if (size > FUZZ_URI_MAX)
		return 0;
	if (a == NULL && (a = arena_new()) == NULL)
		abort();
	arena_reset(a);
	memcpy(uri, data, size);
	uri[size] = '\0';                   /* a C string, as libfcgi hands it */

	if (request(&r, a, uri, env, sizeof env) != REQ_OK)
		return 0;
	if (strlen(r.path) > 2048)
		abort();
	for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
		v = req_query(&r, asked[i], &err);
		if ((err != REQ_OK && (err != REQ_ERR_BAD || v != NULL)) ||
		    (v != NULL && strlen(v) > strlen(r.query)))
			abort();
	}
	if (split(a, r.query, p, &n) != 0)
		goto out;

	/* The same pairs, every byte of them escaped. */
	memcpy(again, "/x?", 3);
	o = 3;
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			again[o++] = '&';
		encode(again, &o, p[i].name);
		if (p[i].has_value) {
			again[o++] = '=';
			encode(again, &o, p[i].value);
		}
	}
	again[o] = '\0';
	if (request(&r2, a, again, env, sizeof env) != REQ_OK)
		abort();
	for (size_t i = 0; i < n; i++) {
		const char *want = first(p, n, p[i].name);

		v = req_query(&r, p[i].name, &err);
		if (err != REQ_OK || v == NULL || strcmp(v, want) != 0)
			abort();
		w = req_query(&r2, p[i].name, &err);
		if (err != REQ_OK || w == NULL || strcmp(w, want) != 0)
			abort();
	}
	req_finish(&r2);
out:
	req_finish(&r);
	return 0;
}
