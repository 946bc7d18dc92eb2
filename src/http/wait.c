/* wait.c - redirects to the waiter and their check (see wait.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "http/request.h"
#include "http/response.h"
#include "http/wait.h"
#include "util/arena.h"
#include "util/str.h"

#define KEY_LEN 32
#define MAC_HEX 32                      /* 16 bytes of the HMAC, in hex */

static unsigned char key[KEY_LEN];
static bool have_key;

int wait_key_init(void)
{
	if (RAND_bytes(key, sizeof key) != 1)
		return -1;
	have_key = true;
	return 0;
}

bool wait_enabled(void)
{
	return have_key;
}

long long wait_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool field_ok(const char *s, size_t n)
{
	if (n == 0 || n > WAIT_FIELD_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* The mac of text in hex (MAC_HEX characters and a NUL). */
static int mac_hex(const char *text, size_t n, char out[MAC_HEX + 1])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned maclen = 0;

	if (!have_key || HMAC(EVP_sha256(), key, sizeof key, (const unsigned char *)text,
	                      n, mac, &maclen) == NULL || maclen < MAC_HEX / 2)
		return -1;
	for (int i = 0; i < MAC_HEX / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	OPENSSL_cleanse(mac, sizeof mac);
	return 0;
}

int wait_redirect(struct req *r, const char *kind, const char *owner,
                  const char *a, const char *b, long long wait_ms)
{
	char body[5 * WAIT_FIELD_MAX + 64], mac[MAC_HEX + 1];
	const char *f[] = { kind, owner, a, b };
	bool has_id;
	int n;

	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (f[i] == NULL || !field_ok(f[i], strlen(f[i])))
			return -1;
	n = snprintf(body, sizeof body, "%s/%s/%s/%s/%lld", kind, owner, a, b,
	             wait_now_ms() + wait_ms);
	if (n < 0 || (size_t)n >= sizeof body || mac_hex(body, (size_t)n, mac) != 0)
		return -1;
	has_id = field_ok(r->request_id, strlen(r->request_id));
	resp_header(r, "X-Accel-Redirect", arena_printf(r->arena, WAIT_PREFIX "%s/%s%s%s",
	            body, mac, has_id ? "?request_id=" : "", has_id ? r->request_id : ""));
	resp_raw(r, 200, "application/json", "", 0);
	return 0;
}

int wait_uri_parse(const char *path, size_t len, struct wait_ref *ref)
{
	const size_t plen = strlen(WAIT_PREFIX);
	char *dst[] = { ref->kind, ref->owner, ref->a, ref->b };
	char want[MAC_HEX + 1];
	const char *p, *end = path + len, *macp;
	long long d;
	size_t k;

	memset(ref, 0, sizeof *ref);
	if (len <= plen || strncmp(path, WAIT_PREFIX, plen) != 0)
		return -1;
	if ((p = memchr(path, '?', len)) != NULL) {
		const char *id = p + sizeof "?request_id=" - 1;

		if ((size_t)(end - p) > sizeof "?request_id=" - 1 &&
		    strncmp(p, "?request_id=", sizeof "?request_id=" - 1) == 0 &&
		    field_ok(id, (size_t)(end - id))) {
			memcpy(ref->request_id, id, (size_t)(end - id));
			ref->request_id[end - id] = '\0';
		}
		end = p;
	}
	/* The mac covers everything between the prefix and the last '/'. */
	for (macp = end; macp > path + plen && macp[-1] != '/'; macp--)
		;
	if (macp == path + plen || (size_t)(end - macp) != MAC_HEX)
		return -1;
	if (mac_hex(path + plen, (size_t)(macp - 1 - (path + plen)), want) != 0 ||
	    !str_ct_equal(want, MAC_HEX, macp, MAC_HEX))
		return -1;
	p = path + plen;
	for (k = 0; k < sizeof dst / sizeof dst[0]; k++) {
		const char *slash = memchr(p, '/', (size_t)(macp - p));

		if (slash == NULL || !field_ok(p, (size_t)(slash - p)))
			return -1;
		memcpy(dst[k], p, (size_t)(slash - p));
		dst[k][slash - p] = '\0';
		p = slash + 1;
	}
	{
		char num[24];
		size_t n = (size_t)(macp - 1 - p);

		if (n == 0 || n >= sizeof num)
			return -1;
		memcpy(num, p, n);
		num[n] = '\0';
		if (str_to_ll(num, 0, 1LL << 53, &d) != 0)
			return -1;
	}
	ref->deadline_ms = d;
	return 0;
}
