/* uuid.h - ids from OpenSSL's CSPRNG: version 4 and 7 UUIDs, run ids. */
#ifndef SLUICE_UUID_H
#define SLUICE_UUID_H

#define UUID_STR_LEN 37      /* 36 characters and the NUL */

/* "3f9c2a10-5b7e-4d21-9a0c-12ab34cd56ef" into out; sep replaces '-'
 * (pipeline ids use '_').  0 or -1 when the CSPRNG fails. */
int uuid_v4(char out[UUID_STR_LEN], char sep);

/* A version 7 UUID: the Unix time in milliseconds, a 12-bit counter
 * within the millisecond, then 62 random bits.  Ids one process makes sort
 * in the order it made them (across processes, to the millisecond), so
 * rows keyed by them are appended to a B-tree instead of landing on random
 * pages (which, once the table outgrows the buffer pool, is a disk read
 * per row).  0 or -1 when the clock or the CSPRNG fails. */
int uuid_v7(char out[UUID_STR_LEN]);

/* A UUID as a client wrote it (8-4-4-4-12 hex digits, '-' separated, any
 * case) into out in canonical lowercase form.  0, or -1 when in is not one. */
int uuid_parse(const char *in, char out[UUID_STR_LEN]);

/* A pipeline run id: 128 random bits as 32 lowercase hex characters.
 * 0 or -1 when the CSPRNG fails. */
#define RUN_ID_LEN 32
int run_id_new(char out[RUN_ID_LEN + 1]);

#endif
