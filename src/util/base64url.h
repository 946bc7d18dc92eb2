/* base64url.h - RFC 4648 section 5 without padding, as JWT uses it.
 * Built on libb64; decoding refuses characters outside the alphabet,
 * '=' padding, and impossible lengths (len % 4 == 1). */
#ifndef SLUICE_BASE64URL_H
#define SLUICE_BASE64URL_H

#include <stddef.h>

/* Returns a malloc'd NUL-terminated string, or NULL on allocation failure. */
char *b64url_encode(const void *in, size_t n);
/* Returns malloc'd bytes (NUL-terminated for convenience, *outlen excludes
 * it), or NULL when the input is not valid base64url. */
unsigned char *b64url_decode(const char *in, size_t n, size_t *outlen);

/* Standard base64 (with padding, no line breaks); same contracts. */
char *b64_encode(const void *in, size_t n);
unsigned char *b64_decode(const char *in, size_t n, size_t *outlen);

#endif
