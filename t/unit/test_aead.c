/* test_aead.c - AES-256-GCM sealing: known answers, round trips, every
 * kind of tampering refused, and the key file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites.h"
#include "util/aead.h"

static size_t unhex(const char *h, unsigned char *out)
{
	size_t n = strlen(h) / 2;

	for (size_t i = 0; i < n; i++) {
		unsigned v;

		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (unsigned char)v;
	}
	return n;
}

/* Known answers: the GCM specification's AES-256 test cases 13-16
 * (McGrew and Viega, "The Galois/Counter Mode of Operation", appendix B),
 * the vectors NIST's GCM validation also uses. */
struct kat {
	const char *key, *iv, *pt, *aad, *ct, *tag;
};

static const struct kat kats[] = {
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  "000000000000000000000000", "", "", "",
	  "530f8afbc74536b9a963b4f1c4cb738b" },
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  "000000000000000000000000", "00000000000000000000000000000000", "",
	  "cea7403d4d606b6e074ec5d3baf39d18",
	  "d0d1c8a799996bf0265b98b5d48ab919" },
	{ "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	  "cafebabefacedbaddecaf888",
	  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
	  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
	  "",
	  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
	  "b094dac5d93471bdec1a502270e3cc6c" },
	{ "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	  "cafebabefacedbaddecaf888",
	  "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
	  "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
	  "feedfacedeadbeeffeedfacedeadbeefabaddad2",
	  "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
	  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
	  "76fc6ece0f4e1768cddf8853bb2d551b" },
	{ NULL, NULL, NULL, NULL, NULL, NULL },
};

static void test_known_answers(void)
{
	for (const struct kat *k = kats; k->key != NULL; k++) {
		unsigned char key[32], iv[12], pt[64], aad[32], want[64], tag[16];
		unsigned char out[64 + AEAD_OVERHEAD], back[64];
		size_t ptlen, aadlen;

		unhex(k->key, key);
		unhex(k->iv, iv);
		ptlen = unhex(k->pt, pt);
		aadlen = unhex(k->aad, aad);
		unhex(k->ct, want);
		unhex(k->tag, tag);
		CU_ASSERT_EQUAL_FATAL(aead_seal_with_nonce(key, iv, aad, aadlen, pt,
		                                           ptlen, out), 0);
		CU_ASSERT_EQUAL(memcmp(out, iv, 12), 0);
		CU_ASSERT_EQUAL(memcmp(out + 12, tag, 16), 0);
		CU_ASSERT_EQUAL(memcmp(out + AEAD_OVERHEAD, want, ptlen), 0);
		CU_ASSERT_EQUAL(aead_open(key, aad, aadlen, out, ptlen + AEAD_OVERHEAD,
		                          back), 0);
		CU_ASSERT_EQUAL(memcmp(back, pt, ptlen), 0);
	}
}

static const unsigned char KEY[AEAD_KEY_LEN] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};
static const char AAD[] = "0f8fad5b-d9cb-469f-a165-70867728950e";
static const char SECRET[] = "s3cret pässword";

static size_t seal_secret(unsigned char *out)
{
	size_t n = strlen(SECRET);

	CU_ASSERT_EQUAL(aead_seal(KEY, AAD, strlen(AAD), SECRET, n, out), 0);
	return n + AEAD_OVERHEAD;
}

static void test_round_trip(void)
{
	unsigned char a[64], b[64], back[64];
	size_t n = seal_secret(a);

	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, n, back), 0);
	CU_ASSERT_EQUAL(memcmp(back, SECRET, strlen(SECRET)), 0);
	/* A fresh nonce each time: the same secret never seals the same. */
	seal_secret(b);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, AEAD_NONCE_LEN), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(a + AEAD_OVERHEAD, b + AEAD_OVERHEAD,
	                           strlen(SECRET)), 0);
	/* The plaintext does not appear in the sealed bytes. */
	CU_ASSERT_PTR_NULL(memmem(a, n, "s3cret", 6));

	/* An empty secret seals to exactly the overhead and opens. */
	CU_ASSERT_EQUAL(aead_seal(KEY, AAD, strlen(AAD), "", 0, a), 0);
	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, AEAD_OVERHEAD, back), 0);
}

/* Flip one bit at each position: nonce, tag and ciphertext all refuse. */
static void test_tamper(void)
{
	unsigned char a[64], back[64];
	size_t n = seal_secret(a);

	for (size_t i = 0; i < n; i++) {
		a[i] ^= 0x01;
		memset(back, 0xAA, sizeof back);
		CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, n, back), -1);
		/* nothing of the plaintext is left behind on failure */
		CU_ASSERT_EQUAL(back[0], 0);
		a[i] ^= 0x01;
	}
	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, n, back), 0);
	/* cut short, or cut to less than a nonce and a tag */
	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, n - 1, back), -1);
	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, AEAD_OVERHEAD - 1,
	                          back), -1);
	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD), a, 0, back), -1);
}

static void test_aad_and_key(void)
{
	unsigned char a[64], back[64], other[AEAD_KEY_LEN];
	size_t n = seal_secret(a);
	char moved[sizeof AAD];

	/* The value moved to another row (other associated data) refuses. */
	memcpy(moved, AAD, sizeof AAD);
	moved[0] = '1';
	CU_ASSERT_EQUAL(aead_open(KEY, moved, strlen(moved), a, n, back), -1);
	CU_ASSERT_EQUAL(aead_open(KEY, AAD, strlen(AAD) - 1, a, n, back), -1);
	CU_ASSERT_EQUAL(aead_open(KEY, NULL, 0, a, n, back), -1);

	memcpy(other, KEY, sizeof other);
	other[31] ^= 0x80;
	CU_ASSERT_EQUAL(aead_open(other, AAD, strlen(AAD), a, n, back), -1);
}

/* ---- the key file --------------------------------------------------------- */

static int key_file(const char *data, mode_t mode, unsigned char *key,
                    char *err, size_t errlen)
{
	char path[] = "/tmp/sluice-key-XXXXXX";
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return -2;
	if (write(fd, data, strlen(data)) != (ssize_t)strlen(data) ||
	    fchmod(fd, mode) != 0) {
		close(fd);
		unlink(path);
		return -2;
	}
	close(fd);
	err[0] = '\0';
	rc = aead_key_load(path, key, err, errlen);
	unlink(path);
	return rc;
}

#define HEX64 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

static void test_key_file(void)
{
	unsigned char key[AEAD_KEY_LEN];
	char err[512], bad[sizeof HEX64];

	CU_ASSERT_EQUAL(key_file(HEX64, 0600, key, err, sizeof err), 0);
	for (int i = 0; i < AEAD_KEY_LEN; i++)
		CU_ASSERT_EQUAL(key[i], i);
	CU_ASSERT_EQUAL(key_file(HEX64 "\n", 0400, key, err, sizeof err), 0);
	CU_ASSERT_EQUAL(key_file(HEX64 " \r\n", 0640, key, err, sizeof err), 0);
	CU_ASSERT_EQUAL(key_file("000102030405060708090A0B0C0D0E0F"
	                         "101112131415161718191A1B1C1D1E1F", 0600,
	                         key, err, sizeof err), 0);
	CU_ASSERT_EQUAL(key[31], 0x1f);

	/* 63 and 65 hex characters, a non-hex character, 32 raw bytes */
	CU_ASSERT_EQUAL(key_file(HEX64 + 1, 0600, key, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "exactly 64 hex characters"));
	CU_ASSERT_EQUAL(key_file(HEX64 "0", 0600, key, err, sizeof err), -1);
	memcpy(bad, HEX64, sizeof bad);
	bad[40] = 'g';
	CU_ASSERT_EQUAL(key_file(bad, 0600, key, err, sizeof err), -1);
	CU_ASSERT_PTR_NULL(strstr(err, "0102030405"));   /* never the key */
	CU_ASSERT_EQUAL(key_file("0123456789abcdef0123456789abcdef", 0600, key,
	                         err, sizeof err), -1);
	CU_ASSERT_EQUAL(key_file("", 0600, key, err, sizeof err), -1);

	/* others may not read (or write) it */
	CU_ASSERT_EQUAL(key_file(HEX64, 0604, key, err, sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "accessible to others (mode 0604)"));
	CU_ASSERT_EQUAL(key_file(HEX64, 0602, key, err, sizeof err), -1);

	CU_ASSERT_EQUAL(aead_key_load("/nonexistent/connection.key", key, err,
	                              sizeof err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/connection.key"));
	CU_ASSERT_EQUAL(aead_key_load("", key, err, sizeof err), -1);
	CU_ASSERT_EQUAL(aead_key_load("/tmp", key, err, sizeof err), -1);
}

int suite_aead(void)
{
	static const struct test_case tests[] = {
		{ "GCM known answers (AES-256)", test_known_answers },
		{ "round trip, fresh nonces", test_round_trip },
		{ "tampered nonce, tag or ciphertext refused", test_tamper },
		{ "other associated data or key refused", test_aad_and_key },
		{ "key file", test_key_file },
		{ NULL, NULL },
	};

	return suite_add("aead", tests);
}
