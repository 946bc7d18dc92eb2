/* parquet.h - Parquet files read by src/tabular: the footer (parquet.c),
 * the pages of a column chunk (parquet_page.c) and rows made of them
 * (parquet_rows.c).  Internal to src/tabular and its fuzz targets; the rest
 * of sluice reads Parquet through tab_read and infer_file. */
#ifndef SLUICE_TABULAR_PARQUET_H
#define SLUICE_TABULAR_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tabular/tabular.h"

/* The largest footer read: a file whose 4-byte footer length is bigger is
 * refused rather than read into memory. */
#define PARQUET_FOOTER_MAX (64u * 1024 * 1024)
/* Schema elements (columns, groups and the root together). */
#define PARQUET_SCHEMA_MAX 100000
/* Thrift structs inside structs (and lists), skipped or not. */
#define PARQUET_DEPTH_MAX 64
/* A page, compressed and decompressed alike: a page header that says more
 * is refused before anything is allocated (a decompression bomb), and a
 * decompressor never writes past the size its header declared. */
#define PARQUET_PAGE_MAX (128u * 1024 * 1024)
/* A page header (its statistics may hold long values). */
#define PARQUET_PAGE_HEADER_MAX (16u * 1024 * 1024)
/* The pages and dictionaries of one row group's columns held at once. */
#define PARQUET_HELD_MAX (1024u * 1024 * 1024)
/* Values of one nested (LIST, MAP) cell, over all its leaves. */
#define PARQUET_NESTED_VALUES_MAX (1u << 20)

/* parquet.thrift's enums. */
enum { PT_BOOLEAN, PT_INT32, PT_INT64, PT_INT96, PT_FLOAT, PT_DOUBLE, PT_BYTE_ARRAY,
       PT_FLBA };
enum { REP_REQUIRED, REP_OPTIONAL, REP_REPEATED };
enum { CODEC_UNCOMPRESSED = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_LZO = 3,
       CODEC_BROTLI = 4, CODEC_LZ4 = 5, CODEC_ZSTD = 6, CODEC_LZ4_RAW = 7 };

/* How a leaf's values are written as cells (parquet_rows.c). */
enum pq_kind {
	PQ_BOOL,
	PQ_INT,                 /* signed INT32 / INT64 */
	PQ_UINT,                /* unsigned: the bits of INT32 / INT64 */
	PQ_DECIMAL,             /* unscaled integer (INT32, INT64, big-endian bytes) */
	PQ_FLOAT,
	PQ_DOUBLE,
	PQ_FLOAT16,             /* FIXED_LEN_BYTE_ARRAY(2), IEEE half */
	PQ_DATE,                /* INT32 days since 1970-01-01 */
	PQ_TIMESTAMP,           /* INT64 in units of 1/unit s since 1970 */
	PQ_INT96,               /* nanoseconds of the day, Julian day */
	PQ_TIME,                /* INT32 / INT64 in units of 1/unit s */
	PQ_TEXT,                /* bytes: text when UTF-8, else \xHH escapes */
	PQ_UUID,                /* FIXED_LEN_BYTE_ARRAY(16) */
	PQ_INTERVAL,            /* FIXED_LEN_BYTE_ARRAY(12): months, days, ms */
};

/* One schema element, in the footer's depth-first order. */
struct pq_node {
	char name[INFER_NAME_MAX];       /* its own name, cut */
	int type;                        /* PT_*, -1 for a group */
	int32_t type_length;
	int rep;                         /* REP_* (the root: REP_REQUIRED) */
	int32_t nchildren;
	bool is_list, is_map;            /* LIST / MAP (or MAP_KEY_VALUE) group */
	int def_level, rep_level;        /* at this node, counted from the root */
	size_t first_leaf, nleaves;      /* its leaves, in leaf order */
	size_t next;                     /* the node after its subtree */
	size_t parent;                   /* the root's: itself (0) */
	enum pq_kind kind;               /* leaves */
	int scale;                       /* PQ_DECIMAL */
	int64_t unit;                    /* PQ_TIMESTAMP, PQ_TIME: 1000, 10^6, 10^9 */
};

/* A column chunk: where its pages are and how they are compressed. */
struct pq_chunk {
	uint64_t start, size;            /* bytes of the file */
	int64_t num_values;              /* level entries, nulls included */
	int codec;
};

/* A column of the rows: a leaf (inside structs or not), or a LIST, MAP or
 * repeated field whose values are written as JSON text. */
struct pq_column {
	size_t node;                     /* index in nodes */
	bool nested;
	char path[INFER_NAME_MAX];       /* dotted path, as the schema names it */
};

struct pq_meta {
	struct pq_node *nodes;
	size_t nnodes;
	size_t *leaves;                  /* node index of each leaf */
	size_t nleaves;
	struct pq_column *cols;
	size_t ncols;
	int64_t num_rows;
	/* with_row_groups only: */
	int64_t *rg_rows;                /* rows of each row group */
	struct pq_chunk *chunks;         /* rg * nleaves + leaf */
	size_t nrg;
};

/* Decode the len bytes of a FileMetaData (the footer without its length
 * and magic).  with_row_groups also reads where every column chunk is.
 * 0, or TAB_ERR_FORMAT with the reason in err (m then empty).  Free with
 * pq_meta_free. */
int pq_meta_parse(const unsigned char *buf, size_t len, bool with_row_groups,
                  struct pq_meta *m, char *err, size_t errlen);
void pq_meta_free(struct pq_meta *m);

/* The regular file at path opened for reading: its descriptor (its size
 * in *size), or a negative enum tab_err with the reason in err. */
int pq_file_open(const char *path, uint64_t *size, char *err, size_t errlen);

/* The footer of the open file fd (size bytes) read and decoded.  0, or a
 * negative enum tab_err. */
int pq_meta_read(int fd, uint64_t size, bool with_row_groups, struct pq_meta *m,
                 char *err, size_t errlen);

/* Decode a footer into out: one column per leaf, row_count = num_rows.  0,
 * or TAB_ERR_FORMAT with the reason in err; out is then empty.  Free out
 * with infer_result_free. */
int parquet_footer_parse(const unsigned char *buf, size_t len, struct infer_result *out,
                         char *err, size_t errlen);

/* ---- pages (parquet_page.c) ------------------------------------------- */

/* Where a chunk's bytes come from: a file (fd >= 0) or memory. */
struct pq_src {
	int fd;
	const uint8_t *mem;
	uint64_t size;                   /* of the file, or of mem */
};

/* What the page reader must know of a leaf and its chunk. */
struct pq_leaf_desc {
	const char *name;                /* for messages */
	int type;                        /* PT_* */
	int32_t type_length;             /* PT_FLBA */
	int max_def, max_rep;
	struct pq_chunk chunk;
};

/* One level entry: a value when def == max_def.  b points into the
 * current page or the dictionary: valid until the next pq_cursor_next. */
struct pq_entry {
	int rep, def;
	bool present;
	int64_t i;                       /* BOOLEAN (0, 1), INT32, INT64 */
	double d;                        /* FLOAT, DOUBLE */
	const uint8_t *b;                /* INT96, BYTE_ARRAY, FLBA */
	size_t n;
};

/* Bytes of page and dictionary buffers held by the cursors of one row
 * group, against PARQUET_HELD_MAX. */
struct pq_budget {
	uint64_t held;
};

struct pq_cursor;

/* A cursor over the level entries of one column chunk.  0, or a negative
 * enum tab_err with the reason in err. */
int pq_cursor_open(struct pq_cursor **out, const struct pq_src *src,
                   const struct pq_leaf_desc *d, struct pq_budget *budget,
                   char *err, size_t errlen);
/* The next entry: 1, 0 at the end of the chunk, or a negative enum
 * tab_err (reason in err). */
int pq_cursor_next(struct pq_cursor *c, struct pq_entry *e, char *err, size_t errlen);
void pq_cursor_free(struct pq_cursor *c);              /* NULL is fine */

/* ---- rows (parquet_rows.c) ------------------------------------------- */

/* The rows of the Parquet file at path through sink, one row group after
 * another, page by page. */
int parquet_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
                 struct tab_stats *stats, char *err, size_t errlen);

#endif
