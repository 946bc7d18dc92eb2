/* aead.c - AES-256-GCM through OpenSSL's EVP interface. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "util/aead.h"
#include "util/str.h"

/* Larger values are not secrets but documents: refuse them early. */
#define AEAD_MAX_LEN (1L << 20)
#define KEY_HEX_LEN (2 * AEAD_KEY_LEN)
#define KEY_READ_MAX 256

static int add_aad(EVP_CIPHER_CTX *ctx, int enc, const void *aad, size_t aadlen)
{
	int n;

	if (aadlen == 0)
		return 0;
	if (enc)
		return EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aadlen) == 1 ? 0 : -1;
	return EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aadlen) == 1 ? 0 : -1;
}

int aead_seal_with_nonce(const unsigned char key[AEAD_KEY_LEN],
                         const unsigned char nonce[AEAD_NONCE_LEN],
                         const void *aad, size_t aadlen,
                         const void *pt, size_t ptlen, unsigned char *out)
{
	unsigned char *tag = out + AEAD_NONCE_LEN, *ct = tag + AEAD_TAG_LEN;
	EVP_CIPHER_CTX *ctx = NULL;
	int n, rc = -1;

	if (ptlen > AEAD_MAX_LEN || aadlen > AEAD_MAX_LEN)
		goto out;
	if ((ctx = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, AEAD_NONCE_LEN,
	                        NULL) != 1 ||
	    EVP_EncryptInit_ex(ctx, NULL, NULL, key, nonce) != 1 ||
	    add_aad(ctx, 1, aad, aadlen) != 0)
		goto out;
	if (ptlen > 0 && EVP_EncryptUpdate(ctx, ct, &n, pt, (int)ptlen) != 1)
		goto out;
	/* GCM is a stream mode: Final writes no bytes, only finishes the tag. */
	if (EVP_EncryptFinal_ex(ctx, ct + ptlen, &n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, AEAD_TAG_LEN, tag) != 1)
		goto out;
	memmove(out, nonce, AEAD_NONCE_LEN);
	rc = 0;
out:
	EVP_CIPHER_CTX_free(ctx);
	if (rc != 0 && ptlen <= AEAD_MAX_LEN)
		memset(out, 0, ptlen + AEAD_OVERHEAD);
	return rc;
}

int aead_seal(const unsigned char key[AEAD_KEY_LEN],
              const void *aad, size_t aadlen,
              const void *pt, size_t ptlen, unsigned char *out)
{
	unsigned char nonce[AEAD_NONCE_LEN];

	/* Random 96-bit nonces: safe for far more values than one key will
	 * ever seal here (NIST SP 800-38D allows 2^32). */
	if (RAND_bytes(nonce, sizeof nonce) != 1)
		return -1;
	return aead_seal_with_nonce(key, nonce, aad, aadlen, pt, ptlen, out);
}

int aead_open(const unsigned char key[AEAD_KEY_LEN],
              const void *aad, size_t aadlen,
              const unsigned char *in, size_t inlen, unsigned char *out)
{
	const unsigned char *nonce = in, *ct = in + AEAD_OVERHEAD;
	unsigned char tag[AEAD_TAG_LEN];
	EVP_CIPHER_CTX *ctx = NULL;
	size_t ctlen;
	int n, rc = -1;

	if (inlen < AEAD_OVERHEAD || inlen - AEAD_OVERHEAD > AEAD_MAX_LEN ||
	    aadlen > AEAD_MAX_LEN)
		return -1;
	ctlen = inlen - AEAD_OVERHEAD;
	/* The ctrl call takes a non-const pointer: hand it a copy. */
	memcpy(tag, in + AEAD_NONCE_LEN, AEAD_TAG_LEN);
	if ((ctx = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, AEAD_NONCE_LEN,
	                        NULL) != 1 ||
	    EVP_DecryptInit_ex(ctx, NULL, NULL, key, nonce) != 1 ||
	    add_aad(ctx, 0, aad, aadlen) != 0)
		goto out;
	if (ctlen > 0 && EVP_DecryptUpdate(ctx, out, &n, ct, (int)ctlen) != 1)
		goto out;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, AEAD_TAG_LEN, tag) != 1)
		goto out;
	/* Final compares the tag (in constant time); only then is out real. */
	if (EVP_DecryptFinal_ex(ctx, out + ctlen, &n) != 1)
		goto out;
	rc = 0;
out:
	EVP_CIPHER_CTX_free(ctx);
	if (rc != 0 && ctlen > 0)
		memset(out, 0, ctlen);
	return rc;
}

/* --- the key file ------------------------------------------------------------ */

static int hex_nibble(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 64 hex characters and then only blanks: 0, else -1. */
static int parse_key(const unsigned char *buf, size_t len,
                     unsigned char key[AEAD_KEY_LEN])
{
	size_t i;

	if (len < KEY_HEX_LEN)
		return -1;
	for (i = 0; i < AEAD_KEY_LEN; i++) {
		int hi = hex_nibble(buf[2 * i]), lo = hex_nibble(buf[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (unsigned char)(hi << 4 | lo);
	}
	for (i = KEY_HEX_LEN; i < len; i++)
		if (buf[i] != '\n' && buf[i] != '\r' && buf[i] != ' ' &&
		    buf[i] != '\t')
			return -1;
	return 0;
}

static ssize_t read_all(int fd, unsigned char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len < cap) {
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return (ssize_t)len;
}

int aead_key_load(const char *path, unsigned char key[AEAD_KEY_LEN],
                  char *err, size_t errlen)
{
	unsigned char buf[KEY_READ_MAX];
	struct stat st;
	ssize_t len;
	int fd, rc = -1;

	if (path == NULL || path[0] == '\0') {
		str_errf(err, errlen, "connection_key_file is not set");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		str_errf(err, errlen, "cannot open connection_key_file '%s': %s",
		        path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		str_errf(err, errlen, "connection_key_file '%s' is not a regular file",
		        path);
		goto out;
	}
	/* A key anyone on the host can read protects nothing. */
	if ((st.st_mode & S_IRWXO) != 0) {
		str_errf(err, errlen, "connection_key_file '%s' is accessible to "
		        "others (mode %04o): chmod o-rwx it", path,
		        (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if ((len = read_all(fd, buf, sizeof buf)) < 0) {
		str_errf(err, errlen, "cannot read connection_key_file '%s': %s",
		        path, strerror(errno));
		goto out;
	}
	if (parse_key(buf, (size_t)len, key) != 0) {
		str_errf(err, errlen, "connection_key_file '%s' must hold exactly 64 "
		        "hex characters (openssl rand -hex 32)", path);
		explicit_bzero(key, AEAD_KEY_LEN);
		goto out;
	}
	rc = 0;
out:
	explicit_bzero(buf, sizeof buf);
	close(fd);
	return rc;
}
