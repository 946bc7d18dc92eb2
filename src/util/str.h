/* str.h - bounded string and number parsing. */
#ifndef SLUICE_STR_H
#define SLUICE_STR_H

#include <stdbool.h>
#include <stddef.h>

/* Parse a base-10 integer in [min, max]; the whole string must be the
 * number (no sign tricks, no trailing junk, no leading space).
 * Returns 0, or -1 when not a number, -2 when out of range. */
int str_to_ll(const char *s, long long min, long long max, long long *out);

/* Copy with truncation refused: returns 0, or -1 if src does not fit. */
int str_copy(char *dst, size_t cap, const char *src);

/* Characters of n bytes of valid UTF-8 (lead bytes counted). */
size_t str_utf8_chars(const char *s, size_t n);

/* The well-formed UTF-8 sequence at s (at most n bytes: overlong forms,
 * surrogates and code points past U+10FFFF refused): its length 1..4 with
 * the code point in *cp (may be NULL), or 0 when s starts no such sequence. */
size_t str_utf8_next(const unsigned char *s, size_t n, unsigned *cp);

/* n bytes of well-formed UTF-8 without a NUL. */
bool str_utf8_valid(const char *s, size_t n);

/* printf into an error buffer of errlen bytes; NULL or 0 writes nothing. */
void str_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

bool str_eq_nocase(const char *a, const char *b);
bool str_has_prefix(const char *s, const char *prefix);
/* A plain file name: 1..max bytes of [A-Za-z0-9._+-], not starting with
 * '.', so it can only name a file directly in one directory. */
bool str_file_name_ok(const char *s, size_t max);
char *str_trim(char *s);                    /* in place, returns s advanced */

/* Constant-time comparison of two byte strings (lengths may differ). */
bool str_ct_equal(const void *a, size_t alen, const void *b, size_t blen);

/* Percent-decode src[0..n) into dst (cap bytes, NUL-terminated); '+' becomes
 * a space when plus_is_space.  Refuses %00 and malformed escapes: -1. */
int str_url_decode(char *dst, size_t cap, const char *src, size_t n,
                   bool plus_is_space);

#endif
