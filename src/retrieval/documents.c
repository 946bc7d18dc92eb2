/* documents.c - POST /dataset/{id}/documents: JSON documents or uploaded
 * files, stored as rag_documents rows for `sluice work` to ingest; GET
 * them (paged) and DELETE one, which `sluice work` takes out of the index.
 *
 * Uploads are multipart/form-data (RAG_UPLOAD_MAX bytes in all, at most
 * RAG_UPLOAD_FILES_MAX files), each part held in memory while it arrives and
 * turned into text when it ends: .txt and .md as they are, .html without
 * markup, .csv one paragraph per row ("column: value" lines, read by
 * tabular/ as the storage explorer reads a CSV file), .json one paragraph
 * per array element ("path: value" lines).  The file name becomes
 * metadata.source. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include <json-c/json.h>

#include "db/db.h"
#include "db/queue.h"
#include "http/errors.h"
#include "http/multipart.h"
#include "http/pagination.h"
#include "http/request.h"
#include "http/response.h"
#include "http/validate.h"
#include "retrieval/doctext.h"
#include "retrieval/retrieval.h"
#include "tabular/tabular.h"
#include "util/arena.h"
#include "util/config.h"
#include "util/log.h"
#include "util/str.h"
#include "util/strbuf.h"
#include "util/uuid.h"
#include "util/wake.h"

#define SOURCE_MAX 1024            /* rag_documents.source */
#define FILENAME_MAX_BYTES 255

struct newdoc {
	const char *text;
	size_t len;
	const char *metadata;      /* JSON object text */
	const char *source;
};

/* --- text checks ------------------------------------------------------------------- */

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return false;
	return true;
}

/* --- HTML to text -------------------------------------------------------------------- */

static void put_utf8(struct strbuf *b, unsigned long cp)
{
	char u[4];

	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		cp = 0xFFFD;
	if (cp < 0x80) {
		u[0] = (char)cp;
		strbuf_add(b, u, 1);
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3F));
		strbuf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		strbuf_add(b, u, 3);
	} else {
		u[0] = (char)(0xF0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		strbuf_add(b, u, 4);
	}
}

/* One character reference at s (after '&'); bytes consumed, 0 if none. */
static size_t html_entity(const char *s, size_t n, struct strbuf *b)
{
	static const struct { const char *name; unsigned long cp; } named[] = {
		{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' },
		{ "apos", '\'' }, { "nbsp", ' ' }, { "mdash", 0x2014 },
		{ "ndash", 0x2013 }, { "hellip", 0x2026 }, { "copy", 0xA9 },
	};
	size_t i = 0;

	if (n > 0 && s[0] == '#') {
		unsigned long cp = 0;
		bool hex = n > 1 && (s[1] == 'x' || s[1] == 'X');
		size_t d0;

		i = hex ? 2 : 1;
		d0 = i;
		while (i < n && i < d0 + 8 &&
		       (hex ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i]))) {
			cp = cp * (hex ? 16 : 10) +
			     (unsigned long)(isdigit((unsigned char)s[i]) ? s[i] - '0'
			                     : (tolower((unsigned char)s[i]) - 'a' + 10));
			i++;
		}
		if (i == d0 || i >= n || s[i] != ';')
			return 0;
		put_utf8(b, cp);
		return i + 1;
	}
	for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
		size_t l = strlen(named[k].name);

		if (l < n && strncmp(s, named[k].name, l) == 0 && s[l] == ';') {
			put_utf8(b, named[k].cp);
			return l + 1;
		}
	}
	return 0;
}

static bool tag_is(const char *name, size_t n, const char *const *set)
{
	for (; *set != NULL; set++)
		if (strlen(*set) == n && strncasecmp(name, *set, n) == 0)
			return true;
	return false;
}

/* Markup out, text in; block elements become line breaks, script and style
 * vanish with their content, white space collapses. */
static void html_to_text(const char *s, size_t n, struct strbuf *b)
{
	static const char *const blocks[] = {
		"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5",
		"h6", "tr", "table", "section", "article", "header", "footer",
		"blockquote", "pre", "title", "dt", "dd", "hr", "nav", "main", NULL,
	};
	static const char *const skipped[] = { "script", "style", "noscript", NULL };
	bool space = false, nl = true;
	int newlines = 2;
	size_t i = 0;

	while (i < n) {
		char c = s[i];

		if (c == '<') {
			size_t j = i + 1, name0, namelen;
			bool closing = false;

			if (n - i >= 4 && strncmp(s + i, "<!--", 4) == 0) {
				const char *e = memmem(s + i + 4, n - i - 4, "-->", 3);

				i = e != NULL ? (size_t)(e - s) + 3 : n;
				continue;
			}
			if (j < n && s[j] == '/') {
				closing = true;
				j++;
			}
			name0 = j;
			while (j < n && (isalnum((unsigned char)s[j])))
				j++;
			namelen = j - name0;
			while (j < n && s[j] != '>')
				j++;
			i = j < n ? j + 1 : n;
			if (!closing && tag_is(s + name0, namelen, skipped)) {
				/* up to the matching end tag */
				while (i < n) {
					const char *e = memmem(s + i, n - i, "</", 2);

					if (e == NULL) {
						i = n;
						break;
					}
					i = (size_t)(e - s) + 2;
					if (n - i >= namelen &&
					    strncasecmp(s + i, s + name0, namelen) == 0) {
						const char *gt = memchr(s + i, '>', n - i);

						i = gt != NULL ? (size_t)(gt - s) + 1 : n;
						break;
					}
				}
				continue;
			}
			if (tag_is(s + name0, namelen, blocks)) {
				int want = tag_is(s + name0, namelen,
				    (const char *const[]){ "br", "li", "tr", "dt", "dd", NULL }) ? 1 : 2;

				while (newlines < want) {
					strbuf_add(b, "\n", 1);
					newlines++;
				}
				nl = true;
				space = false;
			} else {
				space = !nl;
			}
			continue;
		}
		if (isspace((unsigned char)c)) {
			space = !nl;
			i++;
			continue;
		}
		if (space) {
			strbuf_add(b, " ", 1);
			space = false;
		}
		nl = false;
		newlines = 0;
		if (c == '&') {
			size_t used = html_entity(s + i + 1, n - i - 1, b);

			if (used > 0) {
				i += used + 1;
				continue;
			}
		}
		strbuf_add(b, &c, 1);
		i++;
	}
}

/* --- CSV to text ---------------------------------------------------------------------- */

/* Read by tabular/ as the storage explorer reads a CSV file, with the
 * first row the header and ',' the delimiter: each row becomes one
 * paragraph of "column: value" lines (empty values left out). */
struct csv_text {
	struct strbuf *b;
	char **head;
	size_t ncols;
	long long rows;
};

static int csv_text_header(void *arg, const struct tab_cell *names, size_t n)
{
	struct csv_text *t = arg;

	if ((t->head = calloc(n > 0 ? n : 1, sizeof *t->head)) == NULL)
		return -1;
	for (; t->ncols < n; t->ncols++)
		if ((t->head[t->ncols] = strdup(names[t->ncols].text)) == NULL)
			return -1;
	return 0;
}

static int csv_text_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct csv_text *t = arg;
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		if (cells[i].len == 0 || blank(cells[i].text, cells[i].len))
			continue;
		if (any)
			strbuf_add(t->b, "\n", 1);
		if (i < t->ncols && t->head[i][0] != '\0') {
			strbuf_adds(t->b, t->head[i]);
			strbuf_add(t->b, ": ", 2);
		}
		strbuf_add(t->b, cells[i].text, cells[i].len);
		any = true;
	}
	if (any)
		strbuf_add(t->b, "\n\n", 2);
	t->rows++;
	return t->b->oom || t->b->over ? -1 : 0;
}

/* 0, or -1 with the reason in err (the text is not CSV tabular/ reads; a
 * file of blanks only is no error: it holds no text). */
static int csv_to_text(const char *s, size_t n, struct strbuf *b, char *err,
                       size_t errlen)
{
	struct csv_text t = { .b = b };
	const struct tab_sink sink = { csv_text_header, csv_text_row, &t };
	struct tab_opts o;
	char path[64];
	int fd, rc = -1;

	if (blank(s, n))
		return 0;
	/* tabular/ reads files: the upload, still in memory, becomes one. */
	if ((fd = memfd_create("rag-csv", MFD_CLOEXEC)) < 0) {
		str_errf(err, errlen, "cannot hold the file");
		return -1;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, s + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			str_errf(err, errlen, "cannot hold the file");
			goto out;
		}
		off += (size_t)w;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	tab_opts_init(&o);
	o.delimiter = ',';
	o.header_row = 0;
	snprintf(o.encoding, sizeof o.encoding, "utf-8");
	rc = tab_read(path, TAB_CSV, &o, &sink, NULL, err, errlen) == TAB_OK ? 0 : -1;
	if (b->oom || b->over)
		rc = 0;                 /* the caller answers for that */
	/* A file with only a header row still says something. */
	if (rc == 0 && t.rows == 0)
		for (size_t c = 0; c < t.ncols; c++) {
			strbuf_adds(b, t.head[c]);
			strbuf_add(b, "\n", 1);
		}
out:
	for (size_t c = 0; c < t.ncols; c++)
		free(t.head[c]);
	free(t.head);
	close(fd);
	return rc;
}

/* --- JSON to text ---------------------------------------------------------------------- */

static void json_lines(struct json_object *v, struct strbuf *path, struct strbuf *b)
{
	size_t mark = path->len;

	switch (json_object_get_type(v)) {
	case json_type_object: {
		json_object_object_foreach(v, k, val) {
			if (path->len > 0)
				strbuf_add(path, ".", 1);
			strbuf_adds(path, k);
			json_lines(val, path, b);
			path->len = mark;
			if (path->p != NULL)
				path->p[mark] = '\0';
		}
		return;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_lines(json_object_array_get_idx(v, i), path, b);
			path->len = mark;
			if (path->p != NULL)
				path->p[mark] = '\0';
		}
		return;
	case json_type_null:
		return;
	default:
		if (path->len > 0) {
			strbuf_add(b, path->p, path->len);
			strbuf_add(b, ": ", 2);
		}
		strbuf_adds(b, json_object_get_string(v));
		strbuf_add(b, "\n", 1);
	}
}

/* An array: one paragraph per element; anything else: one block.  -1 when
 * the file is not JSON (err says where). */
static int json_to_text(const char *s, size_t n, int depth, struct strbuf *b,
                        char *err, size_t errlen)
{
	struct json_object *root = NULL;
	struct strbuf path = { 0 };

	if (json_parse_bounded(s, n, depth, &root, err, errlen) != REQ_OK)
		return -1;
	if (json_object_is_type(root, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(root); i++) {
			json_lines(json_object_array_get_idx(root, i), &path, b);
			strbuf_add(b, "\n", 1);
		}
	} else {
		json_lines(root, &path, b);
	}
	strbuf_free(&path);
	json_object_put(root);
	return 0;
}

/* --- storing ------------------------------------------------------------------------------ */

struct doc_store {
	const struct rag_dataset *ds;
	const struct newdoc *docs;
	size_t n;
	const char *tenant;
	struct json_object *ids;          /* of the attempt that commits */
};

/* Multi-row INSERTs of documents (db_exec_rows): DOC_ROWS rows, or fewer
 * when DOC_BYTES of text and metadata are waiting. */
#define DOC_ROWS DB_ROWS_MAX
#define DOC_BYTES (4u << 20)
#define DOC_COLS 5
#define DOC_INSERT "INSERT INTO rag_documents (id, dataset_id, source, metadata, text, " \
	"status) VALUES "
#define DOC_TUPLE "(?, ?, ?, ?, ?, 'processing')"

/* One attempt of the transaction: it starts over with new ids each time.
 * Ids are time-ordered (version 7), so the documents' primary key grows
 * at its end instead of splitting pages all over the table. */
static int store_body(struct db *db, void *arg)
{
	struct doc_store *d = arg;
	struct db_param ps[DOC_ROWS * DOC_COLS];
	char ids[DOC_ROWS][UUID_STR_LEN];
	size_t n = 0, bytes = 0;
	int rc;

	json_object_put(d->ids);
	d->ids = json_object_new_array();
	for (size_t i = 0; i <= d->n; i++) {
		size_t len = i < d->n ? d->docs[i].len + strlen(d->docs[i].metadata) : 0;

		if (n > 0 && (i == d->n || n == DOC_ROWS || bytes + len > DOC_BYTES)) {
			if ((rc = db_exec_rows(db, DOC_INSERT, DOC_TUPLE, DOC_COLS, ps, n)) < 0)
				return rc;
			n = bytes = 0;
		}
		if (i == d->n)
			break;
		if (uuid_v7(ids[n]) != 0)
			return DB_ERR;
		struct db_param *p = ps + n * DOC_COLS;
		p[0] = (struct db_param){ .type = 's', .p = ids[n] };
		p[1] = (struct db_param){ .type = 's', .p = d->ds->id };
		p[2] = (struct db_param){ .type = 's', .p = d->docs[i].source };
		p[3] = (struct db_param){ .type = 's', .p = d->docs[i].metadata };
		p[4] = (struct db_param){ .type = 's', .p = d->docs[i].text };
		json_object_array_add(d->ids, json_object_new_string(ids[n]));
		n++;
		bytes += len;
	}
	return rag_ingest_request(db, d->ds->id, d->tenant);
}

/* Insert the documents, put the dataset back to processing and queue its
 * ingestion, in one transaction; answers 202 or the error. */
static int store_documents(struct req *r, const struct rag_dataset *ds,
                           const struct newdoc *docs, size_t n)
{
	char tenant[QUEUE_TENANT_MAX + 1];
	struct doc_store d = { ds, docs, n, tenant, NULL };
	struct json_object *o;
	int rc;

	rag_tenant(tenant, sizeof tenant, r->id.user_id);
	if ((rc = db_tx(r->db, "documents", store_body, &d)) < 0) {
		json_object_put(d.ids);
		return resp_db_error(r, rc);
	}
	wake_send(r->cfg, WAKE_WORK, "rag_ingest", NULL);
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds->id));
	json_object_object_add(o, "status", json_object_new_string("processing"));
	json_object_object_add(o, "document_ids", d.ids);
	return resp_json(r, 202, o);
}

/* --- JSON documents ------------------------------------------------------------------------ */

struct documents_in {
	struct json_object *documents;
};

const struct vfield rag_documents_body[] = {
	{ "documents", V_ARR, V_REQUIRED, 1, RAG_DOCS_PER_REQUEST, NULL, NULL,
	  VOFF(struct documents_in, documents) },
	VFIELDS_END
};

struct document_in {
	const char *text;
	struct json_object *metadata;
};

/* Each element of documents.  The text is bounded by the body's size; an
 * upload's text by RAG_UPLOAD_TEXT_MAX, which bounds this too. */
const struct vfield rag_document_body[] = {
	{ "text", V_STR, V_REQUIRED | V_BYTES | V_NONBLANK, 0, RAG_UPLOAD_TEXT_MAX, NULL, NULL,
	  VOFF(struct document_in, text) },
	{ "metadata", V_OBJ, 0, 0, RAG_METADATA_MAX, NULL, NULL,
	  VOFF(struct document_in, metadata) },
	VFIELDS_END
};

static int post_json(struct req *r, const struct rag_dataset *ds)
{
	struct documents_in in = { NULL };
	struct json_object *body, *src;
	struct newdoc *docs;
	struct verror e;
	size_t n;

	if ((body = req_json_body_or_reply(r)) == NULL)
		return -1;
	if (validate_json(rag_documents_body, body, &in, NULL, &e) != 0)
		return rag_reply_verror(r, &e);
	n = json_object_array_length(in.documents);
	docs = arena_alloc(r->arena, n * sizeof *docs);
	for (size_t i = 0; i < n; i++) {
		struct document_in d = { NULL, NULL };

		if (validate_json(rag_document_body, json_object_array_get_idx(in.documents, i),
		                  &d, NULL, &e) != 0) {
			verror_nest(&e, "documents[%zu]", i);
			return rag_reply_verror(r, &e);
		}
		docs[i].text = d.text;
		docs[i].len = strlen(d.text);
		docs[i].metadata = d.metadata != NULL ? arena_strdup(r->arena,
		    json_object_to_json_string_ext(d.metadata, JSON_C_TO_STRING_PLAIN)) : "{}";
		docs[i].source = "";
		if (d.metadata != NULL && json_object_object_get_ex(d.metadata, "source", &src) &&
		    json_object_is_type(src, json_type_string)) {
			if (json_object_get_string_len(src) > SOURCE_MAX)
				return rag_reply(r, RAG_SOURCE_TOO_LONG, i, SOURCE_MAX);
			docs[i].source = arena_strdup(r->arena, json_object_get_string(src));
		}
	}
	return store_documents(r, ds, docs, n);
}

/* --- uploads ------------------------------------------------------------------------------------ */

struct upload {
	struct req *r;
	struct newdoc docs[RAG_UPLOAD_FILES_MAX];
	size_t n;
	struct strbuf data;                 /* the current file */
	char filename[FILENAME_MAX_BYTES + 1];
	enum doc_type type;
	bool in_file;
	size_t text_total;                /* bytes of text kept so far */
};

/* The callbacks below answer a refused part themselves and return -1,
 * which stops the parser (req_multipart_or_reply then answers nothing). */

int doc_type_of(const char *name, enum doc_type *t)
{
	static const struct { const char *ext; enum doc_type t; } types[] = {
		{ ".txt", DOC_TEXT }, { ".md", DOC_TEXT }, { ".markdown", DOC_TEXT },
		{ ".html", DOC_HTML }, { ".htm", DOC_HTML }, { ".csv", DOC_CSV },
		{ ".json", DOC_JSON },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot != NULL && i < sizeof types / sizeof types[0]; i++)
		if (strcasecmp(dot, types[i].ext) == 0) {
			*t = types[i].t;
			return 0;
		}
	return -1;
}

static int on_part_begin(void *arg, const struct multipart_part *p)
{
	struct upload *u = arg;
	const char *base;

	if (p->filename == NULL)
		return rag_reply(u->r, RAG_UPLOAD_NOT_A_FILE, p->name);
	/* Browsers on some systems send a whole path: keep the last part. */
	base = p->filename;
	for (const char *c = p->filename; *c != '\0'; c++)
		if (*c == '/' || *c == '\\')
			base = c + 1;
	if (base[0] == '\0' || strlen(base) > FILENAME_MAX_BYTES ||
	    !str_utf8_valid(base, strlen(base)))
		return rag_reply(u->r, RAG_UPLOAD_FILE_NAME, base);
	if (doc_type_of(base, &u->type) != 0)
		return rag_reply(u->r, RAG_UPLOAD_FILE_TYPE, base);
	if (u->n == RAG_UPLOAD_FILES_MAX)
		return rag_reply(u->r, RAG_UPLOAD_TOO_MANY_FILES, RAG_UPLOAD_FILES_MAX);
	snprintf(u->filename, sizeof u->filename, "%s", base);
	u->data.len = 0;
	u->in_file = true;
	return 0;
}

static int on_part_data(void *arg, const char *data, size_t len)
{
	struct upload *u = arg;

	strbuf_add(&u->data, data, len);
	return u->data.oom ? resp_internal(u->r, "out of memory") : 0;
}

int doc_text(enum doc_type t, const char *src, size_t len, int json_depth,
             size_t max, char **text, size_t *textlen, char *err, size_t errlen)
{
	struct strbuf b = { .max = max };
	int rc = DOC_TEXT_OK;

	*text = NULL;
	*textlen = 0;
	/* a UTF-8 byte order mark says nothing */
	if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) {
		src += 3;
		len -= 3;
	}
	if (!str_utf8_valid(src, len))
		return DOC_TEXT_NOT_UTF8;
	switch (t) {
	case DOC_TEXT:
		strbuf_add(&b, src, len);
		break;
	case DOC_HTML:
		html_to_text(src, len, &b);
		break;
	case DOC_CSV:
		if (csv_to_text(src, len, &b, err, errlen) != 0)
			rc = DOC_TEXT_BAD_CSV;
		break;
	case DOC_JSON:
		if (json_to_text(src, len, json_depth, &b, err, errlen) != 0)
			rc = DOC_TEXT_BAD_JSON;
		break;
	}
	/* JSON paths and CSV column names repeat on every value: a small
	 * file can make a lot of text, so the bound applies to the text. */
	if (rc == DOC_TEXT_OK && b.oom)
		rc = DOC_TEXT_NO_MEMORY;
	else if (rc == DOC_TEXT_OK && b.over)
		rc = DOC_TEXT_TOO_LARGE;
	else if (rc == DOC_TEXT_OK && (b.p == NULL || blank(b.p, b.len)))
		rc = DOC_TEXT_EMPTY;
	if (rc != DOC_TEXT_OK) {
		strbuf_free(&b);
		return rc;
	}
	*text = b.p;
	*textlen = b.len;
	return DOC_TEXT_OK;
}

static int on_part_end(void *arg)
{
	struct upload *u = arg;
	struct newdoc *d = &u->docs[u->n];
	struct json_object *meta;
	char err[256], *text;
	size_t len;
	int rc;

	u->in_file = false;
	switch ((rc = doc_text(u->type, u->data.p != NULL ? u->data.p : "", u->data.len,
	                 u->r->cfg->json_max_depth, RAG_UPLOAD_TEXT_MAX - u->text_total,
	                 &text, &len, err, sizeof err))) {
	case DOC_TEXT_OK:
		break;
	case DOC_TEXT_NOT_UTF8:
		return rag_reply(u->r, RAG_UPLOAD_NOT_UTF8, u->filename);
	case DOC_TEXT_BAD_JSON:
		return rag_reply(u->r, RAG_UPLOAD_BAD_JSON, u->filename, err);
	case DOC_TEXT_BAD_CSV:
		return rag_reply(u->r, RAG_UPLOAD_BAD_CSV, u->filename, err);
	case DOC_TEXT_EMPTY:
		return rag_reply(u->r, RAG_UPLOAD_NO_TEXT, u->filename);
	case DOC_TEXT_TOO_LARGE:
		return rag_reply(u->r, RAG_UPLOAD_TEXT_TOO_LARGE, RAG_UPLOAD_TEXT_MAX,
		                 u->filename);
	default:
		return resp_internal(u->r, "out of memory");
	}
	d->text = arena_strndup(u->r->arena, text, len);
	d->len = len;
	u->text_total += len;
	free(text);
	meta = json_object_new_object();
	json_object_object_add(meta, "source", json_object_new_string(u->filename));
	d->metadata = arena_strdup(u->r->arena,
	    json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN));
	json_object_put(meta);
	d->source = arena_strdup(u->r->arena, u->filename);
	u->n++;
	return 0;
}

static int post_upload(struct req *r, const struct rag_dataset *ds)
{
	static const struct multipart_cb cb = { on_part_begin, on_part_data, on_part_end };
	struct upload *u = calloc(1, sizeof *u);
	int rc;

	if (u == NULL)
		return resp_internal(r, "out of memory");
	u->r = r;
	rc = req_multipart_or_reply(r, RAG_UPLOAD_MAX, &cb, u);
	strbuf_free(&u->data);
	if (rc == MULTIPART_ERR_STOP)
		rc = -1;                        /* a callback answered */
	else if (rc == 0 && u->n == 0)
		rc = rag_reply(r, RAG_UPLOAD_NO_FILES);
	else if (rc == 0)
		rc = store_documents(r, ds, u->docs, u->n);
	free(u);
	return rc;
}

int rag_documents_post(struct req *r)
{
	struct rag_dataset ds;

	if (rag_query_or_reply(r, NULL, NULL) != 0 ||
	    rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	if (strncasecmp(r->content_type, "multipart/", 10) == 0)
		return post_upload(r, &ds);
	return post_json(r, &ds);
}

/* --- GET /dataset/{id}/documents -------------------------------------------------------------- */

struct documents_query {
	struct page_query page;
};

const struct vfield rag_documents_query[] = {
	PAGE_QUERY_ROWS(struct documents_query, page),
	VFIELDS_END
};

static struct json_object *document_row_json(const struct db_stmt *st)
{
	struct json_object *o = json_object_new_object();
	struct json_object *meta = json_tokener_parse(db_col_str(st, 1));

	json_object_object_add(o, "document_id", json_object_new_string(db_col_str(st, 0)));
	json_object_object_add(o, "metadata", meta != NULL ? meta : json_object_new_object());
	json_object_object_add(o, "source", json_object_new_string(db_col_str(st, 2)));
	json_object_object_add(o, "status", json_object_new_string(db_col_str(st, 3)));
	json_object_object_add(o, "error", db_col_null(st, 4) ? NULL
	                       : json_object_new_string(db_col_str(st, 4)));
	json_object_object_add(o, "snippet_count", json_object_new_int64(db_col_ll(st, 5)));
	json_object_object_add(o, "created_at", rag_json_time(db_col_str(st, 6)));
	return o;
}

/* Oldest first, then by id: the order ingestion takes them. */
int rag_documents_list(struct req *r)
{
	struct documents_query q = { PAGE_QUERY_INIT };
	struct json_object *o, *arr;
	struct rag_dataset ds;
	long long total = 0;

	if (rag_query_or_reply(r, rag_documents_query, &q) != 0 ||
	    rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	if (req_count_or_reply(r, db_query(r->db, "SELECT COUNT(*) FROM rag_documents "
	    "WHERE dataset_id = ?", "s", ds.id), &total) != 0)
		return -1;
	arr = req_rows_or_reply(r, db_query(r->db, "SELECT d.id, d.metadata, d.source, "
	    "d.status, d.error, (SELECT COUNT(*) FROM rag_snippets s WHERE s.document_id "
	    "= d.id), d.created_at FROM rag_documents d WHERE d.dataset_id = ? "
	    "ORDER BY d.created_at, d.id LIMIT ? OFFSET ?", "sii", ds.id, q.page.limit,
	    page_offset(&q.page)), document_row_json);
	if (arr == NULL)
		return -1;
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "documents", arr);
	json_object_object_add(o, "pagination", pagination_json(q.page.page, q.page.limit,
	                                                        total));
	return resp_json(r, 200, o);
}

/* --- DELETE /dataset/{id}/documents/{document_id} ---------------------------------------------- */

struct doc_delete {
	const char *dataset_id, *document_id, *tenant;
	bool found;
};

/* The document and its snippets go (ON DELETE CASCADE); its ingestion, if
 * still to come, finds it gone, and one under way stores nothing (ingest.c
 * holds the row).  The index is rebuilt by an ingestion of the dataset. */
static int delete_body(struct db *db, void *arg)
{
	struct doc_delete *d = arg;
	long long rc;

	rc = db_exec(db, "DELETE FROM rag_documents WHERE id = ? AND dataset_id = ?", "ss",
	             d->document_id, d->dataset_id);
	if (rc < 0)
		return (int)rc;
	if ((d->found = rc > 0) == false)
		return 0;
	return rag_ingest_request(db, d->dataset_id, d->tenant);
}

int rag_document_delete(struct req *r)
{
	char doc_id[RAG_ID_LEN + 1], tenant[QUEUE_TENANT_MAX + 1];
	struct doc_delete d = { NULL, doc_id, tenant, false };
	struct rag_dataset ds;
	struct json_object *o;
	int rc;

	if (rag_query_or_reply(r, NULL, NULL) != 0 ||
	    rag_dataset_of_caller(r, req_param(r, "dataset_id"), &ds) != 0)
		return -1;
	if (rag_id_parse(req_param(r, "document_id"), doc_id) != 0)
		return rag_reply(r, RAG_DOCUMENT_NOT_FOUND);
	d.dataset_id = ds.id;
	rag_tenant(tenant, sizeof tenant, r->id.user_id);
	if ((rc = db_tx(r->db, "document delete", delete_body, &d)) < 0)
		return resp_db_error(r, rc);
	if (!d.found)
		return rag_reply(r, RAG_DOCUMENT_NOT_FOUND);
	wake_send(r->cfg, WAKE_WORK, "rag_ingest", NULL);
	o = json_object_new_object();
	json_object_object_add(o, "dataset_id", json_object_new_string(ds.id));
	json_object_object_add(o, "document_id", json_object_new_string(doc_id));
	json_object_object_add(o, "status", json_object_new_string("processing"));
	return resp_json(r, 202, o);
}
