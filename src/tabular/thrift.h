/* thrift.h - a reader of the Thrift compact protocol, the encoding of
 * Parquet's footer and page headers.  Internal to src/tabular.
 *
 * It knows no schema: callers read the fields they need by id and skip
 * the rest with thrift_skip.  Every read is checked against the end of the
 * buffer, a list's count against the bytes left, and nesting is bounded,
 * so any input is safe to read.  Errors are written to err as
 * "Parquet <noun>: <what> at byte N" and returned as -1. */
#ifndef SLUICE_TABULAR_THRIFT_H
#define SLUICE_TABULAR_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compact protocol type codes. */
enum {
	CT_STOP = 0, CT_TRUE = 1, CT_FALSE = 2, CT_BYTE = 3, CT_I16 = 4, CT_I32 = 5,
	CT_I64 = 6, CT_DOUBLE = 7, CT_BINARY = 8, CT_LIST = 9, CT_SET = 10, CT_MAP = 11,
	CT_STRUCT = 12,
};

/* Structs inside structs (and lists), skipped or not. */
#define THRIFT_DEPTH_MAX 64

struct thrift {
	const uint8_t *start, *p, *end;
	const char *noun;                /* what is read: "footer", "page header" */
	char *err;
	size_t errlen;
	bool truncated;                  /* the last failure was the end of the buffer */
};

void thrift_init(struct thrift *t, const void *buf, size_t len, const char *noun,
                 char *err, size_t errlen);
int thrift_fail(struct thrift *t, const char *what);
int thrift_byte(struct thrift *t, uint8_t *b);
int thrift_i32(struct thrift *t, int32_t *v);
int thrift_i64(struct thrift *t, int64_t *v);
int thrift_binary(struct thrift *t, const uint8_t **s, size_t *n);
/* A list or set header: element type and count. */
int thrift_list(struct thrift *t, int *etype, uint64_t *count);
/* A struct field header: *type CT_STOP at the end of the struct. */
int thrift_field(struct thrift *t, int16_t *last_id, int *type, int16_t *id);
/* Skip one value of type; in_list: a boolean is then a byte of its own. */
int thrift_skip(struct thrift *t, int type, int depth, bool in_list);
/* Fail unless type is expect (or, for want_bool, a boolean: read into v). */
int thrift_want(struct thrift *t, int type, int expect);
int thrift_want_bool(struct thrift *t, int type, bool *v);
/* A field of type i32 / i64 read into v, checked for type. */
int thrift_field_i32(struct thrift *t, int type, int32_t *v);
int thrift_field_i64(struct thrift *t, int type, int64_t *v);

#endif
