/* aead.h - AES-256-GCM sealing of small secrets (connection passwords).
 *
 * A sealed value is nonce || tag || ciphertext: a fresh random 12-byte nonce
 * per value, the 16-byte tag, then as many bytes as the plaintext.  The
 * associated data (the id of the row that holds the value) is authenticated
 * but not stored, so a sealed value copied to another row does not open.
 *
 * The key is 32 bytes, kept outside the database in a file named by the
 * config key connection_key_file: 64 hexadecimal characters (what
 * `openssl rand -hex 32` prints), optionally followed by a newline. */
#ifndef SLUICE_AEAD_H
#define SLUICE_AEAD_H

#include <stddef.h>

#define AEAD_KEY_LEN      32
#define AEAD_NONCE_LEN    12
#define AEAD_TAG_LEN      16
#define AEAD_OVERHEAD     (AEAD_NONCE_LEN + AEAD_TAG_LEN)

/* Seal pt[0..ptlen) into out, which must hold ptlen + AEAD_OVERHEAD bytes.
 * 0, or -1 when the CSPRNG or the cipher fails (out is then zeroed). */
int aead_seal(const unsigned char key[AEAD_KEY_LEN],
              const void *aad, size_t aadlen,
              const void *pt, size_t ptlen, unsigned char *out);

/* The same with a caller-chosen nonce: known-answer tests only.  A nonce
 * must never be used twice under one key. */
int aead_seal_with_nonce(const unsigned char key[AEAD_KEY_LEN],
                         const unsigned char nonce[AEAD_NONCE_LEN],
                         const void *aad, size_t aadlen,
                         const void *pt, size_t ptlen, unsigned char *out);

/* Open in[0..inlen) into out (inlen - AEAD_OVERHEAD bytes).  0, or -1 when
 * inlen is too short or the tag does not verify (another key, other
 * associated data, or any byte changed); out is then zeroed. */
int aead_open(const unsigned char key[AEAD_KEY_LEN],
              const void *aad, size_t aadlen,
              const unsigned char *in, size_t inlen, unsigned char *out);

/* Read the key file: exactly 64 hex characters, then optional blanks or
 * newlines.  Refused: a missing or unreadable file, anything else in it,
 * and a file whose mode gives others any access.  The message in err names
 * the file, never its content.  0 or -1. */
int aead_key_load(const char *path, unsigned char key[AEAD_KEY_LEN],
                  char *err, size_t errlen);

#endif
