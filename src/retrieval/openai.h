/* openai.h - an OpenAI-compatible /v1/embeddings client (libcurl).
 *
 * Used when embedding_provider = openai: POST {openai_base_url}/v1/embeddings
 * with {"model", "input": [...]}, openai_batch_size inputs per request,
 * retried on 408/429/5xx and transport errors with exponential backoff and
 * jitter (Retry-After honoured, bounded).  The answer is checked strictly:
 * one embedding per input, by index, each exactly dim finite numbers.
 *
 * The API key (openai_api_key_file) goes into the Authorization header and
 * nowhere else: not into err, not into the log. */
#ifndef SLUICE_OPENAI_H
#define SLUICE_OPENAI_H

#include <stddef.h>

struct config;

#define OPENAI_DIM_MAX 4096
#define OPENAI_KEY_MAX 1024               /* bytes of key file read */
#define OPENAI_RETRY_AFTER_MAX_MS 30000   /* a longer Retry-After is cut to this */
#define OPENAI_BACKOFF_BASE_MS 200
#define OPENAI_BACKOFF_MAX_MS 8000

/* Embed n texts (texts[i] of lens[i] bytes, UTF-8) into out (n * dim floats,
 * row i for texts[i]).  Returns 0, or -1 with a short, client-safe reason in
 * err (no URL, no key, no internal address: it may be shown to a customer;
 * the details go to the log). */
int openai_embed(const struct config *cfg, const char *const *texts, const size_t *lens,
                 size_t n, float *out /* n * dim */, size_t dim, char *err, size_t errlen);

/* The same with the model named (a dataset keeps the model it was embedded
 * with, whatever openai_model says today). */
int openai_embed_model(const struct config *cfg, const char *model,
                       const char *const *texts, const size_t *lens, size_t n,
                       float *out, size_t dim, char *err, size_t errlen);

/* --- the pieces, for the unit tests ------------------------------------- */

/* The request body for texts[0..n): malloc'd NUL-terminated JSON, or NULL
 * when out of memory.  *len gets its length. */
char *openai_request_body(const char *model, const char *const *texts,
                          const size_t *lens, size_t n, size_t *len);

/* Check a response body for n inputs of dimension dim and write the vectors
 * into out (n * dim).  Returns 0, or -1 with the reason in err. */
int openai_parse_response(const char *body, size_t len, size_t n, size_t dim,
                          float *out, char *err, size_t errlen);

/* The key from path into key (cap bytes), trailing blanks and newline
 * removed.  Refuses an empty key, one too long, or one with a byte that
 * cannot go into an HTTP header.  Returns 0 or -1 (err never holds the key). */
int openai_read_key(const char *path, char *key, size_t cap, char *err, size_t errlen);

/* Whether an answer is worth another attempt: HTTP status (0 when the
 * transport failed) and the curl result code. */
int openai_retryable(long http_status, int curl_code);

/* Milliseconds to wait before retry number attempt (1 = the first retry):
 * retry_after_ms when the server gave one (>= 0; bounded by
 * OPENAI_RETRY_AFTER_MAX_MS), else an exponential delay with jitter drawn
 * from rnd (uniform in [d/2, d]). */
long openai_backoff_ms(int attempt, long retry_after_ms, unsigned rnd);

#endif
