/* json.c - JSON files read as rows, streaming.
 *
 * Two layouts, told apart by the first character that is not white space:
 *   '['  an array of objects, each one row;
 *   '{'  JSON lines (objects one after another, usually one a line; blank
 *        lines are fine).
 * Each element is parsed on its own with json-c's incremental tokener, so
 * memory holds one element (at most TAB_ROW_MAX bytes of text, nesting at
 * most JSON_DEPTH_MAX), never the file.  An element that is not an object,
 * bad JSON, or text after the closing ']' is TAB_ERR_FORMAT with the line.
 *
 * Columns: nested objects are flattened to dotted names ({"a": {"b": 1}}
 * is column "a.b"); an empty nested object adds no column; arrays are kept
 * as their JSON text (VARCHAR).  The columns are the union of every row's
 * names in first-seen order, which needs the whole file before the header:
 * a first pass collects the names and counts the rows, a second hands out
 * the rows (a missing name is a null cell).  Strings are text cells,
 * numbers TAB_NUMBER with their text as written, true/false TAB_BOOL, null
 * TAB_NULL. */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "tabular/formats.h"
#include "tabular/internal.h"
#include "util/str.h"

#define JSON_DEPTH_MAX 64
#define JSON_NAME_MAX 4096     /* a flattened name, in bytes */

enum scan_state { SCAN_START, SCAN_ARRAY_FIRST, SCAN_ARRAY_NEXT, SCAN_LINES, SCAN_END };

struct jscan {
	struct tab_dec *dec;
	struct json_tokener *tok;
	char *buf;
	size_t pos, len, cap;
	bool eof;
	enum scan_state state;
	long long line;             /* 1-based line of buf[pos] */
	long long elem_line;        /* where the current element starts */
	char *err;
	size_t errlen;
};

static int scan_open(struct jscan *s, const char *path, const struct tab_opts *o, char *err,
                     size_t errlen)
{
	int rc;

	memset(s, 0, sizeof *s);
	s->err = err;
	s->errlen = errlen;
	s->line = 1;
	rc = tab_dec_open(&s->dec, path, o->encoding, err, errlen);
	if (rc != 0)
		return rc;
	s->cap = tab_dec_chunk(s->dec);
	s->buf = malloc(s->cap);
	/* json-c refuses a depth equal to its limit: the row object counts */
	s->tok = json_tokener_new_ex(JSON_DEPTH_MAX + 1);
	if (s->buf == NULL || s->tok == NULL) {
		str_errf(err, errlen, "out of memory");
		return TAB_ERR_IO;
	}
	/* RFC 8259, no comments or single quotes; the next element may follow */
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	return 0;
}

static void scan_close(struct jscan *s)
{
	tab_dec_close(s->dec);
	if (s->tok != NULL)
		json_tokener_free(s->tok);
	free(s->buf);
	s->dec = NULL;
	s->tok = NULL;
	s->buf = NULL;
}

/* More text when all is consumed.  0 (s->eof at the end), or negative. */
static int scan_fill(struct jscan *s)
{
	long n;

	if (s->pos < s->len || s->eof)
		return 0;
	n = tab_dec_read(s->dec, s->buf, s->cap, s->err, s->errlen);
	if (n < 0)
		return (int)n;
	s->pos = 0;
	s->len = (size_t)n;
	if (n == 0)
		s->eof = true;
	return 0;
}

/* Skip white space; the next character (-1 at the end), or < -1 on error. */
static int peek(struct jscan *s)
{
	for (;;) {
		int rc = scan_fill(s);

		if (rc < 0)
			return rc - 100;   /* keep apart from -1 */
		if (s->pos == s->len)
			return -1;
		char c = s->buf[s->pos];
		if (c == '\n')
			s->line++;
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return (unsigned char)c;
		s->pos++;
	}
}

static int peek_err(int c)
{
	return c + 100;
}

static void count_lines(struct jscan *s, const char *p, size_t n)
{
	const char *e = p + n;

	while ((p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		s->line++;
		p++;
	}
}

/* One element from buf[pos].  1 with *out (the caller puts it), or a
 * negative tab_err. */
static int parse_element(struct jscan *s, struct json_object **out)
{
	size_t total = 0;

	json_tokener_reset(s->tok);
	s->elem_line = s->line;
	for (;;) {
		int rc = scan_fill(s);
		struct json_object *v;
		enum json_tokener_error je;
		size_t used;

		if (rc < 0)
			return rc;
		if (s->pos == s->len) {
			str_errf(s->err, s->errlen,
			         "line %lld: the file ends inside a JSON value", s->line);
			return TAB_ERR_FORMAT;
		}
		v = json_tokener_parse_ex(s->tok, s->buf + s->pos, (int)(s->len - s->pos));
		je = json_tokener_get_error(s->tok);
		used = json_tokener_get_parse_end(s->tok);
		if (used > s->len - s->pos)
			used = s->len - s->pos;
		if (v == NULL && je != json_tokener_continue) {
			count_lines(s, s->buf + s->pos, used);
			str_errf(s->err, s->errlen, "line %lld: invalid JSON: %s", s->line,
			         json_tokener_error_desc(je));
			return TAB_ERR_FORMAT;
		}
		count_lines(s, s->buf + s->pos, used);
		s->pos += used;
		total += used;
		if (total > TAB_ROW_MAX) {
			json_object_put(v);
			str_errf(s->err, s->errlen, "line %lld: a JSON value longer than %u bytes",
			         s->elem_line, TAB_ROW_MAX);
			return TAB_ERR_FORMAT;
		}
		if (v != NULL || je == json_tokener_success) {
			if (!json_object_is_type(v, json_type_object)) {
				json_object_put(v);
				str_errf(s->err, s->errlen, "line %lld: a row must be a JSON object",
				         s->elem_line);
				return TAB_ERR_FORMAT;
			}
			*out = v;
			return 1;
		}
	}
}

/* The next row object.  1 with *out, 0 at the end, negative tab_err. */
static int scan_next(struct jscan *s, struct json_object **out)
{
	int c;

	*out = NULL;
	for (;;) {
		c = peek(s);
		if (c < -1)
			return peek_err(c);
		switch (s->state) {
		case SCAN_START:
			if (c == -1) {
				str_errf(s->err, s->errlen, "file is empty");
				return TAB_ERR_FORMAT;
			}
			if (c == '[') {
				s->pos++;
				s->state = SCAN_ARRAY_FIRST;
				continue;
			}
			if (c == '{') {
				s->state = SCAN_LINES;
				continue;
			}
			str_errf(s->err, s->errlen,
			         "line %lld: expected an array of objects or JSON lines", s->line);
			return TAB_ERR_FORMAT;
		case SCAN_ARRAY_FIRST:
			if (c == ']') {
				s->pos++;
				s->state = SCAN_END;
				continue;
			}
			if (c == -1)
				break;
			s->state = SCAN_ARRAY_NEXT;
			return parse_element(s, out);
		case SCAN_ARRAY_NEXT:
			if (c == ']') {
				s->pos++;
				s->state = SCAN_END;
				continue;
			}
			if (c == ',') {
				s->pos++;
				c = peek(s);
				if (c < -1)
					return peek_err(c);
				if (c == -1)
					break;
				return parse_element(s, out);
			}
			if (c == -1)
				break;
			str_errf(s->err, s->errlen, "line %lld: expected ',' or ']'", s->line);
			return TAB_ERR_FORMAT;
		case SCAN_LINES:
			if (c == -1)
				return 0;
			return parse_element(s, out);
		case SCAN_END:
			if (c == -1)
				return 0;
			str_errf(s->err, s->errlen, "line %lld: text after the end of the array",
			         s->line);
			return TAB_ERR_FORMAT;
		}
		str_errf(s->err, s->errlen, "line %lld: the file ends inside the array", s->line);
		return TAB_ERR_FORMAT;
	}
}

/* ---- flattening ----------------------------------------------------------- */

struct flat {
	struct tab_names *names;
	bool collect;               /* pass 1: add names; pass 2: fill cells */
	struct tab_cell *cells;     /* pass 2, one per column */
	char name[JSON_NAME_MAX];
	char *err;
	size_t errlen;
	long long line;
};

static int flat_value(struct flat *f, size_t nlen, struct json_object *v)
{
	long idx;
	bool added;
	struct tab_cell *c;

	if (f->collect) {
		/* Pass 1 sees every row, even when pass 2 stops early to count:
		 * cells are C strings, and the other formats refuse a NUL too. */
		if (json_object_is_type(v, json_type_string) &&
		    memchr(json_object_get_string(v), '\0',
		           (size_t)json_object_get_string_len(v)) != NULL) {
			str_errf(f->err, f->errlen, "line %lld: \"%s\" holds a \\u0000 (NUL) "
			         "character, which a table cell cannot store", f->line, f->name);
			return TAB_ERR_FORMAT;
		}
		if (tab_names_put(f->names, f->name, nlen, &added) < 0) {
			str_errf(f->err, f->errlen, "line %lld: more than %d columns", f->line,
			         TAB_COLUMNS_MAX);
			return TAB_ERR_FORMAT;
		}
		return 0;
	}
	idx = tab_names_find(f->names, f->name, nlen);
	if (idx < 0)
		return 0;                  /* cannot happen: pass 1 saw it */
	c = &f->cells[idx];
	c->num = 0;
	switch (json_object_get_type(v)) {
	case json_type_null:
		c->kind = TAB_NULL;
		c->text = "";
		c->len = 0;
		break;
	case json_type_boolean:
		c->kind = TAB_BOOL;
		c->num = json_object_get_boolean(v) ? 1 : 0;
		c->text = c->num != 0 ? "true" : "false";
		c->len = strlen(c->text);
		break;
	case json_type_int:
	case json_type_double:
		c->kind = TAB_NUMBER;
		c->num = json_object_get_double(v);
		c->text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
		c->len = strlen(c->text);
		break;
	case json_type_string:
		c->text = json_object_get_string(v);
		c->len = (size_t)json_object_get_string_len(v);
		c->kind = c->len == 0 ? TAB_NULL : TAB_TEXT;
		break;
	default:                           /* arrays */
		c->kind = TAB_TEXT;
		c->text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
		c->len = strlen(c->text);
		break;
	}
	return 0;
}

static int flatten(struct flat *f, size_t plen, struct json_object *obj)
{
	json_object_object_foreach(obj, key, v) {
		size_t klen = strlen(key), nlen = plen + (plen ? 1 : 0) + klen;
		int rc;

		if (nlen >= JSON_NAME_MAX) {
			str_errf(f->err, f->errlen, "line %lld: a key path longer than %d bytes",
			         f->line, JSON_NAME_MAX - 1);
			return TAB_ERR_FORMAT;
		}
		if (plen)
			f->name[plen] = '.';
		memcpy(f->name + nlen - klen, key, klen);
		f->name[nlen] = '\0';
		if (json_object_is_type(v, json_type_object))
			rc = flatten(f, nlen, v);
		else
			rc = flat_value(f, nlen, v);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- the reader ----------------------------------------------------------- */

int json_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
              struct tab_stats *stats, char *err, size_t errlen)
{
	struct jscan s;
	struct flat f = { .err = err, .errlen = errlen };
	struct tab_cell *hdr = NULL;
	struct json_object *obj = NULL;
	long long rows = 0;
	size_t n = 0;
	int rc, r;

	f.names = tab_names_new();
	if (f.names == NULL) {
		str_errf(err, errlen, "out of memory");
		return TAB_ERR_IO;
	}

	/* pass 1: the names and the row count */
	rc = scan_open(&s, path, o, err, errlen);
	if (rc != 0)
		goto out;
	f.collect = true;
	while ((r = scan_next(&s, &obj)) == 1) {
		f.line = s.elem_line;
		rc = flatten(&f, 0, obj);
		json_object_put(obj);
		obj = NULL;
		if (rc != 0)
			goto out;
		rows++;
	}
	if (r < 0) {
		rc = r;
		goto out;
	}
	str_copy(stats->encoding, sizeof stats->encoding, tab_dec_encoding(s.dec));
	scan_close(&s);

	n = tab_names_count(f.names);
	hdr = calloc(n ? n : 1, sizeof *hdr);
	f.cells = calloc(n ? n : 1, sizeof *f.cells);
	if (hdr == NULL || f.cells == NULL) {
		str_errf(err, errlen, "out of memory");
		rc = TAB_ERR_IO;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		hdr[i].kind = TAB_TEXT;
		hdr[i].text = tab_names_at(f.names, i, &hdr[i].len);
	}
	stats->has_header = true;
	r = sink->header(sink->arg, hdr, n);
	if (r < 0) {
		rc = TAB_ERR_STOP;
		goto out;
	}
	if (r == 1)
		goto out;

	/* pass 2: the rows */
	rc = scan_open(&s, path, o, err, errlen);
	if (rc != 0)
		goto out;
	f.collect = false;
	while ((r = scan_next(&s, &obj)) == 1) {
		for (size_t i = 0; i < n; i++) {
			f.cells[i].kind = TAB_NULL;
			f.cells[i].text = "";
			f.cells[i].len = 0;
			f.cells[i].num = 0;
		}
		f.line = s.elem_line;
		rc = flatten(&f, 0, obj);
		if (rc != 0)
			goto out;
		stats->rows++;
		r = sink->row(sink->arg, f.cells, n);
		json_object_put(obj);
		obj = NULL;
		if (r < 0) {
			rc = TAB_ERR_STOP;
			goto out;
		}
		if (r == 1)
			goto out;
		if (r == TAB_ROW_COUNT_ONLY) {
			/* pass 1 counted them all */
			stats->rows = rows;
			goto out;
		}
	}
	if (r < 0)
		rc = r;
out:
	json_object_put(obj);
	scan_close(&s);
	free(hdr);
	free(f.cells);
	tab_names_free(f.names);
	return rc;
}
