/* str.c - bounded string and number parsing.
 *
 * Everything here is ASCII and locale-independent on purpose: the inputs are
 * config values, HTTP headers and query strings, never prose. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "util/str.h"

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	       c == '\f' || c == '\v';
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

int str_to_ll(const char *s, long long min, long long max, long long *out)
{
	const char *p = s;
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return -1;
	/* strtoll would accept leading space and '+'; refuse them here.  A
	 * '-' is only part of a number when negatives are in range. */
	if (*p == '-' && min < 0)
		p++;
	if (!is_digit((unsigned char)*p))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return -1;
	if (errno == ERANGE)
		return -2;
	if (v < min || v > max)
		return -2;
	*out = v;
	return 0;
}

int str_copy(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (dst == NULL || src == NULL || cap == 0)
		return -1;
	n = strnlen(src, cap);
	if (n == cap)
		return -1;                /* dst left untouched */
	memcpy(dst, src, n + 1);
	return 0;
}

bool str_eq_nocase(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	for (; *a != '\0' && *b != '\0'; a++, b++)
		if (lower((unsigned char)*a) != lower((unsigned char)*b))
			return false;
	return *a == *b;
}

bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_file_name_ok(const char *s, size_t max)
{
	size_t n;

	if (s == NULL || (n = strlen(s)) == 0 || n > max || s[0] == '.')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-' ||
		      *s == '+'))
			return false;
	return true;
}

char *str_trim(char *s)
{
	size_t n;

	while (is_space((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && is_space((unsigned char)s[n - 1]))
		n--;
	s[n] = '\0';
	return s;
}

bool str_ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
	if (alen == blen)
		return CRYPTO_memcmp(a, b, alen) == 0;
	/* Different lengths are unequal, but still spend the time of a
	 * comparison so the answer's timing does not depend on where the
	 * bytes differ. */
	(void)CRYPTO_memcmp(a, b, alen < blen ? alen : blen);
	return false;
}

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int str_url_decode(char *dst, size_t cap, const char *src, size_t n,
                   bool plus_is_space)
{
	size_t i, o = 0;

	if (dst == NULL || cap == 0)
		return -1;
	for (i = 0; i < n; i++) {
		int c = (unsigned char)src[i];

		if (c == '%') {
			int hi, lo;

			if (n - i < 3)
				goto bad;
			hi = hex_value((unsigned char)src[i + 1]);
			lo = hex_value((unsigned char)src[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			c = hi << 4 | lo;
			i += 2;
		} else if (c == '+' && plus_is_space) {
			c = ' ';
		}
		/* An embedded NUL, raw or escaped, would silently cut the
		 * value short for every later strlen. */
		if (c == '\0')
			goto bad;
		if (o + 1 >= cap)
			goto bad;         /* no room for this byte and the NUL */
		dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return 0;
bad:
	dst[0] = '\0';
	return -1;
}

void str_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

size_t str_utf8_chars(const char *s, size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		count += ((unsigned char)s[i] & 0xC0) != 0x80;
	return count;
}

size_t str_utf8_next(const unsigned char *s, size_t n, unsigned *cp)
{
	size_t len;
	unsigned v;

	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		len = 1;
		v = s[0];
	} else if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		len = 2;
		v = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		len = 3;
		v = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		len = 4;
		v = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[k] & 0x3F);
	}
	if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	if (cp != NULL)
		*cp = v;
	return len;
}

bool str_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, len;

	while (i < n) {
		if (p[i] == 0 || (len = str_utf8_next(p + i, n - i, NULL)) == 0)
			return false;
		i += len;
	}
	return true;
}
