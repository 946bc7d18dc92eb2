/* parquet.c - a Parquet file's columns and row count from its footer.
 *
 * A Parquet file is "PAR1", column chunks, the footer (a Thrift
 * FileMetaData in the compact protocol), the footer's length as 4
 * little-endian bytes, and "PAR1" again.  Only the footer is read: the
 * schema says every column's type, and num_rows the exact row count, so no
 * page is decoded.  The Thrift reader is our own and small: it knows the few
 * fields it needs (schema elements, num_rows) and skips everything else
 * generically, with every read checked against the end of the buffer, list
 * sizes checked against the bytes left, and nesting bounded.
 *
 * Columns: one per leaf of the schema tree.  A leaf inside groups (structs)
 * is named by its path with dots ("info.geo.lat"); a LIST or MAP group, or
 * any REPEATED field, is one VARCHAR column named by its own path (its
 * values are sequences, which our types cannot hold).  nullable: the leaf or
 * a group above it is OPTIONAL (or it is repeated).  Types: see map_type. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tabular/formats.h"
#include "tabular/internal.h"
#include "tabular/parquet.h"
#include "util/str.h"

/* Thrift compact protocol type codes. */
enum {
	CT_STOP = 0, CT_TRUE = 1, CT_FALSE = 2, CT_BYTE = 3, CT_I16 = 4, CT_I32 = 5,
	CT_I64 = 6, CT_DOUBLE = 7, CT_BINARY = 8, CT_LIST = 9, CT_SET = 10, CT_MAP = 11,
	CT_STRUCT = 12,
};

/* parquet.thrift: Type, FieldRepetitionType, ConvertedType, LogicalType. */
enum { PT_BOOLEAN, PT_INT32, PT_INT64, PT_INT96, PT_FLOAT, PT_DOUBLE, PT_BYTE_ARRAY,
       PT_FLBA };
enum { REP_REQUIRED, REP_OPTIONAL, REP_REPEATED };
enum { CV_UTF8 = 0, CV_MAP = 1, CV_MAP_KEY_VALUE = 2, CV_LIST = 3, CV_ENUM = 4,
       CV_DECIMAL = 5, CV_DATE = 6, CV_TIME_MILLIS = 7, CV_TIME_MICROS = 8,
       CV_TIMESTAMP_MILLIS = 9, CV_TIMESTAMP_MICROS = 10, CV_UINT_8 = 11,
       CV_UINT_16 = 12, CV_UINT_32 = 13, CV_UINT_64 = 14, CV_INT_8 = 15,
       CV_INT_16 = 16, CV_INT_32 = 17, CV_INT_64 = 18 };
/* LogicalType is a union: the field id says which. */
enum { LT_NONE = 0, LT_STRING = 1, LT_MAP = 2, LT_LIST = 3, LT_ENUM = 4,
       LT_DECIMAL = 5, LT_DATE = 6, LT_TIME = 7, LT_TIMESTAMP = 8, LT_INTEGER = 10,
       LT_UNKNOWN = 11, LT_JSON = 12, LT_BSON = 13, LT_UUID = 14, LT_FLOAT16 = 15 };

/* The decimal precision the inferred DECIMAL type holds (tabular.h). */
#define DECIMAL_MAX_PRECISION 38

struct tr {
	const uint8_t *start, *p, *end;
	char *err;
	size_t errlen;
};

/* One SchemaElement: -1 for an absent optional field. */
struct elem {
	int type, rep, conv;
	int32_t type_length, num_children, scale, precision;
	int ltype;                           /* LT_* */
	int32_t lscale, lprecision;          /* LT_DECIMAL */
	int lbits;                           /* LT_INTEGER */
	bool lsigned;
	const uint8_t *name;
	size_t name_len;
	bool has_name;
};

static int fail(struct tr *t, const char *what)
{
	str_errf(t->err, t->errlen, "Parquet footer: %s at byte %zu", what,
	         (size_t)(t->p - t->start));
	return -1;
}

static int rd_byte(struct tr *t, uint8_t *b)
{
	if (t->p >= t->end)
		return fail(t, "truncated");
	*b = *t->p++;
	return 0;
}

static int rd_varint(struct tr *t, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;
		if (rd_byte(t, &b) != 0)
			return -1;
		if (shift == 63 && b > 1)
			return fail(t, "varint overflows 64 bits");
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return fail(t, "varint longer than 10 bytes");
}

static int64_t unzigzag(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static int rd_i64(struct tr *t, int64_t *v)
{
	uint64_t u;

	if (rd_varint(t, &u) != 0)
		return -1;
	*v = unzigzag(u);
	return 0;
}

static int rd_i32(struct tr *t, int32_t *v)
{
	uint64_t u;

	if (rd_varint(t, &u) != 0)
		return -1;
	if (u > UINT32_MAX)
		return fail(t, "i32 out of range");
	*v = (int32_t)unzigzag(u);
	return 0;
}

static int rd_binary(struct tr *t, const uint8_t **s, size_t *n)
{
	uint64_t len;

	if (rd_varint(t, &len) != 0)
		return -1;
	if (len > (uint64_t)(t->end - t->p))
		return fail(t, "string longer than the footer");
	*s = t->p;
	*n = (size_t)len;
	t->p += len;
	return 0;
}

/* A list or set header: element type and count.  Every element takes at
 * least one byte, so a count above the bytes left is a lie. */
static int rd_list(struct tr *t, int *etype, uint64_t *count)
{
	uint8_t b;

	if (rd_byte(t, &b) != 0)
		return -1;
	*etype = b & 0x0f;
	*count = b >> 4;
	if (*count == 15 && rd_varint(t, count) != 0)
		return -1;
	if (*count > (uint64_t)(t->end - t->p))
		return fail(t, "list longer than the footer");
	return 0;
}

/* A struct field header: 0 and *type = CT_STOP at the end of the struct. */
static int rd_field(struct tr *t, int16_t *last_id, int *type, int16_t *id)
{
	uint8_t b;

	if (rd_byte(t, &b) != 0)
		return -1;
	*type = b & 0x0f;
	if (*type == CT_STOP)
		return 0;
	if (b >> 4) {
		*id = (int16_t)(*last_id + (b >> 4));
	} else {
		int64_t v;
		if (rd_i64(t, &v) != 0)
			return -1;
		if (v < INT16_MIN || v > INT16_MAX)
			return fail(t, "field id out of range");
		*id = (int16_t)v;
	}
	*last_id = *id;
	return 0;
}

/* Skip one value of type; in_list: a boolean is then a byte of its own. */
static int skip(struct tr *t, int type, int depth, bool in_list)
{
	uint64_t n;
	int etype;

	if (depth > PARQUET_DEPTH_MAX)
		return fail(t, "nesting too deep");
	switch (type) {
	case CT_TRUE:
	case CT_FALSE:
		if (in_list) {
			uint8_t b;
			return rd_byte(t, &b);
		}
		return 0;
	case CT_BYTE: {
		uint8_t b;
		return rd_byte(t, &b);
	}
	case CT_I16:
	case CT_I32:
	case CT_I64:
		return rd_varint(t, &n);
	case CT_DOUBLE:
		if (t->end - t->p < 8)
			return fail(t, "truncated");
		t->p += 8;
		return 0;
	case CT_BINARY: {
		const uint8_t *s;
		size_t len;
		return rd_binary(t, &s, &len);
	}
	case CT_LIST:
	case CT_SET:
		if (rd_list(t, &etype, &n) != 0)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (skip(t, etype, depth + 1, true) != 0)
				return -1;
		return 0;
	case CT_MAP: {
		uint8_t kv;
		if (rd_varint(t, &n) != 0)
			return -1;
		if (n == 0)
			return 0;
		if (n > (uint64_t)(t->end - t->p) / 2)
			return fail(t, "map longer than the footer");
		if (rd_byte(t, &kv) != 0)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (skip(t, kv >> 4, depth + 1, true) != 0 ||
			    skip(t, kv & 0x0f, depth + 1, true) != 0)
				return -1;
		return 0;
	}
	case CT_STRUCT: {
		int16_t last = 0, id;
		int ft;
		for (;;) {
			if (rd_field(t, &last, &ft, &id) != 0)
				return -1;
			if (ft == CT_STOP)
				return 0;
			if (skip(t, ft, depth + 1, false) != 0)
				return -1;
		}
	}
	default:
		return fail(t, "unknown Thrift type");
	}
}

static int want(struct tr *t, int type, int expect)
{
	if (type == expect)
		return 0;
	return fail(t, "field of an unexpected type");
}

static int want_bool(struct tr *t, int type, bool *v)
{
	if (type != CT_TRUE && type != CT_FALSE)
		return fail(t, "field of an unexpected type");
	*v = type == CT_TRUE;
	return 0;
}

/* DecimalType {1: scale, 2: precision} and IntType {1: bitWidth (byte),
 * 2: isSigned}, inside the LogicalType union. */
static int rd_logical(struct tr *t, struct elem *e, int depth)
{
	int16_t last = 0, id;
	int ft;

	for (;;) {
		if (rd_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			return 0;
		if (ft != CT_STRUCT || (id != LT_DECIMAL && id != LT_INTEGER)) {
			if (ft == CT_STRUCT)
				e->ltype = id;
			if (skip(t, ft, depth + 1, false) != 0)
				return -1;
			continue;
		}
		e->ltype = id;
		int16_t last2 = 0, id2;
		int ft2;
		for (;;) {
			if (rd_field(t, &last2, &ft2, &id2) != 0)
				return -1;
			if (ft2 == CT_STOP)
				break;
			if (id == LT_DECIMAL && (id2 == 1 || id2 == 2)) {
				if (want(t, ft2, CT_I32) != 0 ||
				    rd_i32(t, id2 == 1 ? &e->lscale : &e->lprecision) != 0)
					return -1;
			} else if (id == LT_INTEGER && id2 == 1) {
				uint8_t b;
				if (want(t, ft2, CT_BYTE) != 0 || rd_byte(t, &b) != 0)
					return -1;
				e->lbits = (int8_t)b;
			} else if (id == LT_INTEGER && id2 == 2) {
				if (want_bool(t, ft2, &e->lsigned) != 0)
					return -1;
			} else if (skip(t, ft2, depth + 2, false) != 0) {
				return -1;
			}
		}
	}
}

static int rd_elem(struct tr *t, struct elem *e, int depth)
{
	int16_t last = 0, id;
	int ft;

	*e = (struct elem){ .type = -1, .rep = -1, .conv = -1, .type_length = -1,
	                    .num_children = -1, .scale = -1, .precision = -1,
	                    .lscale = -1, .lprecision = -1, .lbits = -1 };
	for (;;) {
		int32_t v;
		if (rd_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			break;
		switch (id) {
		case 1: case 2: case 3: case 5: case 6: case 7: case 8:
			if (want(t, ft, CT_I32) != 0 || rd_i32(t, &v) != 0)
				return -1;
			if (id == 1) e->type = v;
			else if (id == 2) e->type_length = v;
			else if (id == 3) e->rep = v;
			else if (id == 5) e->num_children = v;
			else if (id == 6) e->conv = v;
			else if (id == 7) e->scale = v;
			else e->precision = v;
			break;
		case 4:
			if (want(t, ft, CT_BINARY) != 0 || rd_binary(t, &e->name, &e->name_len) != 0)
				return -1;
			e->has_name = true;
			break;
		case 10:
			if (want(t, ft, CT_STRUCT) != 0 || rd_logical(t, e, depth + 1) != 0)
				return -1;
			break;
		default:
			if (skip(t, ft, depth + 1, false) != 0)
				return -1;
		}
	}
	if (!e->has_name)
		return fail(t, "schema element without a name");
	return 0;
}

/* The inferred type of a leaf.  An annotation counts only on a physical type
 * it fits; otherwise the physical type decides.  Decimals wider than the 38
 * digits of our DECIMAL become VARCHAR (text keeps every digit).  TIME has
 * no type of its own here: VARCHAR, as a time of day in text would be. */
static int map_type(const struct elem *e, struct infer_column *c, char *err, size_t errlen)
{
	bool is_int = e->type == PT_INT32 || e->type == PT_INT64;
	int32_t prec = -1, scale = -1;

	c->precision = c->scale = 0;
	if (e->ltype == LT_DECIMAL) {
		prec = e->lprecision;
		scale = e->lscale;
	} else if (e->conv == CV_DECIMAL) {
		prec = e->precision;
		scale = e->scale;
	}
	if ((e->ltype == LT_DECIMAL || e->conv == CV_DECIMAL) &&
	    (is_int || e->type == PT_FLBA || e->type == PT_BYTE_ARRAY)) {
		if (prec < 1 || scale < 0 || scale > prec) {
			str_errf(err, errlen, "Parquet column %s: bad decimal precision %d, scale %d",
			         c->name, (int)prec, (int)scale);
			return -1;
		}
		if (prec > DECIMAL_MAX_PRECISION) {
			c->type = INFER_VARCHAR;
			return 0;
		}
		c->type = INFER_DECIMAL;
		c->precision = prec;
		c->scale = scale;
		return 0;
	}

	switch (e->ltype) {
	case LT_STRING: case LT_ENUM: case LT_JSON: case LT_BSON: case LT_UUID:
	case LT_UNKNOWN:
		c->type = INFER_VARCHAR;
		return 0;
	case LT_DATE:
		if (e->type == PT_INT32) {
			c->type = INFER_DATE;
			return 0;
		}
		break;
	case LT_TIME:
		if (is_int) {
			c->type = INFER_VARCHAR;
			return 0;
		}
		break;
	case LT_TIMESTAMP:
		if (e->type == PT_INT64) {
			c->type = INFER_TIMESTAMP;
			return 0;
		}
		break;
	case LT_INTEGER:
		if (is_int && (e->lbits == 8 || e->lbits == 16 || e->lbits == 32 || e->lbits == 64)) {
			if (e->lbits < 32 || (e->lbits == 32 && e->lsigned)) {
				c->type = INFER_INTEGER;
			} else if (e->lbits == 32 || e->lsigned) {
				c->type = INFER_BIGINT;
			} else {        /* unsigned 64 bits: 20 digits */
				c->type = INFER_DECIMAL;
				c->precision = 20;
			}
			return 0;
		}
		break;
	case LT_FLOAT16:
		if (e->type == PT_FLBA) {
			c->type = INFER_DOUBLE;
			return 0;
		}
		break;
	default:
		break;
	}

	switch (e->conv) {
	case CV_UTF8: case CV_ENUM: case 19 /* JSON */: case 20 /* BSON */:
	case 21 /* INTERVAL */:
		if (e->type == PT_BYTE_ARRAY || e->type == PT_FLBA) {
			c->type = INFER_VARCHAR;
			return 0;
		}
		break;
	case CV_DATE:
		if (e->type == PT_INT32) {
			c->type = INFER_DATE;
			return 0;
		}
		break;
	case CV_TIME_MILLIS: case CV_TIME_MICROS:
		if (is_int) {
			c->type = INFER_VARCHAR;
			return 0;
		}
		break;
	case CV_TIMESTAMP_MILLIS: case CV_TIMESTAMP_MICROS:
		if (e->type == PT_INT64) {
			c->type = INFER_TIMESTAMP;
			return 0;
		}
		break;
	case CV_UINT_8: case CV_UINT_16: case CV_INT_8: case CV_INT_16: case CV_INT_32:
		if (is_int) {
			c->type = INFER_INTEGER;
			return 0;
		}
		break;
	case CV_UINT_32: case CV_INT_64:
		if (is_int) {
			c->type = INFER_BIGINT;
			return 0;
		}
		break;
	case CV_UINT_64:
		if (is_int) {
			c->type = INFER_DECIMAL;
			c->precision = 20;
			return 0;
		}
		break;
	default:
		break;
	}

	switch (e->type) {
	case PT_BOOLEAN: c->type = INFER_BOOLEAN; break;
	case PT_INT32: c->type = INFER_INTEGER; break;
	case PT_INT64: c->type = INFER_BIGINT; break;
	case PT_INT96: c->type = INFER_TIMESTAMP; break;      /* the legacy Impala/Hive timestamp */
	case PT_FLOAT: case PT_DOUBLE: c->type = INFER_DOUBLE; break;
	case PT_BYTE_ARRAY: case PT_FLBA: c->type = INFER_VARCHAR; break;
	default:
		str_errf(err, errlen, "Parquet column %s: unknown physical type %d", c->name, e->type);
		return -1;
	}
	return 0;
}

struct walk {
	const struct elem *el;
	size_t n, pos;
	struct infer_column *cols;
	size_t ncols;
	char *err;
	size_t errlen;
};

static bool is_sequence_group(const struct elem *e)
{
	return e->conv == CV_LIST || e->conv == CV_MAP || e->conv == CV_MAP_KEY_VALUE ||
	       e->ltype == LT_LIST || e->ltype == LT_MAP;
}

/* Step over the descendants of the group just taken (num_children of them,
 * and theirs). */
static int skip_subtree(struct walk *w, int32_t children)
{
	uint64_t need = (uint64_t)children;

	while (need > 0) {
		if (w->pos >= w->n) {
			str_errf(w->err, w->errlen, "Parquet footer: schema ends inside a group");
			return -1;
		}
		const struct elem *e = &w->el[w->pos++];
		need--;
		if (e->num_children > 0)
			need += (uint64_t)e->num_children;
	}
	return 0;
}

static int add_column(struct walk *w, const char *name, bool nullable, const struct elem *leaf)
{
	struct infer_column *c = &w->cols[w->ncols];

	memset(c, 0, sizeof *c);
	memcpy(c->name, name, strlen(name) + 1);
	c->nullable = nullable;
	if (leaf == NULL)
		c->type = INFER_VARCHAR;
	else if (map_type(leaf, c, w->err, w->errlen) != 0)
		return -1;
	w->ncols++;
	return 0;
}

static int walk_group(struct walk *w, int32_t children, const char *prefix, bool nullable,
                      int depth)
{
	char name[INFER_NAME_MAX];

	if (depth > PARQUET_DEPTH_MAX) {
		str_errf(w->err, w->errlen, "Parquet footer: schema nested too deep");
		return -1;
	}
	for (int32_t i = 0; i < children; i++) {
		if (w->pos >= w->n) {
			str_errf(w->err, w->errlen, "Parquet footer: schema ends inside a group");
			return -1;
		}
		const struct elem *e = &w->el[w->pos++];
		size_t pl = strlen(prefix), nl;
		if (!str_utf8_valid((const char *)e->name, e->name_len)) {
			str_errf(w->err, w->errlen, "Parquet footer: a column name is not valid UTF-8");
			return -1;
		}
		/* prefix.name, cut to the longest name (not inside a character) */
		memcpy(name, prefix, pl);
		if (pl && pl < sizeof name - 1)
			name[pl++] = '.';
		nl = e->name_len;
		if (nl > sizeof name - 1 - pl) {
			nl = sizeof name - 1 - pl;
			while (nl > 0 && (e->name[nl] & 0xC0) == 0x80)
				nl--;
		}
		memcpy(name + pl, e->name, nl);
		name[pl + nl] = '\0';
		bool nul = nullable || e->rep == REP_OPTIONAL || e->rep == REP_REPEATED;

		if (e->num_children > 0) {
			if (is_sequence_group(e) || e->rep == REP_REPEATED) {
				if (add_column(w, name, nul, NULL) != 0 ||
				    skip_subtree(w, e->num_children) != 0)
					return -1;
			} else if (walk_group(w, e->num_children, name, nul, depth + 1) != 0) {
				return -1;
			}
		} else if (e->type < 0) {
			str_errf(w->err, w->errlen, "Parquet column %s has no type", name);
			return -1;
		} else if (add_column(w, name, nul, e->rep == REP_REPEATED ? NULL : e) != 0) {
			return -1;
		}
	}
	return 0;
}

/* The names every reader's header gets (tabular.c). */
static int fix_names(struct infer_column *cols, size_t n, char *err, size_t errlen)
{
	struct tab_namer *m = tab_namer_new(n);
	char raw[INFER_NAME_MAX];
	int rc = -1;

	if (m == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		memcpy(raw, cols[i].name, sizeof raw);
		if (tab_namer_name(m, i, raw, strlen(raw), cols[i].name) != 0)
			goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		str_errf(err, errlen, "out of memory, or more than %d columns", TAB_COLUMNS_MAX);
	tab_namer_free(m);
	return rc;
}

int parquet_footer_parse(const unsigned char *buf, size_t len, struct infer_result *out,
                         char *err, size_t errlen)
{
	struct tr t = { .start = buf, .p = buf, .end = buf + len, .err = err, .errlen = errlen };
	struct elem *el = NULL;
	uint64_t nel = 0;
	int64_t num_rows = -1;
	bool have_schema = false;
	int16_t last = 0, id;
	int ft;
	struct walk w = { 0 };

	memset(out, 0, sizeof *out);
	if (buf == NULL || len == 0) {
		str_errf(err, errlen, "Parquet footer: empty");
		return TAB_ERR_FORMAT;
	}
	for (;;) {
		if (rd_field(&t, &last, &ft, &id) != 0)
			goto bad;
		if (ft == CT_STOP)
			break;
		if (id == 2 && !have_schema) {
			int etype;
			if (want(&t, ft, CT_LIST) != 0 || rd_list(&t, &etype, &nel) != 0)
				goto bad;
			if (etype != CT_STRUCT) {
				fail(&t, "schema is not a list of structs");
				goto bad;
			}
			if (nel == 0 || nel > PARQUET_SCHEMA_MAX) {
				str_errf(err, errlen, "Parquet footer: %llu schema elements (1 to %d allowed)",
				         (unsigned long long)nel, PARQUET_SCHEMA_MAX);
				goto bad;
			}
			el = calloc((size_t)nel, sizeof *el);
			if (el == NULL) {
				str_errf(err, errlen, "out of memory");
				goto bad;
			}
			for (uint64_t i = 0; i < nel; i++)
				if (rd_elem(&t, &el[i], 1) != 0)
					goto bad;
			have_schema = true;
		} else if (id == 3) {
			if (want(&t, ft, CT_I64) != 0 || rd_i64(&t, &num_rows) != 0)
				goto bad;
		} else if (skip(&t, ft, 1, false) != 0) {
			goto bad;
		}
	}
	if (!have_schema) {
		str_errf(err, errlen, "Parquet footer: no schema");
		goto bad;
	}
	if (num_rows < 0) {
		str_errf(err, errlen, "Parquet footer: num_rows missing or negative");
		goto bad;
	}

	/* The root's children, depth first; every element is used exactly once. */
	if (el[0].num_children < 0 || (uint64_t)el[0].num_children > nel - 1) {
		str_errf(err, errlen, "Parquet footer: the schema root has %d children of %llu elements",
		         (int)el[0].num_children, (unsigned long long)nel);
		goto bad;
	}
	w = (struct walk){ .el = el, .n = (size_t)nel, .pos = 1, .err = err, .errlen = errlen };
	w.cols = calloc((size_t)nel, sizeof *w.cols);
	if (w.cols == NULL) {
		str_errf(err, errlen, "out of memory");
		goto bad;
	}
	if (walk_group(&w, el[0].num_children, "", false, 1) != 0)
		goto bad;
	if (w.pos != w.n) {
		str_errf(err, errlen, "Parquet footer: %zu schema elements outside the tree",
		         w.n - w.pos);
		goto bad;
	}
	if (fix_names(w.cols, w.ncols, err, errlen) != 0)
		goto bad;
	free(el);
	out->cols = w.cols;
	out->ncols = w.ncols;
	out->row_count = num_rows;
	/* The schema binds every row: the types hold for all of them, though no
	 * value was read. */
	out->analyzed_rows = num_rows;
	out->stats.rows = num_rows;
	out->stats.has_header = true;
	return 0;
bad:
	free(w.cols);
	free(el);
	memset(out, 0, sizeof *out);
	return TAB_ERR_FORMAT;
}

static int pread_all(int fd, void *buf, size_t n, off_t off)
{
	size_t got = 0;

	errno = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

int parquet_infer(const char *path, struct infer_result *out, char *err, size_t errlen)
{
	int fd = -1, rc = TAB_ERR_IO;
	unsigned char head[4], tail[8], *footer = NULL;
	struct stat st;
	uint32_t flen;

	memset(out, 0, sizeof *out);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		str_errf(err, errlen, "cannot open: %s", strerror(errno));
		goto out;
	}
	rc = TAB_ERR_FORMAT;
	if (!S_ISREG(st.st_mode)) {
		str_errf(err, errlen, "not a regular file");
		goto out;
	}
	if (st.st_size == 0) {
		str_errf(err, errlen, "empty file");
		goto out;
	}
	if (st.st_size < 12) {
		str_errf(err, errlen, "not a Parquet file: %lld bytes is too short",
		         (long long)st.st_size);
		goto out;
	}
	if (pread_all(fd, head, 4, 0) != 0 || pread_all(fd, tail, 8, st.st_size - 8) != 0) {
		str_errf(err, errlen, "cannot read: %s", errno ? strerror(errno) : "short read");
		rc = TAB_ERR_IO;
		goto out;
	}
	if (memcmp(head, "PAR1", 4) != 0) {
		str_errf(err, errlen, "not a Parquet file: no PAR1 magic at the start");
		goto out;
	}
	if (memcmp(tail + 4, "PARE", 4) == 0) {
		str_errf(err, errlen, "encrypted Parquet footers are not supported");
		goto out;
	}
	if (memcmp(tail + 4, "PAR1", 4) != 0) {
		str_errf(err, errlen, "not a Parquet file, or truncated: no PAR1 magic at the end");
		goto out;
	}
	flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
	       (uint32_t)tail[3] << 24;
	if ((uint64_t)flen > (uint64_t)st.st_size - 12) {
		str_errf(err, errlen, "Parquet footer length %u is past the start of the file "
		         "(%lld bytes)", flen, (long long)st.st_size);
		goto out;
	}
	if (flen > PARQUET_FOOTER_MAX) {
		str_errf(err, errlen, "Parquet footer length %u is over the limit of %u bytes",
		         flen, PARQUET_FOOTER_MAX);
		goto out;
	}
	if (flen == 0) {
		str_errf(err, errlen, "Parquet footer: empty");
		goto out;
	}
	footer = malloc(flen);
	if (footer == NULL) {
		str_errf(err, errlen, "out of memory for a %u-byte footer", flen);
		rc = TAB_ERR_IO;
		goto out;
	}
	if (pread_all(fd, footer, flen, st.st_size - 8 - (off_t)flen) != 0) {
		str_errf(err, errlen, "cannot read the footer: %s",
		         errno ? strerror(errno) : "short read");
		rc = TAB_ERR_IO;
		goto out;
	}
	rc = parquet_footer_parse(footer, flen, out, err, errlen);
out:
	free(footer);
	if (fd >= 0)
		close(fd);
	return rc;
}
