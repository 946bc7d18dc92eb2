/* response.c - status line, headers and body, written once per request.
 *
 * The CGI response head nginx expects:
 *   Status: 200 OK\r\nContent-Type: ...\r\nContent-Length: N\r\n<extra>\r\n
 * followed by the body.  Unit tests have no FastCGI stream: the bytes are
 * collected in the arena and read back with resp_test_output.  A big answer
 * bypasses libfcgi's stream buffer (emit_direct). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include "http/request.h"
#include "http/response.h"
#include "util/arena.h"
#include "util/log.h"

#define RESP_WRITE_CHUNK (1024 * 1024)

/* Answers from this size on skip libfcgi's buffer (emit_direct). */
#define RESP_DIRECT_MIN (16 * 1024)
#define FCGI_VERSION_1 1
#define FCGI_STDOUT 6
#define FCGI_CONTENT_MAX 65528           /* a record's content: 16 bits, 8-aligned */
#define DIRECT_RECORDS 16                /* records per writev: 1 MB */

/* RFC 9110 token characters. */
static bool header_name_ok(const char *s)
{
	if (s == NULL || *s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) != NULL))
			return false;
	}
	return true;
}

/* No CR or LF (header injection) and no other control characters. */
static bool header_value_ok(const char *s)
{
	if (s == NULL)
		return false;
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

void resp_header(struct req *r, const char *name, const char *value)
{
	struct resp_header *h, **tail;

	if (!header_name_ok(name)) {
		log_kv(LOG_WARN, "response header dropped", "reason=bad_name");
		return;
	}
	if (!header_value_ok(value)) {
		log_kv(LOG_WARN, "response header dropped",
		       "header=%s reason=control_character", name);
		return;
	}
	/* These are written by the resp_* functions themselves. */
	if (strcasecmp(name, "Status") == 0 ||
	    strcasecmp(name, "Content-Length") == 0 ||
	    strcasecmp(name, "Content-Type") == 0) {
		log_kv(LOG_WARN, "response header dropped",
		       "header=%s reason=reserved", name);
		return;
	}
	if (r->status != 0) {
		log_kv(LOG_WARN, "response header dropped",
		       "header=%s reason=already_sent", name);
		return;
	}
	h = arena_alloc(r->arena, sizeof *h);
	h->name = arena_strdup(r->arena, name);
	h->value = arena_strdup(r->arena, value);
	h->next = NULL;
	for (tail = &r->headers; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = h;
}

/* Send n bytes to the client, or to the test capture buffer. */
static int emit(struct req *r, const char *p, size_t n)
{
	if (n == 0)
		return 0;
	if (r->out == NULL) {
		char *buf = arena_alloc(r->arena, r->test_out_len + n + 1);

		if (r->test_out_len > 0)
			memcpy(buf, r->test_out, r->test_out_len);
		memcpy(buf + r->test_out_len, p, n);
		r->test_out = buf;
		r->test_out_len += n;
		return 0;
	}
	while (n > 0) {
		size_t chunk = n > RESP_WRITE_CHUNK ? RESP_WRITE_CHUNK : n;

		if (FCGX_PutStr(p, (int)chunk, r->out) != (int)chunk)
			return -1;
		p += chunk;
		n -= chunk;
	}
	return 0;
}

/* writev until every byte is out (the connection may be non-blocking); 0
 * or -1. */
static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (errno == EINTR)
				continue;
			if ((errno == EAGAIN || errno == EWOULDBLOCK) &&
			    (poll(&p, 1, -1) >= 0 || errno == EINTR))
				continue;
			return -1;
		}
		for (; n > 0 && (size_t)w >= iov->iov_len; iov++, n--)
			w -= (ssize_t)iov->iov_len;
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* head then body as FastCGI stdout records (FastCGI 1.0, 3.3 and 5.3)
 * written straight to the connection, many per writev: through libfcgi a
 * big answer is copied into its 8 KB buffer and written 8 KB at a time.
 * Only for the first bytes of an answer, when libfcgi holds none of this
 * request's output, so the order on the wire stays; FCGX_Finish_r still
 * ends the stream and the request. */
static int emit_direct(struct req *r, const char *head, size_t hlen,
                       const char *body, size_t blen)
{
	unsigned char hdr[DIRECT_RECORDS][8];
	struct iovec iov[DIRECT_RECORDS * 3];
	unsigned id = (unsigned)r->fcgi->requestId;
	size_t off = 0, total = hlen + blen;

	while (off < total) {
		int n = 0;

		for (int k = 0; k < DIRECT_RECORDS && off < total; k++) {
			size_t len = total - off, m;
			unsigned char *h = hdr[k];

			if (len > FCGI_CONTENT_MAX)
				len = FCGI_CONTENT_MAX;
			h[0] = FCGI_VERSION_1;
			h[1] = FCGI_STDOUT;
			h[2] = (unsigned char)(id >> 8);
			h[3] = (unsigned char)id;
			h[4] = (unsigned char)(len >> 8);
			h[5] = (unsigned char)len;
			h[6] = 0;               /* no padding */
			h[7] = 0;
			iov[n++] = (struct iovec){ h, sizeof hdr[k] };
			if (off < hlen) {       /* the head, and the body after it */
				m = hlen - off < len ? hlen - off : len;
				iov[n++] = (struct iovec){ (char *)head + off, m };
				if (len > m)
					iov[n++] = (struct iovec){ (char *)body, len - m };
			} else {
				iov[n++] = (struct iovec){ (char *)body + (off - hlen), len };
			}
			off += len;
		}
		if (writev_all(r->fcgi->ipcFd, iov, n) != 0)
			return -1;
	}
	return 0;
}

/* Append to a head buffer sized beforehand. */
static void head_add(char *buf, size_t *used, const char *s)
{
	size_t n = strlen(s);

	memcpy(buf + *used, s, n);
	*used += n;
}

/* clen < 0: no Content-Length header. */
static int resp_write(struct req *r, int status, const char *content_type,
                      const char *body, size_t len, long long clen)
{
	const struct resp_header *h;
	char line[96];
	size_t cap, used = 0;
	char *head;

	if (r->status != 0) {
		log_kv(LOG_WARN, "second response refused", "status=%d first=%d",
		       status, r->status);
		return -1;
	}
	if (status < 100 || status > 999) {
		log_kv(LOG_WARN, "response refused", "reason=bad_status status=%d",
		       status);
		return -1;
	}
	if (content_type != NULL && !header_value_ok(content_type)) {
		log_kv(LOG_WARN, "response refused", "reason=bad_content_type");
		return -1;
	}

	cap = sizeof line * 2 + 32;
	if (content_type != NULL)
		cap += strlen(content_type) + sizeof "Content-Type: \r\n";
	for (h = r->headers; h != NULL; h = h->next)
		cap += strlen(h->name) + strlen(h->value) + 4;
	cap += sizeof "X-Request-Id: \r\n" + strlen(r->request_id);
	head = arena_alloc(r->arena, cap);

	snprintf(line, sizeof line, "Status: %d %s\r\n", status,
	         resp_status_text(status));
	head_add(head, &used, line);
	if (content_type != NULL) {
		head_add(head, &used, "Content-Type: ");
		head_add(head, &used, content_type);
		head_add(head, &used, "\r\n");
	}
	if (clen >= 0) {
		snprintf(line, sizeof line, "Content-Length: %lld\r\n", clen);
		head_add(head, &used, line);
	}
	/* Every answer names its request, so a caller can quote it to an
	 * operator, who finds the request's log lines by it. */
	if (r->request_id[0] != '\0') {
		head_add(head, &used, "X-Request-Id: ");
		head_add(head, &used, r->request_id);
		head_add(head, &used, "\r\n");
	}
	for (h = r->headers; h != NULL; h = h->next) {
		head_add(head, &used, h->name);
		head_add(head, &used, ": ");
		head_add(head, &used, h->value);
		head_add(head, &used, "\r\n");
	}
	head_add(head, &used, "\r\n");

	r->status = status;
	if (r->fcgi != NULL && r->out != NULL && used + len >= RESP_DIRECT_MIN
	    ? emit_direct(r, head, used, body, len) != 0
	    : emit(r, head, used) != 0 || emit(r, body, len) != 0) {
		log_kv(LOG_WARN, "response write failed", "status=%d", status);
		r->status = 499;	/* nginx's "client closed request", for the log */
		return -1;
	}
	return 0;
}

int resp_json(struct req *r, int status, struct json_object *body)
{
	const char *text;
	size_t len;
	int rc;

	if (r->status != 0) {
		log_kv(LOG_WARN, "second response refused", "status=%d first=%d",
		       status, r->status);
		json_object_put(body);
		return -1;
	}
	/* A failure of ours carries the id in its body as well: the one
	 * thing a user can send us to find what went wrong. */
	if (status >= 500 && r->request_id[0] != '\0' &&
	    json_object_is_type(body, json_type_object) &&
	    !json_object_object_get_ex(body, "request_id", NULL))
		json_object_object_add(body, "request_id",
		                       json_object_new_string(r->request_id));
	text = json_object_to_json_string_length(body,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (text == NULL) {
		json_object_put(body);
		return -1;
	}
	rc = resp_write(r, status, "application/json", text, len,
	                (long long)len);
	json_object_put(body);
	return rc;
}

int resp_raw(struct req *r, int status, const char *content_type,
             const char *body, size_t len)
{
	if (body == NULL)
		len = 0;
	return resp_write(r, status, content_type, body, len, (long long)len);
}

int resp_empty(struct req *r, int status)
{
	/* 304 repeats the validators only: a Content-Length there would
	 * describe the 200's body (RFC 9110 8.6), so none is sent. */
	return resp_write(r, status, NULL, NULL, 0,
	                  status == 204 || status == 304 ? -1 : 0);
}

int resp_detail(struct req *r, int status, const char *detail)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return -1;
	json_object_object_add(o, "detail",
	                       json_object_new_string(detail != NULL ? detail : ""));
	return resp_json(r, status, o);
}

const char *resp_status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 499: return "Client Closed Request";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default:  return "Unknown";
	}
}

const char *resp_test_output(const struct req *r, size_t *len)
{
	if (len != NULL)
		*len = r->test_out_len;
	return r->test_out != NULL ? r->test_out : "";
}
