/* parquet.c - a Parquet file's footer: its schema as columns (for the
 * inference and for the rows), its row count, and where each row group's
 * column chunks are.
 *
 * A Parquet file is "PAR1", column chunks, the footer (a Thrift
 * FileMetaData in the compact protocol, read by thrift.c), the footer's
 * length as 4 little-endian bytes, and "PAR1" again.  The inference reads
 * the footer only: the schema says every column's type, and num_rows the
 * exact row count, so no page is decoded.
 *
 * Columns: one per leaf of the schema tree.  A leaf inside groups (structs)
 * is named by its path with dots ("info.geo.lat"); a LIST or MAP group, or
 * any REPEATED field, is one VARCHAR column named by its own path (its
 * values are sequences, written as JSON text by parquet_rows.c).  nullable:
 * the leaf or a group above it is OPTIONAL (or it is repeated).  Types: see
 * leaf_type. */
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
#include "tabular/thrift.h"
#include "util/str.h"

/* parquet.thrift: ConvertedType, LogicalType. */
enum { CV_UTF8 = 0, CV_MAP = 1, CV_MAP_KEY_VALUE = 2, CV_LIST = 3, CV_ENUM = 4,
       CV_DECIMAL = 5, CV_DATE = 6, CV_TIME_MILLIS = 7, CV_TIME_MICROS = 8,
       CV_TIMESTAMP_MILLIS = 9, CV_TIMESTAMP_MICROS = 10, CV_UINT_8 = 11,
       CV_UINT_16 = 12, CV_UINT_32 = 13, CV_UINT_64 = 14, CV_INT_8 = 15,
       CV_INT_16 = 16, CV_INT_32 = 17, CV_INT_64 = 18, CV_JSON = 19, CV_BSON = 20,
       CV_INTERVAL = 21 };
/* LogicalType is a union: the field id says which. */
enum { LT_NONE = 0, LT_STRING = 1, LT_MAP = 2, LT_LIST = 3, LT_ENUM = 4,
       LT_DECIMAL = 5, LT_DATE = 6, LT_TIME = 7, LT_TIMESTAMP = 8, LT_INTEGER = 10,
       LT_UNKNOWN = 11, LT_JSON = 12, LT_BSON = 13, LT_UUID = 14, LT_FLOAT16 = 15 };

/* The decimal precision the inferred DECIMAL type holds (tabular.h). */
#define DECIMAL_MAX_PRECISION 38

/* One SchemaElement: -1 for an absent optional field. */
struct elem {
	int type, rep, conv;
	int32_t type_length, num_children, scale, precision;
	int ltype;                           /* LT_* */
	int32_t lscale, lprecision;          /* LT_DECIMAL */
	int lbits;                           /* LT_INTEGER */
	bool lsigned;
	int64_t lunit;                       /* LT_TIME, LT_TIMESTAMP: 1000, 10^6, 10^9 */
	const uint8_t *name;
	size_t name_len;
	bool has_name;
};

/* TimeUnit, a union of empty structs: MILLIS (1), MICROS (2), NANOS (3). */
static int rd_time_unit(struct thrift *t, struct elem *e, int depth)
{
	int16_t last = 0, id;
	int ft;

	for (;;) {
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			return 0;
		if (ft == CT_STRUCT && id >= 1 && id <= 3)
			e->lunit = id == 1 ? 1000 : id == 2 ? 1000000 : 1000000000;
		if (thrift_skip(t, ft, depth + 1, false) != 0)
			return -1;
	}
}

/* Inside the LogicalType union: DecimalType {1: scale, 2: precision},
 * IntType {1: bitWidth (byte), 2: isSigned}, TimeType and TimestampType
 * {1: isAdjustedToUTC, 2: unit}. */
static int rd_logical_fields(struct thrift *t, struct elem *e, int16_t which, int depth)
{
	int16_t last = 0, id;
	int ft;

	for (;;) {
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			return 0;
		if (which == LT_DECIMAL && (id == 1 || id == 2)) {
			if (thrift_field_i32(t, ft, id == 1 ? &e->lscale : &e->lprecision) != 0)
				return -1;
		} else if (which == LT_INTEGER && id == 1) {
			uint8_t b;
			if (thrift_want(t, ft, CT_BYTE) != 0 || thrift_byte(t, &b) != 0)
				return -1;
			e->lbits = (int8_t)b;
		} else if (which == LT_INTEGER && id == 2) {
			if (thrift_want_bool(t, ft, &e->lsigned) != 0)
				return -1;
		} else if ((which == LT_TIME || which == LT_TIMESTAMP) && id == 2 &&
		           ft == CT_STRUCT) {
			if (rd_time_unit(t, e, depth + 1) != 0)
				return -1;
		} else if (thrift_skip(t, ft, depth + 1, false) != 0) {
			return -1;
		}
	}
}

static int rd_logical(struct thrift *t, struct elem *e, int depth)
{
	int16_t last = 0, id;
	int ft;

	for (;;) {
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			return 0;
		if (ft != CT_STRUCT) {
			if (thrift_skip(t, ft, depth + 1, false) != 0)
				return -1;
			continue;
		}
		e->ltype = id;
		if (rd_logical_fields(t, e, id, depth + 1) != 0)
			return -1;
	}
}

static int rd_elem(struct thrift *t, struct elem *e, int depth)
{
	int16_t last = 0, id;
	int ft;

	*e = (struct elem){ .type = -1, .rep = -1, .conv = -1, .type_length = -1,
	                    .num_children = -1, .scale = -1, .precision = -1,
	                    .lscale = -1, .lprecision = -1, .lbits = -1 };
	for (;;) {
		int32_t v;
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			break;
		switch (id) {
		case 1: case 2: case 3: case 5: case 6: case 7: case 8:
			if (thrift_field_i32(t, ft, &v) != 0)
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
			if (thrift_want(t, ft, CT_BINARY) != 0 ||
			    thrift_binary(t, &e->name, &e->name_len) != 0)
				return -1;
			e->has_name = true;
			break;
		case 10:
			if (thrift_want(t, ft, CT_STRUCT) != 0 || rd_logical(t, e, depth + 1) != 0)
				return -1;
			break;
		default:
			if (thrift_skip(t, ft, depth + 1, false) != 0)
				return -1;
		}
	}
	if (!e->has_name)
		return thrift_fail(t, "schema element without a name");
	return 0;
}

static void set_type(struct infer_column *c, struct pq_node *n, enum infer_type type,
                     enum pq_kind kind)
{
	c->type = type;
	n->kind = kind;
}

/* The kind of bytes whose annotation says text, a UUID, ...; of other
 * physical types, as the physical type says. */
static enum pq_kind physical_kind(int type)
{
	switch (type) {
	case PT_BOOLEAN: return PQ_BOOL;
	case PT_INT32: case PT_INT64: return PQ_INT;
	case PT_INT96: return PQ_INT96;
	case PT_FLOAT: return PQ_FLOAT;
	case PT_DOUBLE: return PQ_DOUBLE;
	default: return PQ_TEXT;
	}
}

/* The inferred type of a leaf, and how its values are written.  An
 * annotation counts only on a physical type it fits; otherwise the
 * physical type decides.  Decimals wider than the 38 digits of our DECIMAL
 * become VARCHAR (text keeps every digit).  TIME has no type of its own
 * here: VARCHAR, as a time of day in text would be. */
static int leaf_type(const struct elem *e, struct infer_column *c, struct pq_node *n,
                     char *err, size_t errlen)
{
	bool is_int = e->type == PT_INT32 || e->type == PT_INT64;
	bool is_bytes = e->type == PT_FLBA || e->type == PT_BYTE_ARRAY;
	int32_t prec = -1, scale = -1;

	c->precision = c->scale = 0;
	if (e->ltype == LT_DECIMAL) {
		prec = e->lprecision;
		scale = e->lscale;
	} else if (e->conv == CV_DECIMAL) {
		prec = e->precision;
		scale = e->scale;
	}
	if ((e->ltype == LT_DECIMAL || e->conv == CV_DECIMAL) && (is_int || is_bytes)) {
		if (prec < 1 || scale < 0 || scale > prec) {
			str_errf(err, errlen, "Parquet column %s: bad decimal precision %d, scale %d",
			         c->name, (int)prec, (int)scale);
			return -1;
		}
		n->scale = scale;
		if (prec > DECIMAL_MAX_PRECISION) {
			set_type(c, n, INFER_VARCHAR, PQ_DECIMAL);
			return 0;
		}
		set_type(c, n, INFER_DECIMAL, PQ_DECIMAL);
		c->precision = prec;
		c->scale = scale;
		return 0;
	}

	switch (e->ltype) {
	case LT_UUID:
		if (e->type == PT_FLBA && e->type_length == 16) {
			set_type(c, n, INFER_VARCHAR, PQ_UUID);
			return 0;
		}
		/* fall through */
	case LT_STRING: case LT_ENUM: case LT_JSON: case LT_BSON: case LT_UNKNOWN:
		set_type(c, n, INFER_VARCHAR, physical_kind(e->type));
		return 0;
	case LT_DATE:
		if (e->type == PT_INT32) {
			set_type(c, n, INFER_DATE, PQ_DATE);
			return 0;
		}
		break;
	case LT_TIME:
		if (is_int && e->lunit > 0) {
			set_type(c, n, INFER_VARCHAR, PQ_TIME);
			n->unit = e->lunit;
			return 0;
		}
		break;
	case LT_TIMESTAMP:
		if (e->type == PT_INT64 && e->lunit > 0) {
			set_type(c, n, INFER_TIMESTAMP, PQ_TIMESTAMP);
			n->unit = e->lunit;
			return 0;
		}
		break;
	case LT_INTEGER:
		if (is_int && (e->lbits == 8 || e->lbits == 16 || e->lbits == 32 || e->lbits == 64)) {
			enum pq_kind k = e->lsigned ? PQ_INT : PQ_UINT;
			if (e->lbits < 32 || (e->lbits == 32 && e->lsigned)) {
				set_type(c, n, INFER_INTEGER, k);
			} else if (e->lbits == 32 || e->lsigned) {
				set_type(c, n, INFER_BIGINT, k);
			} else {        /* unsigned 64 bits: 20 digits */
				set_type(c, n, INFER_DECIMAL, k);
				c->precision = 20;
			}
			return 0;
		}
		break;
	case LT_FLOAT16:
		if (e->type == PT_FLBA && e->type_length == 2) {
			set_type(c, n, INFER_DOUBLE, PQ_FLOAT16);
			return 0;
		}
		break;
	default:
		break;
	}

	switch (e->conv) {
	case CV_INTERVAL:
		if (e->type == PT_FLBA && e->type_length == 12) {
			set_type(c, n, INFER_VARCHAR, PQ_INTERVAL);
			return 0;
		}
		/* fall through */
	case CV_UTF8: case CV_ENUM: case CV_JSON: case CV_BSON:
		if (is_bytes) {
			set_type(c, n, INFER_VARCHAR, PQ_TEXT);
			return 0;
		}
		break;
	case CV_DATE:
		if (e->type == PT_INT32) {
			set_type(c, n, INFER_DATE, PQ_DATE);
			return 0;
		}
		break;
	case CV_TIME_MILLIS: case CV_TIME_MICROS:
		if (is_int) {
			set_type(c, n, INFER_VARCHAR, PQ_TIME);
			n->unit = e->conv == CV_TIME_MILLIS ? 1000 : 1000000;
			return 0;
		}
		break;
	case CV_TIMESTAMP_MILLIS: case CV_TIMESTAMP_MICROS:
		if (e->type == PT_INT64) {
			set_type(c, n, INFER_TIMESTAMP, PQ_TIMESTAMP);
			n->unit = e->conv == CV_TIMESTAMP_MILLIS ? 1000 : 1000000;
			return 0;
		}
		break;
	case CV_UINT_8: case CV_UINT_16: case CV_INT_8: case CV_INT_16: case CV_INT_32:
		if (is_int) {
			set_type(c, n, INFER_INTEGER, e->conv <= CV_UINT_16 ? PQ_UINT : PQ_INT);
			return 0;
		}
		break;
	case CV_UINT_32: case CV_INT_64:
		if (is_int) {
			set_type(c, n, INFER_BIGINT, e->conv == CV_UINT_32 ? PQ_UINT : PQ_INT);
			return 0;
		}
		break;
	case CV_UINT_64:
		if (is_int) {
			set_type(c, n, INFER_DECIMAL, PQ_UINT);
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
	n->kind = physical_kind(e->type);
	return 0;
}

/* ---- the schema tree -------------------------------------------------- */

struct walk {
	const struct elem *el;
	struct pq_meta *m;
	size_t n, pos;
	struct infer_column *icols;      /* parallel to m->cols */
	char *err;
	size_t errlen;
};

static bool is_sequence_group(const struct elem *e)
{
	return e->conv == CV_LIST || e->conv == CV_MAP || e->conv == CV_MAP_KEY_VALUE ||
	       e->ltype == LT_LIST || e->ltype == LT_MAP;
}

/* name cut to INFER_NAME_MAX - 1 bytes, not inside a character */
static void cut_name(char *out, size_t cap, const char *prefix, const uint8_t *s, size_t n)
{
	size_t pl = strlen(prefix);

	memcpy(out, prefix, pl);
	if (pl && pl < cap - 1)
		out[pl++] = '.';
	if (n > cap - 1 - pl) {
		n = cap - 1 - pl;
		while (n > 0 && (s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(out + pl, s, n);
	out[pl + n] = '\0';
}

/* The node at w->pos and its subtree: levels, leaves, and (when cols) the
 * columns it makes.  prefix: the dotted path above it. */
static int walk_node(struct walk *w, size_t parent, const char *prefix, int def, int rep,
                     bool nullable, bool cols, int depth)
{
	struct pq_meta *m = w->m;
	size_t at = w->pos;
	const struct elem *e = &w->el[at];
	struct pq_node *nd = &m->nodes[at];
	char path[INFER_NAME_MAX];

	if (depth > PARQUET_DEPTH_MAX) {
		str_errf(w->err, w->errlen, "Parquet footer: schema nested too deep");
		return -1;
	}
	w->pos++;
	if (!str_utf8_valid((const char *)e->name, e->name_len)) {
		str_errf(w->err, w->errlen, "Parquet footer: a column name is not valid UTF-8");
		return -1;
	}
	cut_name(nd->name, sizeof nd->name, "", e->name, e->name_len);
	cut_name(path, sizeof path, prefix, e->name, e->name_len);
	nd->rep = e->rep == REP_OPTIONAL || e->rep == REP_REPEATED ? e->rep : REP_REQUIRED;
	nd->def_level = def + (nd->rep != REP_REQUIRED);
	nd->rep_level = rep + (nd->rep == REP_REPEATED);
	nd->type = e->num_children > 0 ? -1 : e->type;
	nd->type_length = e->type_length;
	nd->nchildren = e->num_children > 0 ? e->num_children : 0;
	nd->is_list = e->conv == CV_LIST || e->ltype == LT_LIST;
	nd->is_map = e->conv == CV_MAP || e->conv == CV_MAP_KEY_VALUE || e->ltype == LT_MAP;
	nd->first_leaf = m->nleaves;
	nd->parent = parent;
	nullable = nullable || nd->rep != REP_REQUIRED;

	bool nested = nd->rep == REP_REPEATED || (e->num_children > 0 && is_sequence_group(e));
	if (cols && nested) {
		struct pq_column *c = &m->cols[m->ncols];
		struct infer_column *ic = &w->icols[m->ncols++];
		c->node = at;
		c->nested = true;
		memcpy(c->path, path, sizeof path);
		memcpy(ic->name, path, sizeof path);
		ic->type = INFER_VARCHAR;
		ic->nullable = nullable;
		cols = false;
	}
	if (e->num_children > 0) {
		for (int32_t i = 0; i < e->num_children; i++) {
			if (w->pos >= w->n) {
				str_errf(w->err, w->errlen, "Parquet footer: schema ends inside a group");
				return -1;
			}
			if (walk_node(w, at, path, nd->def_level, nd->rep_level, nullable, cols,
			              depth + 1) != 0)
				return -1;
		}
	} else {
		if (e->type < 0) {
			str_errf(w->err, w->errlen, "Parquet column %s has no type", path);
			return -1;
		}
		struct infer_column scratch, *ic = &scratch;
		memset(&scratch, 0, sizeof scratch);
		memcpy(scratch.name, path, sizeof path);
		if (cols) {
			struct pq_column *c = &m->cols[m->ncols];
			ic = &w->icols[m->ncols++];
			c->node = at;
			memcpy(c->path, path, sizeof path);
			memcpy(ic->name, path, sizeof path);
			ic->nullable = nullable;
		}
		/* inside a nested column a leaf's annotation only shapes its
		 * JSON: one that does not fit leaves the physical type */
		if (leaf_type(e, ic, nd, cols ? w->err : NULL, cols ? w->errlen : 0) != 0) {
			if (cols)
				return -1;
			nd->kind = physical_kind(e->type);
		}
		m->leaves[m->nleaves++] = at;
	}
	nd->nleaves = m->nleaves - nd->first_leaf;
	nd->next = w->pos;
	return 0;
}

/* The names every reader's header gets (tabular.c). */
static int fix_names(struct infer_column *cols, size_t n, char *err, size_t errlen)
{
	struct tab_namer *nm = tab_namer_new(n);
	char raw[INFER_NAME_MAX];
	int rc = -1;

	if (nm == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		memcpy(raw, cols[i].name, sizeof raw);
		if (tab_namer_name(nm, i, raw, strlen(raw), cols[i].name) != 0)
			goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		str_errf(err, errlen, "out of memory, or more than %d columns", TAB_COLUMNS_MAX);
	tab_namer_free(nm);
	return rc;
}

/* ---- row groups -------------------------------------------------------- */

/* ColumnMetaData {1: type, 4: codec, 5: num_values, 7: total_compressed_size,
 * 9: data_page_offset, 11: dictionary_page_offset}. */
static int rd_column_meta(struct thrift *t, const struct pq_node *leaf, struct pq_chunk *c)
{
	int16_t last = 0, id;
	int ft;
	int32_t type = -1, codec = -1;
	int64_t num = -1, size = -1, data = -1, dict = -1;

	for (;;) {
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			break;
		int rc = id == 1 ? thrift_field_i32(t, ft, &type)
		       : id == 4 ? thrift_field_i32(t, ft, &codec)
		       : id == 5 ? thrift_field_i64(t, ft, &num)
		       : id == 7 ? thrift_field_i64(t, ft, &size)
		       : id == 9 ? thrift_field_i64(t, ft, &data)
		       : id == 11 ? thrift_field_i64(t, ft, &dict)
		       : thrift_skip(t, ft, 4, false);
		if (rc != 0)
			return -1;
	}
	if (type != leaf->type)
		return thrift_fail(t, "a column chunk's type differs from its schema");
	if (num < 0 || size < 0 || data < 0)
		return thrift_fail(t, "a column chunk without its size, offset or value count");
	c->codec = codec;
	c->num_values = num;
	/* A dictionary page comes first; some writers put 0 for none. */
	c->start = (uint64_t)(dict > 0 && dict < data ? dict : data);
	c->size = (uint64_t)size;
	return 0;
}

/* ColumnChunk {1: file_path, 3: meta_data}. */
static int rd_column_chunk(struct thrift *t, const struct pq_node *leaf, struct pq_chunk *c)
{
	int16_t last = 0, id;
	int ft;
	bool have = false;

	for (;;) {
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			break;
		if (id == 1)
			return thrift_fail(t, "column chunks in other files are not supported");
		if (id == 3) {
			if (thrift_want(t, ft, CT_STRUCT) != 0 || rd_column_meta(t, leaf, c) != 0)
				return -1;
			have = true;
		} else if (thrift_skip(t, ft, 3, false) != 0) {
			return -1;
		}
	}
	if (!have)
		return thrift_fail(t, "a column chunk without its metadata");
	return 0;
}

/* RowGroup {1: columns, 3: num_rows}, appended to m. */
static int rd_row_group(struct thrift *t, struct pq_meta *m)
{
	int16_t last = 0, id;
	int ft;
	int64_t rows = -1;
	bool have = false;
	struct pq_chunk *chunks = m->chunks + m->nrg * m->nleaves;

	for (;;) {
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			break;
		if (id == 1 && !have) {
			int etype;
			uint64_t n;
			if (thrift_want(t, ft, CT_LIST) != 0 || thrift_list(t, &etype, &n) != 0)
				return -1;
			if (etype != CT_STRUCT || n != m->nleaves)
				return thrift_fail(t, "a row group's columns differ from the schema's");
			for (size_t i = 0; i < m->nleaves; i++)
				if (rd_column_chunk(t, &m->nodes[m->leaves[i]], &chunks[i]) != 0)
					return -1;
			have = true;
		} else if (id == 3) {
			if (thrift_field_i64(t, ft, &rows) != 0)
				return -1;
		} else if (thrift_skip(t, ft, 2, false) != 0) {
			return -1;
		}
	}
	if (!have || rows < 0)
		return thrift_fail(t, "a row group without its columns or row count");
	m->rg_rows[m->nrg++] = rows;
	return 0;
}

static int rd_row_groups(struct thrift *t, struct pq_meta *m, int ft)
{
	int etype;
	uint64_t n;

	if (thrift_want(t, ft, CT_LIST) != 0 || thrift_list(t, &etype, &n) != 0)
		return -1;
	if (etype != CT_STRUCT)
		return thrift_fail(t, "row groups are not a list of structs");
	if (m->nodes == NULL)
		return thrift_fail(t, "row groups before the schema");
	/* every chunk takes a byte at least: n * nleaves is bounded by the
	 * footer's size (checked as they are read) */
	if (n > 0 && m->nleaves > 0 &&
	    n > (uint64_t)(t->end - t->p) / m->nleaves)
		return thrift_fail(t, "row groups longer than the footer");
	m->rg_rows = calloc(n ? n : 1, sizeof *m->rg_rows);
	m->chunks = calloc(n > 0 && m->nleaves > 0 ? n * m->nleaves : 1, sizeof *m->chunks);
	if (m->rg_rows == NULL || m->chunks == NULL)
		return thrift_fail(t, "out of memory for the row groups");
	for (uint64_t i = 0; i < n; i++)
		if (rd_row_group(t, m) != 0)
			return -1;
	return 0;
}

/* ---- the footer -------------------------------------------------------- */

void pq_meta_free(struct pq_meta *m)
{
	if (m == NULL)
		return;
	free(m->nodes);
	free(m->leaves);
	free(m->cols);
	free(m->rg_rows);
	free(m->chunks);
	memset(m, 0, sizeof *m);
}

/* The tree of the nel elements, its columns into icols (ncols entries). */
static int build_tree(struct pq_meta *m, const struct elem *el, size_t nel,
                      struct infer_column **icols, char *err, size_t errlen)
{
	struct walk w = { .el = el, .m = m, .n = nel, .pos = 1, .err = err, .errlen = errlen };
	struct pq_node *root;

	if (el[0].num_children < 0 || (uint64_t)el[0].num_children > nel - 1) {
		str_errf(err, errlen, "Parquet footer: the schema root has %d children of %zu elements",
		         (int)el[0].num_children, nel);
		return -1;
	}
	m->nodes = calloc(nel, sizeof *m->nodes);
	m->leaves = calloc(nel, sizeof *m->leaves);
	m->cols = calloc(nel, sizeof *m->cols);
	*icols = w.icols = calloc(nel, sizeof **icols);
	if (m->nodes == NULL || m->leaves == NULL || m->cols == NULL || w.icols == NULL) {
		str_errf(err, errlen, "out of memory");
		return -1;
	}
	m->nnodes = nel;
	root = &m->nodes[0];
	root->type = -1;
	root->nchildren = el[0].num_children;
	for (int32_t i = 0; i < el[0].num_children; i++) {
		if (w.pos >= w.n) {
			str_errf(err, errlen, "Parquet footer: schema ends inside a group");
			return -1;
		}
		if (walk_node(&w, 0, "", 0, 0, false, true, 1) != 0)
			return -1;
	}
	root->nleaves = m->nleaves;
	root->next = w.pos;
	if (w.pos != w.n) {
		str_errf(err, errlen, "Parquet footer: %zu schema elements outside the tree",
		         w.n - w.pos);
		return -1;
	}
	return 0;
}

/* The footer into m (and, when icols, the inferred columns into it). */
static int meta_parse(const unsigned char *buf, size_t len, bool with_row_groups,
                      struct pq_meta *m, struct infer_column **icols, char *err,
                      size_t errlen)
{
	struct thrift t;
	struct elem *el = NULL;
	struct infer_column *ic = NULL;
	uint64_t nel = 0;
	bool have_schema = false, have_rg = false;
	int16_t last = 0, id;
	int ft;

	memset(m, 0, sizeof *m);
	if (icols != NULL)
		*icols = NULL;
	m->num_rows = -1;
	if (buf == NULL || len == 0) {
		str_errf(err, errlen, "Parquet footer: empty");
		return TAB_ERR_FORMAT;
	}
	thrift_init(&t, buf, len, "footer", err, errlen);
	for (;;) {
		if (thrift_field(&t, &last, &ft, &id) != 0)
			goto bad;
		if (ft == CT_STOP)
			break;
		if (id == 2 && !have_schema) {
			int etype;
			if (thrift_want(&t, ft, CT_LIST) != 0 || thrift_list(&t, &etype, &nel) != 0)
				goto bad;
			if (etype != CT_STRUCT) {
				thrift_fail(&t, "schema is not a list of structs");
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
			if (build_tree(m, el, (size_t)nel, &ic, err, errlen) != 0)
				goto bad;
		} else if (id == 3) {
			if (thrift_field_i64(&t, ft, &m->num_rows) != 0)
				goto bad;
		} else if (id == 4 && with_row_groups && have_schema && !have_rg) {
			if (rd_row_groups(&t, m, ft) != 0)
				goto bad;
			have_rg = true;
		} else if (thrift_skip(&t, ft, 1, false) != 0) {
			goto bad;
		}
	}
	if (!have_schema) {
		str_errf(err, errlen, "Parquet footer: no schema");
		goto bad;
	}
	if (m->num_rows < 0) {
		str_errf(err, errlen, "Parquet footer: num_rows missing or negative");
		goto bad;
	}
	if (with_row_groups) {
		int64_t sum = 0;
		for (size_t i = 0; i < m->nrg; i++) {
			if (m->rg_rows[i] > INT64_MAX - sum) {
				sum = -1;
				break;
			}
			sum += m->rg_rows[i];
		}
		if (sum != m->num_rows) {
			str_errf(err, errlen, "Parquet footer: the row groups hold %lld rows, "
			         "num_rows says %lld", (long long)sum, (long long)m->num_rows);
			goto bad;
		}
	}
	free(el);
	if (icols != NULL)
		*icols = ic;
	else
		free(ic);
	return 0;
bad:
	free(el);
	free(ic);
	pq_meta_free(m);
	return TAB_ERR_FORMAT;
}

int pq_meta_parse(const unsigned char *buf, size_t len, bool with_row_groups,
                  struct pq_meta *m, char *err, size_t errlen)
{
	return meta_parse(buf, len, with_row_groups, m, NULL, err, errlen);
}

int parquet_footer_parse(const unsigned char *buf, size_t len, struct infer_result *out,
                         char *err, size_t errlen)
{
	struct pq_meta m;
	struct infer_column *cols = NULL;

	memset(out, 0, sizeof *out);
	if (meta_parse(buf, len, false, &m, &cols, err, errlen) != 0)
		return TAB_ERR_FORMAT;
	if (fix_names(cols, m.ncols, err, errlen) != 0) {
		free(cols);
		pq_meta_free(&m);
		return TAB_ERR_FORMAT;
	}
	out->cols = cols;
	out->ncols = m.ncols;
	out->row_count = m.num_rows;
	/* The schema binds every row: the types hold for all of them, though no
	 * value was read. */
	out->analyzed_rows = m.num_rows;
	out->stats.rows = m.num_rows;
	out->stats.has_header = true;
	pq_meta_free(&m);
	return 0;
}

/* ---- the file ---------------------------------------------------------- */

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

/* The footer's bytes of the open file fd (size bytes): malloc'd into
 * *footer, its length in *flen.  0, or a negative enum tab_err. */
static int footer_read(int fd, uint64_t size, unsigned char **footer, uint32_t *flen,
                       char *err, size_t errlen)
{
	unsigned char head[4], tail[8];

	*footer = NULL;
	if (size == 0) {
		str_errf(err, errlen, "empty file");
		return TAB_ERR_FORMAT;
	}
	if (size < 12) {
		str_errf(err, errlen, "not a Parquet file: %llu bytes is too short",
		         (unsigned long long)size);
		return TAB_ERR_FORMAT;
	}
	if (pread_all(fd, head, 4, 0) != 0 || pread_all(fd, tail, 8, (off_t)(size - 8)) != 0) {
		str_errf(err, errlen, "cannot read: %s", errno ? strerror(errno) : "short read");
		return TAB_ERR_IO;
	}
	if (memcmp(head, "PAR1", 4) != 0) {
		str_errf(err, errlen, "not a Parquet file: no PAR1 magic at the start");
		return TAB_ERR_FORMAT;
	}
	if (memcmp(tail + 4, "PARE", 4) == 0) {
		str_errf(err, errlen, "encrypted Parquet footers are not supported");
		return TAB_ERR_FORMAT;
	}
	if (memcmp(tail + 4, "PAR1", 4) != 0) {
		str_errf(err, errlen, "not a Parquet file, or truncated: no PAR1 magic at the end");
		return TAB_ERR_FORMAT;
	}
	*flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
	        (uint32_t)tail[3] << 24;
	if ((uint64_t)*flen > size - 12) {
		str_errf(err, errlen, "Parquet footer length %u is past the start of the file "
		         "(%llu bytes)", *flen, (unsigned long long)size);
		return TAB_ERR_FORMAT;
	}
	if (*flen > PARQUET_FOOTER_MAX) {
		str_errf(err, errlen, "Parquet footer length %u is over the limit of %u bytes",
		         *flen, PARQUET_FOOTER_MAX);
		return TAB_ERR_FORMAT;
	}
	if (*flen == 0) {
		str_errf(err, errlen, "Parquet footer: empty");
		return TAB_ERR_FORMAT;
	}
	*footer = malloc(*flen);
	if (*footer == NULL) {
		str_errf(err, errlen, "out of memory for a %u-byte footer", *flen);
		return TAB_ERR_IO;
	}
	if (pread_all(fd, *footer, *flen, (off_t)(size - 8 - *flen)) != 0) {
		str_errf(err, errlen, "cannot read the footer: %s",
		         errno ? strerror(errno) : "short read");
		free(*footer);
		*footer = NULL;
		return TAB_ERR_IO;
	}
	return 0;
}

int pq_meta_read(int fd, uint64_t size, bool with_row_groups, struct pq_meta *m,
                 char *err, size_t errlen)
{
	unsigned char *footer = NULL;
	uint32_t flen = 0;
	int rc;

	memset(m, 0, sizeof *m);
	rc = footer_read(fd, size, &footer, &flen, err, errlen);
	if (rc == 0)
		rc = pq_meta_parse(footer, flen, with_row_groups, m, err, errlen);
	free(footer);
	return rc;
}

int pq_file_open(const char *path, uint64_t *size, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0) {
		str_errf(err, errlen, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return TAB_ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		str_errf(err, errlen, "not a regular file");
		close(fd);
		return TAB_ERR_FORMAT;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

int parquet_infer(const char *path, struct infer_result *out, char *err, size_t errlen)
{
	unsigned char *footer = NULL;
	uint32_t flen = 0;
	uint64_t size = 0;
	int fd, rc;

	memset(out, 0, sizeof *out);
	if ((fd = pq_file_open(path, &size, err, errlen)) < 0)
		return fd;
	rc = footer_read(fd, size, &footer, &flen, err, errlen);
	if (rc == 0)
		rc = parquet_footer_parse(footer, flen, out, err, errlen);
	free(footer);
	close(fd);
	return rc;
}
