/* openai.c - the external embeddings client.
 *
 * One curl easy handle per call, reused for every batch so the connection
 * stays open.  Nothing here is thread-aware: sluice runs one request (or one
 * work item) per process.  CURLOPT_NOSIGNAL keeps libcurl away from SIGALRM,
 * which the serve and work loops own. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "retrieval/openai.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

#define RESPONSE_JSON_DEPTH 8              /* {data: [{embedding: [n]}]} is 4 */
#define RESPONSE_BASE_BYTES (1024 * 1024)  /* usage, ids, error text */
#define RESPONSE_BYTES_PER_VALUE 48        /* "-1.2345678901234567e-05, " and spaces */
#define CONNECT_TIMEOUT_MAX_MS 5000
#define URL_MAX (CONFIG_PATH_MAX + 32)

/* --- request ------------------------------------------------------------ */

char *openai_request_body(const char *model, const char *const *texts,
                          const size_t *lens, size_t n, size_t *len)
{
	struct json_object *root = NULL, *input = NULL, *s;
	const char *json;
	char *body = NULL;

	root = json_object_new_object();
	input = json_object_new_array_ext((int)(n < INT_MAX ? n : 0));
	if (root == NULL || input == NULL)
		goto out;
	if (json_object_object_add(root, "model", json_object_new_string(model)) != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (lens[i] > INT_MAX)
			goto out;
		s = json_object_new_string_len(texts[i], (int)lens[i]);
		if (s == NULL || json_object_array_add(input, s) != 0) {
			json_object_put(s);
			goto out;
		}
	}
	if (json_object_object_add(root, "input", input) != 0)
		goto out;
	input = NULL;   /* owned by root now */
	json = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
	                                      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (json != NULL && (body = strdup(json)) != NULL)
		*len = strlen(body);
out:
	json_object_put(input);
	json_object_put(root);
	return body;
}

/* --- response ----------------------------------------------------------- */

int openai_parse_response(const char *body, size_t len, size_t n, size_t dim,
                          float *out, char *err, size_t errlen)
{
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL, *data, *item, *idx, *emb, *v;
	unsigned char *seen = NULL;
	size_t end;
	int64_t k;
	double d;
	int rc = -1;

	if (len > INT_MAX) {
		str_errf(err, errlen, "embeddings response is too large");
		return -1;
	}
	if ((tok = json_tokener_new_ex(RESPONSE_JSON_DEPTH)) == NULL ||
	    (seen = calloc(n ? n : 1, 1)) == NULL) {
		str_errf(err, errlen, "out of memory");
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, body, (int)len);
	if (root == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		str_errf(err, errlen, "embeddings response is not valid JSON");
		goto out;
	}
	for (end = json_tokener_get_parse_end(tok); end < len; end++)
		if (body[end] != ' ' && body[end] != '\t' && body[end] != '\r' &&
		    body[end] != '\n') {
			str_errf(err, errlen, "embeddings response has data after the JSON");
			goto out;
		}
	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "data", &data) ||
	    !json_object_is_type(data, json_type_array)) {
		str_errf(err, errlen, "embeddings response has no \"data\" array");
		goto out;
	}
	if (json_object_array_length(data) != n) {
		str_errf(err, errlen, "embeddings response has %zu embeddings for %zu inputs",
		        json_object_array_length(data), n);
		goto out;
	}
	/* Placed by index, not by position: the index is what ties a vector to
	 * its input, and each must appear exactly once. */
	for (size_t i = 0; i < n; i++) {
		item = json_object_array_get_idx(data, i);
		if (!json_object_is_type(item, json_type_object) ||
		    !json_object_object_get_ex(item, "index", &idx) ||
		    !json_object_is_type(idx, json_type_int)) {
			str_errf(err, errlen, "embeddings response: data[%zu] has no integer index", i);
			goto out;
		}
		k = json_object_get_int64(idx);
		if (k < 0 || (uint64_t)k >= n || seen[k]) {
			str_errf(err, errlen, "embeddings response: data[%zu] has a %s index %lld",
			        i, k < 0 || (uint64_t)k >= n ? "bad" : "repeated", (long long)k);
			goto out;
		}
		seen[k] = 1;
		if (!json_object_object_get_ex(item, "embedding", &emb) ||
		    !json_object_is_type(emb, json_type_array)) {
			str_errf(err, errlen, "embeddings response: data[%zu] has no embedding array", i);
			goto out;
		}
		if (json_object_array_length(emb) != dim) {
			str_errf(err, errlen,
			        "embeddings response: embedding %lld has %zu values, expected %zu "
			        "(embedding_dimensions)",
			        (long long)k, json_object_array_length(emb), dim);
			goto out;
		}
		for (size_t j = 0; j < dim; j++) {
			v = json_object_array_get_idx(emb, j);
			if (!json_object_is_type(v, json_type_double) &&
			    !json_object_is_type(v, json_type_int)) {
				str_errf(err, errlen,
				        "embeddings response: embedding %lld value %zu is not a number",
				        (long long)k, j);
				goto out;
			}
			d = json_object_get_double(v);
			if (!isfinite(d) || fabs(d) > FLT_MAX) {
				str_errf(err, errlen,
				        "embeddings response: embedding %lld value %zu is not a finite float",
				        (long long)k, j);
				goto out;
			}
			out[(size_t)k * dim + j] = (float)d;
		}
	}
	rc = 0;
out:
	free(seen);
	json_object_put(root);
	if (tok != NULL)
		json_tokener_free(tok);
	return rc;
}

/* --- key, retry policy -------------------------------------------------- */

int openai_read_key(const char *path, char *key, size_t cap, char *err, size_t errlen)
{
	char buf[OPENAI_KEY_MAX + 1];
	size_t len = 0, start = 0;
	ssize_t r;
	int fd, rc = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		str_errf(err, errlen, "cannot open openai_api_key_file: %s", strerror(errno));
		return -1;
	}
	while (len < sizeof buf) {
		r = read(fd, buf + len, sizeof buf - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			str_errf(err, errlen, "cannot read openai_api_key_file: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
	                   buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	while (start < len && (buf[start] == ' ' || buf[start] == '\t'))
		start++;
	if (len - start == 0) {
		str_errf(err, errlen, "openai_api_key_file is empty");
		goto out;
	}
	if (len - start >= cap || len > OPENAI_KEY_MAX) {
		str_errf(err, errlen, "the key in openai_api_key_file is too long");
		goto out;
	}
	/* Printable ASCII only: anything else could split or corrupt the header. */
	for (size_t i = start; i < len; i++)
		if ((unsigned char)buf[i] < 0x21 || (unsigned char)buf[i] > 0x7e) {
			str_errf(err, errlen,
			        "the key in openai_api_key_file has a blank or non-ASCII byte");
			goto out;
		}
	memcpy(key, buf + start, len - start);
	key[len - start] = '\0';
	rc = 0;
out:
	explicit_bzero(buf, sizeof buf);
	close(fd);
	return rc;
}

int openai_retryable(long http_status, int curl_code)
{
	switch (curl_code) {
	case CURLE_OK:
		return http_status == 408 || http_status == 429 ||
		       (http_status >= 500 && http_status <= 599);
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		/* our own size limit (CURLE_WRITE_ERROR), a bad URL, TLS trust:
		 * another attempt would end the same way */
		return 0;
	}
}

long openai_backoff_ms(int attempt, long retry_after_ms, unsigned rnd)
{
	long d = OPENAI_BACKOFF_BASE_MS;

	if (retry_after_ms >= 0)
		return retry_after_ms < OPENAI_RETRY_AFTER_MAX_MS ?
		       retry_after_ms : OPENAI_RETRY_AFTER_MAX_MS;
	for (int i = 1; i < attempt && d < OPENAI_BACKOFF_MAX_MS; i++)
		d *= 2;
	if (d > OPENAI_BACKOFF_MAX_MS)
		d = OPENAI_BACKOFF_MAX_MS;
	/* "equal jitter": never less than half the delay, so retries from many
	 * work processes spread out without collapsing to zero */
	return d / 2 + (long)(rnd % (unsigned long)(d / 2 + 1));
}

/* --- transport ---------------------------------------------------------- */

struct resp {
	char *p;
	size_t len, cap, max;
	bool too_big;
};

static size_t on_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct resp *r = arg;
	size_t n = size * nmemb, cap;
	char *p;

	if (n > r->max - r->len) {
		r->too_big = true;
		return 0;       /* curl stops with CURLE_WRITE_ERROR */
	}
	if (r->len + n + 1 > r->cap) {
		cap = r->cap ? r->cap : 16384;
		while (cap < r->len + n + 1)
			cap *= 2;
		if ((p = realloc(r->p, cap)) == NULL)
			return 0;
		r->p = p;
		r->cap = cap;
	}
	memcpy(r->p + r->len, data, n);
	r->len += n;
	r->p[r->len] = '\0';
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static unsigned jitter_rand(void)
{
	static unsigned seed;

	if (seed == 0)
		seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16) ^ 0x9e3779b9u;
	return (unsigned)rand_r(&seed);
}

/* The "error.message" of an error answer, for the log only, with the key
 * masked should the server echo it (before cutting, so no prefix of the
 * key survives at the cut). */
static void error_message(const struct resp *r, const char *key, char *buf, size_t cap)
{
	struct json_object *root, *e, *m;
	const char *s = NULL;
	char *copy, *hit;

	buf[0] = '\0';
	if (r->p == NULL)
		return;
	root = json_tokener_parse(r->p);
	if (root != NULL && json_object_object_get_ex(root, "error", &e)) {
		if (json_object_is_type(e, json_type_string))
			s = json_object_get_string(e);
		else if (json_object_object_get_ex(e, "message", &m))
			s = json_object_get_string(m);
	}
	if (s != NULL && (copy = strdup(s)) != NULL) {
		if (key != NULL && key[0] != '\0')
			while ((hit = strstr(copy, key)) != NULL)
				memset(hit, '*', strlen(key));
		snprintf(buf, cap, "%s", copy);
		free(copy);
	}
	json_object_put(root);
}

static int global_init(void)
{
	static int done;

	if (!done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -1;
		done = 1;
	}
	return 0;
}

/* One batch, with its retries.  Vectors go to out (n * dim). */
static int embed_batch(CURL *h, const struct config *cfg, const char *model,
                       const char *key,
                       const char *const *texts, const size_t *lens, size_t n,
                       float *out, size_t dim, char *err, size_t errlen)
{
	struct resp r = { 0 };
	char cerr[CURL_ERROR_SIZE], msg[256];
	char *body = NULL;
	size_t blen = 0;
	long status = 0, delay;
	curl_off_t ra;
	CURLcode cc = CURLE_OK;
	int attempt, attempts = cfg->openai_max_retries + 1, rc = -1;

	body = openai_request_body(model, texts, lens, n, &blen);
	if (body == NULL) {
		str_errf(err, errlen, "out of memory building the embeddings request");
		return -1;
	}
	r.max = RESPONSE_BASE_BYTES + n * dim * RESPONSE_BYTES_PER_VALUE;
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);

	for (attempt = 1; attempt <= attempts; attempt++) {
		r.len = 0;
		r.too_big = false;
		if (r.p != NULL)
			r.p[0] = '\0';
		cerr[0] = '\0';
		status = 0;
		cc = curl_easy_perform(h);
		if (cc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if (cc == CURLE_OK && status >= 200 && status <= 299) {
			if (openai_parse_response(r.p ? r.p : "", r.len, n, dim, out,
			                          err, errlen) != 0) {
				log_kv(LOG_WARN, "embeddings response refused",
				       "reason=%s inputs=%zu", LOG_Q(err), n);
				goto out;
			}
			rc = 0;
			goto out;
		}
		if (cc != CURLE_OK && r.too_big) {
			str_errf(err, errlen, "embeddings response is larger than %zu bytes", r.max);
			log_kv(LOG_WARN, "embeddings response too large", "limit=%zu", r.max);
			goto out;
		}
		if (cc == CURLE_OK)
			error_message(&r, key, msg, sizeof msg);
		else
			snprintf(msg, sizeof msg, "%s", cerr[0] ? cerr : curl_easy_strerror(cc));
		if (!openai_retryable(status, (int)cc) || attempt == attempts) {
			log_kv(LOG_WARN, "embeddings request failed",
			       "attempt=%d status=%ld error=%s", attempt, status, LOG_Q(msg));
			break;
		}
		ra = -1;
		if (cc == CURLE_OK && (status == 429 || status == 503) &&
		    curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			ra = ra > OPENAI_RETRY_AFTER_MAX_MS / 1000 ? OPENAI_RETRY_AFTER_MAX_MS / 1000 : ra;
		else
			ra = -1;
		delay = openai_backoff_ms(attempt, ra >= 0 ? (long)ra * 1000 : -1, jitter_rand());
		log_kv(LOG_WARN, "embeddings request failed; retrying",
		       "attempt=%d status=%ld error=%s delay_ms=%ld",
		       attempt, status, LOG_Q(msg), delay);
		sleep_ms(delay);
	}
	/* Client-safe: no address, no server text (that went to the log). */
	if (cc != CURLE_OK)
		str_errf(err, errlen, "embeddings endpoint unreachable (%s) after %d attempt%s",
		        cc == CURLE_OPERATION_TIMEDOUT ? "timed out" :
		        cc == CURLE_COULDNT_CONNECT ? "connection failed" : "transport error",
		        attempt > attempts ? attempts : attempt, attempt == 1 ? "" : "s");
	else
		str_errf(err, errlen, "embeddings endpoint answered HTTP %ld after %d attempt%s",
		        status, attempt > attempts ? attempts : attempt, attempt == 1 ? "" : "s");
out:
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	free(r.p);
	free(body);
	return rc;
}

int openai_embed(const struct config *cfg, const char *const *texts, const size_t *lens,
                 size_t n, float *out, size_t dim, char *err, size_t errlen)
{
	return openai_embed_model(cfg, cfg->openai_model, texts, lens, n, out, dim,
	                          err, errlen);
}

int openai_embed_model(const struct config *cfg, const char *model,
                       const char *const *texts, const size_t *lens, size_t n,
                       float *out, size_t dim, char *err, size_t errlen)
{
	/* Expect: empty, so a large body is not held back for a 100 Continue. */
	static const char *const fixed[] = { "Content-Type: application/json",
	                                     "Accept: application/json", "Expect:" };
	char url[URL_MAX], key[OPENAI_KEY_MAX + 1], auth[OPENAI_KEY_MAX + 32];
	const char *line;
	struct curl_slist *hdrs = NULL, *tmp;
	size_t blen, batch;
	CURL *h = NULL;
	int rc = -1;

	key[0] = '\0';
	auth[0] = '\0';
	if (n == 0)
		return 0;
	if (dim == 0 || dim > OPENAI_DIM_MAX) {
		str_errf(err, errlen, "embedding dimension %zu is out of range", dim);
		return -1;
	}
	if (model == NULL || model[0] == '\0') {
		str_errf(err, errlen, "no embeddings model named");
		return -1;
	}
	blen = strlen(cfg->openai_base_url);
	while (blen > 0 && cfg->openai_base_url[blen - 1] == '/')
		blen--;
	if (blen == 0) {
		str_errf(err, errlen, "embedding_provider = openai needs openai_base_url");
		return -1;
	}
	if ((size_t)snprintf(url, sizeof url, "%.*s/v1/embeddings", (int)blen,
	                     cfg->openai_base_url) >= sizeof url) {
		str_errf(err, errlen, "openai_base_url is too long");
		return -1;
	}
	if (cfg->openai_api_key_file[0] != '\0') {
		if (openai_read_key(cfg->openai_api_key_file, key, sizeof key, err, errlen) != 0) {
			log_kv(LOG_ERROR, "cannot use the embeddings API key", "file=%s reason=%s",
			       LOG_Q(cfg->openai_api_key_file), LOG_Q(err));
			str_errf(err, errlen, "embeddings API key is not usable");
			goto out;
		}
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
	}
	if (global_init() != 0 || (h = curl_easy_init()) == NULL) {
		str_errf(err, errlen, "cannot start the HTTP client");
		goto out;
	}
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] + 1; i++) {
		line = i < sizeof fixed / sizeof fixed[0] ? fixed[i] : auth;
		if (line[0] == '\0')
			continue;
		if ((tmp = curl_slist_append(hdrs, line)) == NULL) {
			str_errf(err, errlen, "out of memory");
			goto out;
		}
		hdrs = tmp;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sluice/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	/* A redirect would carry the key to wherever it points. */
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
	                 (long)(cfg->openai_timeout_ms < CONNECT_TIMEOUT_MAX_MS ?
	                        cfg->openai_timeout_ms : CONNECT_TIMEOUT_MAX_MS));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)cfg->openai_timeout_ms);

	batch = cfg->openai_batch_size > 0 ? (size_t)cfg->openai_batch_size : 1;
	for (size_t off = 0; off < n; off += batch) {
		size_t m = n - off < batch ? n - off : batch;
		if (embed_batch(h, cfg, model, key, texts + off, lens + off, m, out + off * dim,
		                dim, err, errlen) != 0)
			goto out;
	}
	rc = 0;
out:
	if (h != NULL)
		curl_easy_cleanup(h);
	/* curl copied the header line; these are our copies of the key */
	for (tmp = hdrs; tmp != NULL; tmp = tmp->next)
		explicit_bzero(tmp->data, strlen(tmp->data));
	curl_slist_free_all(hdrs);
	explicit_bzero(key, sizeof key);
	explicit_bzero(auth, sizeof auth);
	return rc;
}
