/* uuid.c - RFC 9562 version 4 UUIDs. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <openssl/rand.h>

#include "util/uuid.h"

int uuid_v4(char out[UUID_STR_LEN], char sep)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	size_t k = 0;

	if (RAND_bytes(b, sizeof b) != 1)
		return -1;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* RFC variant */
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = sep;
		out[k++] = hex[b[i] >> 4];
		out[k++] = hex[b[i] & 0x0f];
	}
	out[k] = '\0';
	return 0;
}

int uuid_parse(const char *in, char out[UUID_STR_LEN])
{
	if (in == NULL || strlen(in) != UUID_STR_LEN - 1)
		return -1;
	for (int i = 0; i < UUID_STR_LEN - 1; i++) {
		unsigned char c = (unsigned char)in[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return -1;
			out[i] = '-';
		} else if (isxdigit(c)) {
			out[i] = (char)tolower(c);
		} else {
			return -1;
		}
	}
	out[UUID_STR_LEN - 1] = '\0';
	return 0;
}

int run_id_new(char out[RUN_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[RUN_ID_LEN / 2];

	if (RAND_bytes(b, sizeof b) != 1)
		return -1;
	for (size_t i = 0; i < sizeof b; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[RUN_ID_LEN] = '\0';
	return 0;
}
