/* uuid.c - RFC 9562 version 4 and version 7 UUIDs. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <openssl/rand.h>

#include "util/uuid.h"

/* 16 bytes as 8-4-4-4-12 lowercase hex digits, sep between the groups. */
static void uuid_format(const unsigned char b[16], char sep, char out[UUID_STR_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = sep;
		out[k++] = hex[b[i] >> 4];
		out[k++] = hex[b[i] & 0x0f];
	}
	out[k] = '\0';
}

int uuid_v4(char out[UUID_STR_LEN], char sep)
{
	unsigned char b[16];

	if (RAND_bytes(b, sizeof b) != 1)
		return -1;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* RFC variant */
	uuid_format(b, sep, out);
	return 0;
}

int uuid_v7(char out[UUID_STR_LEN])
{
	/* The last id's milliseconds and 12-bit counter (rand_a, RFC 9562
	 * 6.2 method 1): ids of one millisecond count up from a random start
	 * below 0x800, and a counter that runs out, or a clock set back,
	 * carries on from the last millisecond.  Per process and unlocked:
	 * only a process's main thread makes ids (ingestion's preparing
	 * thread, the one other thread, makes none). */
	static uint64_t last_ms;
	static unsigned counter;
	unsigned char b[16];
	struct timespec ts;
	uint64_t ms;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || RAND_bytes(b + 6, 10) != 1)
		return -1;
	ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	if (ms > last_ms) {
		counter = ((unsigned)b[6] << 8 | b[7]) & 0x7ff;
	} else if (++counter > 0xfff) {
		ms = last_ms + 1;
		counter = ((unsigned)b[6] << 8 | b[7]) & 0x7ff;
	} else {
		ms = last_ms;
	}
	last_ms = ms;
	for (int i = 0; i < 6; i++)
		b[i] = (unsigned char)(ms >> (40 - 8 * i));    /* big-endian milliseconds */
	b[6] = (unsigned char)(0x70 | counter >> 8);    /* version 7, counter */
	b[7] = (unsigned char)(counter & 0xff);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* RFC variant */
	uuid_format(b, '-', out);
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
