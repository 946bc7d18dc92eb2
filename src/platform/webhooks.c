/* webhooks.c - a pipeline's webhooks: POST/GET/DELETE
 * /platform/pipeline/{pipeline_id}/webhooks[/{webhook_id}], the delivery
 * log and redelivery (webhook_deliver.c sends them).
 *
 * A URL is https:// without user info or fragment, at most 2048 bytes,
 * parsed by libcurl's own URL parser (the one that will use it).  Unless
 * webhook_allow_private is on, its host must not be (or resolve to) a
 * loopback, private or link-local address; the sender checks the address
 * it connects to again.  The secret is answered once, at the create. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/errors.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "platform/pipelines.h"
#include "platform/platform.h"
#include "platform/webhooks.h"
#include "util/aead.h"
#include "util/base64url.h"
#include "util/config.h"
#include "util/uuid.h"

#define WEBHOOK_URL_MAX 2048
#define WEBHOOK_DESCRIPTION_MAX 255
#define WEBHOOKS_MAX 10
#define WEBHOOK_SECRET_BYTES 32
#define DELIVERY_ID_LEN (4 + RUN_ID_LEN)

struct webhook_in {
	const char *url, *description;
};

#define IN(m) VOFF(struct webhook_in, m)

const struct vfield platform_webhook_body[] = {
	{ "url", V_STR, V_REQUIRED | V_BYTES, 1, WEBHOOK_URL_MAX, NULL, NULL, IN(url) },
	{ "description", V_STR, V_BYTES | V_NULL, 0, WEBHOOK_DESCRIPTION_MAX, NULL,
	  NULL, IN(description) },
	VFIELDS_END
};

struct delivery_query {
	struct page_query page;
};

const struct vfield platform_delivery_query[] = {
	PAGE_QUERY_ROWS(struct delivery_query, page),
	VFIELDS_END
};

/* --- rendering ------------------------------------------------------------ */

#define WEBHOOK_COLUMNS \
	"id, pipeline_id, url, description, " ISO_MS("created_at")

static struct json_object *webhook_render(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object(), *ev = json_object_new_array();

	json_object_object_add(o, "webhook_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "pipeline_id", json_object_new_string(db_col_str(st, 1)));
	json_object_object_add(o, "url", json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "description", db_col_null(st, 3) ? NULL :
	                       json_object_new_string(db_col_str(st, 3)));
	json_object_array_add(ev, json_object_new_string(WEBHOOK_EVENT));
	json_object_object_add(o, "events", ev);
	json_object_object_add(o, "created_at", json_object_new_string(db_col_str(st, 4)));
	return o;
}

#define DELIVERY_COLUMNS \
	"id, event_type, run_id, status, attempts, response_status, error, " \
	ISO_MS("created_at") ", " ISO_MS("last_attempt_at") ", " \
	ISO_MS("next_attempt_at") ", " ISO_MS("delivered_at")

static struct json_object *str_or_null(const struct db_stmt *st, unsigned col)
{
	return db_col_null(st, col) ? NULL : json_object_new_string(db_col_str(st, col));
}

static struct json_object *delivery_render(const struct db_stmt *st)
{
	static const char *const names[] = {
		"delivery_id", "event_type", "run_id", "status",
	};
	static const char *const times[] = {
		"created_at", "last_attempt_at", "next_attempt_at", "delivered_at",
	};
	struct json_object *o = json_object_new_object();

	for (unsigned i = 0; i < 4; i++)
		json_object_object_add(o, names[i], str_or_null(st, i));
	json_object_object_add(o, "attempts", json_object_new_int64(db_col_ll(st, 4)));
	json_object_object_add(o, "response_status", db_col_null(st, 5) ? NULL :
	                       json_object_new_int64(db_col_ll(st, 5)));
	json_object_object_add(o, "error", str_or_null(st, 6));
	for (unsigned i = 0; i < 4; i++)
		json_object_object_add(o, times[i], str_or_null(st, 7 + i));
	return o;
}

/* The one row of st rendered by row and answered with status, or the
 * not_found answer. */
static int reply_row(struct req *r, int status, struct db_stmt *st,
                     req_row_fn row, enum platform_err not_found)
{
	struct json_object *list = req_rows_or_reply(r, st, row), *one;

	if (list == NULL)
		return -1;
	if (json_object_array_length(list) == 0) {
		json_object_put(list);
		return platform_reply(r, not_found);
	}
	one = json_object_get(json_object_array_get_idx(list, 0));
	json_object_put(list);
	return resp_json(r, status, one);
}

/* --- the path ------------------------------------------------------------- */

struct hook_ref {
	char pipeline[PIPELINE_ID_LEN + 1];
	char webhook[RUN_ID_LEN + 1];
};

/* The caller's pipeline of the path (with the database at hand): 0, or -1
 * after answering (404 as GET /platform/pipeline/{id} answers). */
static int pipeline_ref_or_reply(struct req *r, struct hook_ref *h)
{
	long long n = 0;

	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), h->pipeline) != 0)
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	if (req_db_or_reply(r) == NULL ||
	    req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM pipelines "
	    "WHERE id = ? AND customer_id = ?", "ss",
	    h->pipeline, r->id.customer_id), &n) != 0)
		return -1;
	return n == 0 ? platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND) : 0;
}

/* The pipeline and the caller's webhook of the path: 0, or -1 after
 * answering. */
static int webhook_ref_or_reply(struct req *r, struct hook_ref *h)
{
	const char *id = req_param(r, "webhook_id");
	long long n = 0;

	if (pipeline_ref_or_reply(r, h) != 0)
		return -1;
	if (platform_run_id_check(id) != 0)
		return platform_reply(r, PLATFORM_WEBHOOK_NOT_FOUND);
	snprintf(h->webhook, sizeof h->webhook, "%s", id);
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM webhooks "
	    "WHERE id = ? AND pipeline_id = ? AND customer_id = ?", "sss",
	    h->webhook, h->pipeline, r->id.customer_id), &n) != 0)
		return -1;
	return n == 0 ? platform_reply(r, PLATFORM_WEBHOOK_NOT_FOUND) : 0;
}

/* --- the URL -------------------------------------------------------------- */

/* Every address host resolves to is public: 1; 0 when one is not; -1 when
 * it does not resolve. */
static int host_public(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	int ok = 1;

	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -1;
	for (const struct addrinfo *a = res; a != NULL; a = a->ai_next)
		if (!webhook_addr_public(a->ai_addr))
			ok = 0;
	freeaddrinfo(res);
	return ok;
}

/* 0, or -1 after the 400 saying what is wrong with url. */
static int url_check_or_reply(struct req *r, const char *url)
{
	char *scheme = NULL, *host = NULL, *part = NULL;
	const char *why = NULL;
	size_t hl;
	CURLU *u;
	int rc = -1;

	if ((u = curl_url()) == NULL)
		return resp_internal(r, "curl_url failed");
	if (strchr(url, ' ') != NULL ||
	    curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0') {
		why = "url is not a valid URL";
		goto out;
	}
	if (strcmp(scheme, "https") != 0 || strncmp(url, "https://", 8) != 0) {
		why = "url must start with https://";
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK) {
		why = "url must not carry user info";
		goto out;
	}
	if (curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK ||
	    strchr(url, '#') != NULL) {
		why = "url must not have a fragment";
		goto out;
	}
	if (!r->cfg->webhook_allow_private) {
		/* [::1] names the address ::1 */
		hl = strlen(host);
		if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
			memmove(host, host + 1, hl - 2);
			host[hl - 2] = '\0';
		}
		switch (host_public(host)) {
		case -1:
			why = "url's host name does not resolve";
			goto out;
		case 0:
			rc = platform_reply(r, PLATFORM_WEBHOOK_URL_PRIVATE);
			goto done;
		default:
			break;
		}
	}
	rc = 0;
	goto done;
out:
	rc = platform_reply_text(r, PLATFORM_BAD_REQUEST, why);
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(part);
	curl_url_cleanup(u);
	return rc;
}

/* "whsec_" and the base64 of 32 random bytes, or -1. */
static int secret_new(char *out, size_t cap)
{
	unsigned char raw[WEBHOOK_SECRET_BYTES];
	char *b = NULL;
	int rc = -1;

	if (RAND_bytes(raw, sizeof raw) == 1 && (b = b64_encode(raw, sizeof raw)) != NULL &&
	    (size_t)snprintf(out, cap, WEBHOOK_SECRET_PREFIX "%s", b) < cap)
		rc = 0;
	OPENSSL_cleanse(raw, sizeof raw);
	free(b);
	return rc;
}

/* --- handlers ------------------------------------------------------------- */

enum { WEBHOOK_NO_PIPELINE = 1, WEBHOOK_FULL = 2 };

struct webhook_new {
	const char *id, *customer_id;
	char pipeline[PIPELINE_ID_LEN + 1];
	const struct webhook_in *in;
	const unsigned char *sealed;
	size_t sealed_len;
};

/* One attempt: 0 inserted, WEBHOOK_NO_PIPELINE, WEBHOOK_FULL, or < 0.  The
 * pipeline row locked, and written (pipeline_touch: on Galera two creates
 * on two nodes conflict only on a row both wrote): two creates cannot both
 * see nine. */
static int webhook_create_body(struct db *db, void *arg)
{
	const struct webhook_new *w = arg;
	struct db_stmt *st;
	long long n = 0;
	int rc;

	st = db_query(db, "SELECT (SELECT COUNT(*) FROM webhooks WHERE "
	              "pipeline_id = p.id) FROM pipelines p WHERE p.id = ? AND "
	              "p.customer_id = ? FOR UPDATE", "ss", w->pipeline,
	              w->customer_id);
	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		n = db_col_ll(st, 0);
	db_done(st);
	if (rc <= 0)
		return rc < 0 ? db_last_err(db) : WEBHOOK_NO_PIPELINE;
	if (n >= WEBHOOKS_MAX)
		return WEBHOOK_FULL;
	if ((rc = pipeline_touch(db, w->pipeline)) < 0)
		return rc;
	n = db_exec(db, "INSERT INTO webhooks (id, pipeline_id, customer_id, url, "
	            "description, secret_enc) VALUES (?, ?, ?, ?, ?, ?)", "sssssb",
	            w->id, w->pipeline, w->customer_id, w->in->url,
	            w->in->description, w->sealed, w->sealed_len);
	return n < 0 ? (int)n : 0;
}

static int webhook_create(struct req *r)
{
	struct webhook_in in = { 0 };
	struct json_object *body, *o = NULL;
	char id[RUN_ID_LEN + 1], secret[80];
	unsigned char sealed[sizeof secret + AEAD_OVERHEAD];
	struct webhook_new w = { id, r->id.customer_id, "", &in, sealed, 0 };
	struct verror e;
	struct db_stmt *st;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    (body = req_json_body_or_reply(r)) == NULL)
		return -1;
	if (validate_json(platform_webhook_body, body, &in, NULL, &e) != 0)
		return platform_reply_verror(r, &e);
	if (url_check_or_reply(r, in.url) != 0)
		return -1;
	if (!r->cfg->connection_key_loaded)
		return resp_internal(r, "connection key not loaded");
	if (run_id_new(id) != 0 || secret_new(secret, sizeof secret) != 0)
		return resp_internal(r, "CSPRNG failed");
	/* Sealed as connection passwords are: the database alone cannot sign. */
	w.sealed_len = strlen(secret) + AEAD_OVERHEAD;
	if (aead_seal(r->cfg->connection_key, id, strlen(id), secret,
	              strlen(secret), sealed) != 0) {
		OPENSSL_cleanse(secret, sizeof secret);
		return resp_internal(r, "sealing the secret failed");
	}
	if (platform_pipeline_id_parse(req_param(r, "pipeline_id"), w.pipeline) != 0) {
		OPENSSL_cleanse(secret, sizeof secret);
		return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
	}
	rc = req_db_or_reply(r) == NULL ? -1
	   : db_tx(r->db, "webhook create", webhook_create_body, &w);
	if (rc != 0) {
		OPENSSL_cleanse(secret, sizeof secret);
		if (rc == WEBHOOK_NO_PIPELINE)
			return platform_reply(r, PLATFORM_PIPELINE_NOT_FOUND);
		if (rc == WEBHOOK_FULL)
			return platform_reply(r, PLATFORM_WEBHOOKS_FULL);
		return r->status != 0 ? -1 : resp_db_error(r, rc);
	}
	st = db_query(r->db, "SELECT " WEBHOOK_COLUMNS " FROM webhooks WHERE id = ?",
	              "s", id);
	if (st != NULL && db_fetch(st) == 1)
		o = webhook_render(st);
	db_done(st);
	if (o == NULL) {
		OPENSSL_cleanse(secret, sizeof secret);
		return resp_internal(r, "reading the new webhook failed");
	}
	json_object_object_add(o, "secret", json_object_new_string(secret));
	OPENSSL_cleanse(secret, sizeof secret);
	return resp_json(r, 201, o);
}

static int webhook_list(struct req *r)
{
	struct json_object *list;
	struct hook_ref h;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    pipeline_ref_or_reply(r, &h) != 0)
		return -1;
	list = req_rows_or_reply(r, db_query(r->db, "SELECT " WEBHOOK_COLUMNS
	    " FROM webhooks WHERE pipeline_id = ? AND customer_id = ? "
	    "ORDER BY created_at, id", "ss", h.pipeline, r->id.customer_id),
	    webhook_render);
	return list == NULL ? -1 : resp_json(r, 200, list);
}

static int webhook_get(struct req *r)
{
	struct hook_ref h;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    webhook_ref_or_reply(r, &h) != 0)
		return -1;
	return reply_row(r, 200, db_query(r->db, "SELECT " WEBHOOK_COLUMNS
	    " FROM webhooks WHERE id = ?", "s", h.webhook), webhook_render,
	    PLATFORM_WEBHOOK_NOT_FOUND);
}

/* The webhook and its deliveries go; the queued attempts of its pending
 * deliveries are cancelled (one already running finds its row gone). */
static int webhook_delete_body(struct db *db, void *arg)
{
	const struct hook_ref *h = arg;
	char ids[64][DELIVERY_ID_LEN + 1];
	struct db_stmt *st;
	size_t n = 0;
	long long k;
	int rc = 0;

	do {
		n = 0;
		st = db_query(db, "SELECT id FROM webhook_deliveries WHERE "
		              "webhook_id = ? AND status = 'PENDING' LIMIT 64", "s",
		              h->webhook);
		if (st == NULL)
			return db_last_err(db);
		while (n < 64 && (rc = db_fetch(st)) == 1)
			snprintf(ids[n++], sizeof ids[0], "%s", db_col_str(st, 0));
		db_done(st);
		if (rc < 0)
			return db_last_err(db);
		for (size_t i = 0; i < n; i++)
			if ((k = queue_cancel(db, WEBHOOK_KIND, ids[i])) < 0 ||
			    (k = db_exec(db, "DELETE FROM webhook_deliveries WHERE id = ?",
			                 "s", ids[i])) < 0)
				return (int)k;
	} while (n == 64);
	k = db_exec(db, "DELETE FROM webhooks WHERE id = ?", "s", h->webhook);
	return (int)k;
}

static int webhook_delete(struct req *r)
{
	struct json_object *o;
	struct hook_ref h;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    webhook_ref_or_reply(r, &h) != 0)
		return -1;
	rc = db_tx(r->db, "webhook delete", webhook_delete_body, &h);
	if (rc < 0)
		return resp_db_error(r, rc);
	if (rc == 0)
		return platform_reply(r, PLATFORM_WEBHOOK_NOT_FOUND);
	o = json_object_new_object();
	json_object_object_add(o, "webhook_id", json_object_new_string(h.webhook));
	json_object_object_add(o, "status", json_object_new_string("WEBHOOK_DELETED"));
	return resp_json(r, 200, o);
}

static int delivery_list(struct req *r)
{
	struct delivery_query q = { PAGE_QUERY_INIT };
	struct json_object *list, *o;
	struct hook_ref h;
	long long total = 0;

	if (platform_query_or_reply(r, platform_delivery_query, &q) != 0 ||
	    webhook_ref_or_reply(r, &h) != 0)
		return -1;
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM "
	    "webhook_deliveries WHERE webhook_id = ?", "s", h.webhook), &total) != 0)
		return -1;
	list = req_rows_or_reply(r, db_query(r->db, "SELECT " DELIVERY_COLUMNS
	    " FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at "
	    "DESC, id DESC LIMIT ? OFFSET ?", "sii", h.webhook, q.page.limit,
	    page_offset(&q.page)), delivery_render);
	if (list == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "deliveries", list);
	json_object_object_add(o, "pagination",
	                       pagination_json(q.page.page, q.page.limit, total));
	return resp_json(r, 200, o);
}

/* Back to PENDING, attempts 0, due now, and queued: 1; 0 unknown; 2 still
 * PENDING; < 0 enum db_err. */
struct redeliver {
	const char *webhook, *id, *customer_id;
};

static int redeliver_body(struct db *db, void *arg)
{
	const struct redeliver *d = arg;
	struct queue_new q = { .kind = WEBHOOK_KIND, .ref_id = d->id,
	                       .customer_id = d->customer_id };
	struct db_stmt *st;
	long long k;
	int rc, pending = 0;

	st = db_query(db, "SELECT status = 'PENDING' FROM webhook_deliveries WHERE "
	              "id = ? AND webhook_id = ? FOR UPDATE", "ss", d->id, d->webhook);
	if (st == NULL)
		return db_last_err(db);
	if ((rc = db_fetch(st)) == 1)
		pending = (int)db_col_ll(st, 0);
	db_done(st);
	if (rc <= 0)
		return rc < 0 ? db_last_err(db) : 0;
	if (pending)
		return 2;
	if ((k = db_exec(db, "UPDATE webhook_deliveries SET status = 'PENDING', "
	    "attempts = 0, response_status = NULL, error = NULL, last_attempt_at = "
	    "NULL, next_attempt_at = UTC_TIMESTAMP(3), delivered_at = NULL "
	    "WHERE id = ?", "s", d->id)) < 0 ||
	    (k = queue_enqueue(db, &q)) < 0)
		return (int)k;
	return 1;
}

static int delivery_redeliver(struct req *r)
{
	const char *id = req_param(r, "delivery_id");
	struct redeliver d;
	struct hook_ref h;
	int rc;

	if (platform_query_or_reply(r, NULL, NULL) != 0 ||
	    webhook_ref_or_reply(r, &h) != 0)
		return -1;
	if (id == NULL || strncmp(id, "msg_", 4) != 0 ||
	    platform_run_id_check(id + 4) != 0)
		return platform_reply(r, PLATFORM_DELIVERY_NOT_FOUND);
	d = (struct redeliver){ h.webhook, id, r->id.customer_id };
	rc = db_tx(r->db, "webhook redelivery", redeliver_body, &d);
	if (rc < 0)
		return resp_db_error(r, rc);
	if (rc == 0)
		return platform_reply(r, PLATFORM_DELIVERY_NOT_FOUND);
	if (rc == 2)
		return platform_reply(r, PLATFORM_DELIVERY_PENDING);
	return reply_row(r, 202, db_query(r->db, "SELECT " DELIVERY_COLUMNS
	    " FROM webhook_deliveries WHERE id = ?", "s", id), delivery_render,
	    PLATFORM_DELIVERY_NOT_FOUND);
}

#define HOOKS "/platform/pipeline/{pipeline_id}/webhooks"

const struct route platform_webhook_routes[] = {
	{ "POST",   HOOKS, webhook_create, ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	{ "GET",    HOOKS, webhook_list, ROUTE_AUTH_JWT, "PLATFORM.READ" },
	{ "GET",    HOOKS "/{webhook_id}", webhook_get, ROUTE_AUTH_JWT,
	  "PLATFORM.READ" },
	{ "DELETE", HOOKS "/{webhook_id}", webhook_delete, ROUTE_AUTH_JWT,
	  "PLATFORM.WRITE" },
	{ "GET",    HOOKS "/{webhook_id}/deliveries", delivery_list,
	  ROUTE_AUTH_JWT, "PLATFORM.READ" },
	{ "POST",   HOOKS "/{webhook_id}/deliveries/{delivery_id}/redeliver",
	  delivery_redeliver, ROUTE_AUTH_JWT, "PLATFORM.WRITE" },
	ROUTES_END
};
