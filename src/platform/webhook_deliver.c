/* webhook_deliver.c - the events db/run_events.c recorded when a run
 * ended, sent by `sluice work` (the webhook_deliver kind).
 *
 * The stored body is sent as it is, so every attempt and every redelivery
 * signs and sends the same bytes under the same webhook-id.  An attempt is
 * one work item: libcurl, HTTPS only, TLS verified, no redirect followed,
 * webhook_timeout_s to connect and in all, and every address it is about
 * to connect to checked again (a DNS answer may have changed since the URL
 * was accepted).  2xx is success; anything else is a failed attempt,
 * retried after webhook_retry_base_s * 2^(n-1) s up to webhook_max_attempts.
 * Neither the secret nor the URL (it may carry a token) is logged. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "db/db.h"
#include "platform/webhooks.h"
#include "util/aead.h"
#include "util/base64url.h"
#include "util/config.h"
#include "util/log.h"

/* --- addresses ------------------------------------------------------------ */

static bool v4_public(uint32_t a)
{
	static const struct { uint32_t net, mask; } refused[] = {
		{ 0x00000000, 0xff000000 },   /* 0/8 "this network" */
		{ 0x0a000000, 0xff000000 },   /* 10/8 */
		{ 0x64400000, 0xffc00000 },   /* 100.64/10 shared (CGNAT) */
		{ 0x7f000000, 0xff000000 },   /* 127/8 loopback */
		{ 0xa9fe0000, 0xffff0000 },   /* 169.254/16 link-local */
		{ 0xac100000, 0xfff00000 },   /* 172.16/12 */
		{ 0xc0000000, 0xffffff00 },   /* 192.0.0/24 protocol assignments */
		{ 0xc0a80000, 0xffff0000 },   /* 192.168/16 */
		{ 0xc6120000, 0xfffe0000 },   /* 198.18/15 benchmarking */
		{ 0xe0000000, 0xe0000000 },   /* 224/3 multicast, reserved, broadcast */
	};

	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		if ((a & refused[i].mask) == refused[i].net)
			return false;
	return true;
}

bool webhook_addr_public(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_public(ntohl(((const struct sockaddr_in *)(const void *)sa)
		                       ->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		const unsigned char *b = a->s6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a))
			return v4_public((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
			                 (uint32_t)b[14] << 8 | b[15]);
		if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) ||
		    IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a) ||
		    IN6_IS_ADDR_MULTICAST(a) || (b[0] & 0xfe) == 0xfc)
			return false;
		return true;
	}
	return false;
}

/* --- signing -------------------------------------------------------------- */

int webhook_sign(const char *secret, const char *msg_id, long long timestamp,
                 const char *body, size_t len, char *out, size_t cap)
{
	size_t plen = strlen(WEBHOOK_SECRET_PREFIX), klen = 0, hlen;
	unsigned char *key = NULL, mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char head[96], *msg = NULL, *sig = NULL;
	int rc = -1, n;

	if (strncmp(secret, WEBHOOK_SECRET_PREFIX, plen) != 0 ||
	    (key = b64_decode(secret + plen, strlen(secret + plen), &klen)) == NULL ||
	    klen == 0)
		goto out;
	/* "<msg_id>.<timestamp>." then the body, signed as one message */
	n = snprintf(head, sizeof head, "%s.%lld.", msg_id, timestamp);
	if (n < 0 || (size_t)n >= sizeof head || (msg = malloc((size_t)n + len + 1)) == NULL)
		goto out;
	hlen = (size_t)n;
	memcpy(msg, head, hlen);
	memcpy(msg + hlen, body, len);
	if (HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, hlen + len,
	         mac, &maclen) == NULL)
		goto out;
	if ((sig = b64_encode(mac, maclen)) == NULL ||
	    (size_t)snprintf(out, cap, "v1,%s", sig) >= cap)
		goto out;
	rc = 0;
out:
	if (key != NULL)
		OPENSSL_cleanse(key, klen);
	free(key);
	free(msg);
	free(sig);
	return rc;
}

int webhook_retry_delay(int base_s, int failed)
{
	long long d = base_s;

	for (int i = 1; i < failed && d < WEBHOOK_RETRY_MAX_S; i++)
		d *= 2;
	return d > WEBHOOK_RETRY_MAX_S ? WEBHOOK_RETRY_MAX_S : (int)d;
}

/* --- one attempt ---------------------------------------------------------- */

struct attempt {
	bool allow_private;
	bool refused;                   /* an address was not public */
};

static curl_socket_t open_socket(void *arg, curlsocktype purpose,
                                 struct curl_sockaddr *a)
{
	struct attempt *at = arg;

	(void)purpose;
	if (!at->allow_private && !webhook_addr_public(&a->addr)) {
		at->refused = true;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* POST body to url; the HTTP status (0 when none came) and, when it is not
 * 2xx, why into err. */
static long post(const struct config *cfg, const char *url, const char *id,
                 const char *secret, const char *body, char *err, size_t errlen)
{
	char h_id[64], h_ts[64], h_sig[128], sig[100], cerr[CURL_ERROR_SIZE] = "";
	struct attempt at = { .allow_private = cfg->webhook_allow_private };
	struct curl_slist *hdrs = NULL;
	long long now = (long long)time(NULL);
	long status = 0;
	CURLcode c;
	CURL *h;

	if (webhook_sign(secret, id, now, body, strlen(body), sig, sizeof sig) != 0) {
		snprintf(err, errlen, "the webhook's secret is not usable");
		return 0;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (h = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "libcurl could not start");
		return 0;
	}
	snprintf(h_id, sizeof h_id, "webhook-id: %s", id);
	snprintf(h_ts, sizeof h_ts, "webhook-timestamp: %lld", now);
	snprintf(h_sig, sizeof h_sig, "webhook-signature: %s", sig);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, h_id);
	hdrs = curl_slist_append(hdrs, h_ts);
	hdrs = curl_slist_append(hdrs, h_sig);
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");   /* the address checked is the one used */
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (cfg->webhook_ca_file[0] != '\0')
		curl_easy_setopt(h, CURLOPT_CAINFO, cfg->webhook_ca_file);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)cfg->webhook_timeout_s);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)cfg->webhook_timeout_s);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &at);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sluice-webhooks/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	c = curl_easy_perform(h);
	if (c == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (at.refused)
		snprintf(err, errlen, "the host resolves to a loopback, private or "
		         "link-local address");
	else if (c == CURLE_OPERATION_TIMEDOUT)
		snprintf(err, errlen, "no answer within %d s", cfg->webhook_timeout_s);
	else if (c != CURLE_OK)
		snprintf(err, errlen, "%s", cerr[0] != '\0' ? cerr : curl_easy_strerror(c));
	else if (status >= 300 && status < 400)
		snprintf(err, errlen, "HTTP %ld: redirects are not followed", status);
	else if (status < 200 || status >= 300)
		snprintf(err, errlen, "HTTP %ld", status);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return status;
}

/* The outcome of an attempt, and the next one queued when it failed with
 * attempts left; only while the delivery is still PENDING at the attempts
 * it had (a deleted webhook takes its deliveries with it). */
struct outcome {
	const struct config *cfg;
	const char *id, *customer_id;
	const char *error;              /* NULL: delivered */
	long status;
	int attempts;                   /* before this one */
};

static int outcome_body(struct db *db, void *arg)
{
	const struct outcome *o = arg;
	int n = o->attempts + 1;
	const char *st = o->error == NULL ? "SUCCEEDED"
	               : n >= o->cfg->webhook_max_attempts ? "FAILED" : "PENDING";
	int delay = webhook_retry_delay(o->cfg->webhook_retry_base_s, n);
	struct queue_new q = { .kind = WEBHOOK_KIND, .ref_id = o->id,
	                       .customer_id = o->customer_id, .delay_s = delay };
	long long k;

	k = db_exec(db, "UPDATE webhook_deliveries SET attempts = attempts + 1, "
	    "status = ?, response_status = NULLIF(?, 0), error = ?, "
	    "last_attempt_at = UTC_TIMESTAMP(3), next_attempt_at = IF(? = "
	    "'PENDING', UTC_TIMESTAMP(3) + INTERVAL ? SECOND, NULL), delivered_at "
	    "= IF(? = 'SUCCEEDED', UTC_TIMESTAMP(3), NULL) WHERE id = ? AND "
	    "status = 'PENDING' AND attempts = ?", "sississi", st,
	    (long long)o->status, o->error, st, (long long)delay, st, o->id,
	    (long long)o->attempts);
	if (k == 1 && strcmp(st, "PENDING") == 0)
		k = queue_enqueue(db, &q);
	return k < 0 ? (int)k : 0;
}

/* The sealed secret of webhook id opened into out (NUL-terminated): true,
 * or false for no key, another key, or a damaged value.  The key is read
 * here, as the runner's child reads it for a source password: sluice work
 * itself holds no key. */
static bool secret_open(const struct config *cfg, const char *id,
                        const unsigned char *sealed, size_t n, char *out, size_t cap)
{
	unsigned char key[AEAD_KEY_LEN];
	char kerr[256];
	bool ok = false;

	if (aead_key_load(cfg->connection_key_file, key, kerr, sizeof kerr) != 0)
		log_kv(LOG_ERROR, "connection key", "error=%s", LOG_Q(kerr));
	else if (n >= AEAD_OVERHEAD && n - AEAD_OVERHEAD < cap &&
	         aead_open(key, id, strlen(id), sealed, n, (unsigned char *)out) == 0) {
		out[n - AEAD_OVERHEAD] = '\0';
		ok = true;
	}
	OPENSSL_cleanse(key, sizeof key);
	return ok;
}

int webhook_deliver_work(struct work_ctx *w, const struct work_item *it,
                         char *err, size_t errlen)
{
	char url[2100] = "", secret[80] = "", why[300] = "";
	bool sealed_ok = false;
	struct outcome o = { .cfg = w->cfg, .id = it->ref_id,
	                     .customer_id = it->customer_id };
	char *body = NULL;
	struct db_stmt *st;
	int rc;

	st = db_query(w->db, "SELECT d.attempts, d.body, w.url, w.secret_enc, w.id "
	              "FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id "
	              "WHERE d.id = ? AND d.status = 'PENDING'", "s", it->ref_id);
	if (st == NULL)
		goto db_failed;
	if ((rc = db_fetch(st)) == 1) {
		o.attempts = (int)db_col_ll(st, 0);
		body = strdup(db_col_str(st, 1));
		snprintf(url, sizeof url, "%s", db_col_str(st, 2));
		sealed_ok = secret_open(w->cfg, db_col_str(st, 4),
		    (const unsigned char *)db_col_str(st, 3), db_col_len(st, 3),
		    secret, sizeof secret);
	}
	db_done(st);
	if (rc < 0)
		goto db_failed;
	if (rc == 0)
		return 0;               /* delivered, failed or deleted meanwhile */
	if (body == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!sealed_ok) {
		/* The queue tries again, then gives up: the delivery is FAILED. */
		free(body);
		snprintf(err, errlen, "the secret of the webhook of delivery %s does not "
		         "open with the configured connection key", it->ref_id);
		return -1;
	}
	o.status = post(w->cfg, url, it->ref_id, secret, body, why, sizeof why);
	OPENSSL_cleanse(secret, sizeof secret);
	free(body);
	o.error = why[0] != '\0' ? why : NULL;
	if (o.error == NULL)
		log_kv(LOG_INFO, "webhook delivered", "delivery_id=%s attempt=%d "
		       "response_status=%ld", it->ref_id, o.attempts + 1, o.status);
	else
		log_kv(LOG_WARN, "webhook attempt failed", "delivery_id=%s "
		       "attempt=%d of=%d response_status=%ld error=%s", it->ref_id,
		       o.attempts + 1, w->cfg->webhook_max_attempts, o.status,
		       LOG_Q(why));
	if (db_tx(w->db, "webhook delivery outcome", outcome_body, &o) < 0)
		goto db_failed;
	return 0;
db_failed:
	snprintf(err, errlen, "database error: %s", db_error(w->db));
	return -1;
}

int webhook_deliver_give_up(struct work_ctx *w, const struct work_item *it,
                            const char *reason)
{
	long long n = db_exec(w->db, "UPDATE webhook_deliveries SET status = "
	    "'FAILED', attempts = attempts + 1, error = ?, last_attempt_at = "
	    "UTC_TIMESTAMP(3), next_attempt_at = NULL WHERE id = ? AND status = "
	    "'PENDING'", "ss", reason, it->ref_id);

	return n < 0 ? -1 : 0;
}
