/* thrift.c - the Thrift compact protocol, read from a bounded buffer (see
 * thrift.h).  Varints are at most 10 bytes, i32s must fit 32 bits, and a
 * list's count is checked against the bytes left before anything is
 * allocated for it: every element takes at least one byte. */
#include <stdio.h>

#include "tabular/thrift.h"
#include "util/str.h"

void thrift_init(struct thrift *t, const void *buf, size_t len, const char *noun,
                 char *err, size_t errlen)
{
	t->start = t->p = buf;
	t->end = t->start + len;
	t->noun = noun;
	t->err = err;
	t->errlen = errlen;
	t->truncated = false;
}

int thrift_fail(struct thrift *t, const char *what)
{
	str_errf(t->err, t->errlen, "Parquet %s: %s at byte %zu", t->noun, what,
	         (size_t)(t->p - t->start));
	return -1;
}

static int truncated(struct thrift *t)
{
	t->truncated = true;
	return thrift_fail(t, "truncated");
}

/* A length that goes past the end: what says what has it. */
static int too_long(struct thrift *t, const char *what)
{
	char msg[64];

	t->truncated = true;
	snprintf(msg, sizeof msg, "%s longer than the %s", what, t->noun);
	return thrift_fail(t, msg);
}

int thrift_byte(struct thrift *t, uint8_t *b)
{
	if (t->p >= t->end)
		return truncated(t);
	*b = *t->p++;
	return 0;
}

static int rd_varint(struct thrift *t, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;
		if (thrift_byte(t, &b) != 0)
			return -1;
		if (shift == 63 && b > 1)
			return thrift_fail(t, "varint overflows 64 bits");
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return thrift_fail(t, "varint longer than 10 bytes");
}

static int64_t unzigzag(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

int thrift_i64(struct thrift *t, int64_t *v)
{
	uint64_t u;

	if (rd_varint(t, &u) != 0)
		return -1;
	*v = unzigzag(u);
	return 0;
}

int thrift_i32(struct thrift *t, int32_t *v)
{
	uint64_t u;

	if (rd_varint(t, &u) != 0)
		return -1;
	if (u > UINT32_MAX)
		return thrift_fail(t, "i32 out of range");
	*v = (int32_t)unzigzag(u);
	return 0;
}

int thrift_binary(struct thrift *t, const uint8_t **s, size_t *n)
{
	uint64_t len;

	if (rd_varint(t, &len) != 0)
		return -1;
	if (len > (uint64_t)(t->end - t->p))
		return too_long(t, "string");
	*s = t->p;
	*n = (size_t)len;
	t->p += len;
	return 0;
}

int thrift_list(struct thrift *t, int *etype, uint64_t *count)
{
	uint8_t b;

	if (thrift_byte(t, &b) != 0)
		return -1;
	*etype = b & 0x0f;
	*count = b >> 4;
	if (*count == 15 && rd_varint(t, count) != 0)
		return -1;
	if (*count > (uint64_t)(t->end - t->p))
		return too_long(t, "list");
	return 0;
}

int thrift_field(struct thrift *t, int16_t *last_id, int *type, int16_t *id)
{
	uint8_t b;

	if (thrift_byte(t, &b) != 0)
		return -1;
	*type = b & 0x0f;
	if (*type == CT_STOP)
		return 0;
	if (b >> 4) {
		*id = (int16_t)(*last_id + (b >> 4));
	} else {
		int64_t v;
		if (thrift_i64(t, &v) != 0)
			return -1;
		if (v < INT16_MIN || v > INT16_MAX)
			return thrift_fail(t, "field id out of range");
		*id = (int16_t)v;
	}
	*last_id = *id;
	return 0;
}

int thrift_skip(struct thrift *t, int type, int depth, bool in_list)
{
	uint64_t n;
	int etype;

	if (depth > THRIFT_DEPTH_MAX)
		return thrift_fail(t, "nesting too deep");
	switch (type) {
	case CT_TRUE:
	case CT_FALSE:
		if (in_list) {
			uint8_t b;
			return thrift_byte(t, &b);
		}
		return 0;
	case CT_BYTE: {
		uint8_t b;
		return thrift_byte(t, &b);
	}
	case CT_I16:
	case CT_I32:
	case CT_I64:
		return rd_varint(t, &n);
	case CT_DOUBLE:
		if (t->end - t->p < 8)
			return truncated(t);
		t->p += 8;
		return 0;
	case CT_BINARY: {
		const uint8_t *s;
		size_t len;
		return thrift_binary(t, &s, &len);
	}
	case CT_LIST:
	case CT_SET:
		if (thrift_list(t, &etype, &n) != 0)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (thrift_skip(t, etype, depth + 1, true) != 0)
				return -1;
		return 0;
	case CT_MAP: {
		uint8_t kv;
		if (rd_varint(t, &n) != 0)
			return -1;
		if (n == 0)
			return 0;
		if (n > (uint64_t)(t->end - t->p) / 2)
			return too_long(t, "map");
		if (thrift_byte(t, &kv) != 0)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			if (thrift_skip(t, kv >> 4, depth + 1, true) != 0 ||
			    thrift_skip(t, kv & 0x0f, depth + 1, true) != 0)
				return -1;
		return 0;
	}
	case CT_STRUCT: {
		int16_t last = 0, id;
		int ft;
		for (;;) {
			if (thrift_field(t, &last, &ft, &id) != 0)
				return -1;
			if (ft == CT_STOP)
				return 0;
			if (thrift_skip(t, ft, depth + 1, false) != 0)
				return -1;
		}
	}
	default:
		return thrift_fail(t, "unknown Thrift type");
	}
}

int thrift_want(struct thrift *t, int type, int expect)
{
	if (type == expect)
		return 0;
	return thrift_fail(t, "field of an unexpected type");
}

int thrift_want_bool(struct thrift *t, int type, bool *v)
{
	if (type != CT_TRUE && type != CT_FALSE)
		return thrift_fail(t, "field of an unexpected type");
	*v = type == CT_TRUE;
	return 0;
}

int thrift_field_i32(struct thrift *t, int type, int32_t *v)
{
	return thrift_want(t, type, CT_I32) != 0 ? -1 : thrift_i32(t, v);
}

int thrift_field_i64(struct thrift *t, int type, int64_t *v)
{
	return thrift_want(t, type, CT_I64) != 0 ? -1 : thrift_i64(t, v);
}
