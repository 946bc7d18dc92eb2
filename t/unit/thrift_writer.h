/* thrift_writer.h - a Thrift compact protocol writer for the Parquet
 * tests: footers and page headers encoded field by field, to reach what
 * real writers do not write and what no writer should. */
#ifndef SLUICE_TEST_THRIFT_WRITER_H
#define SLUICE_TEST_THRIFT_WRITER_H

#include <stdint.h>
#include <string.h>

#include <CUnit/CUnit.h>

/* The bytes written so far, and the last field id of each open struct. */
struct tw {
	unsigned char b[8192];
	size_t n;
	int16_t last[80];
	int depth;
};

static inline void w_byte(struct tw *w, unsigned v)
{
	CU_ASSERT_FATAL(w->n < sizeof w->b);
	w->b[w->n++] = (unsigned char)v;
}

static inline void w_varint(struct tw *w, uint64_t v)
{
	while (v >= 0x80) {
		w_byte(w, (unsigned)(v & 0x7f) | 0x80);
		v >>= 7;
	}
	w_byte(w, (unsigned)v);
}

static inline uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline void w_field(struct tw *w, int type, int16_t id)
{
	int16_t d = (int16_t)(id - w->last[w->depth]);
	if (d > 0 && d <= 15) {
		w_byte(w, (unsigned)(d << 4 | type));
	} else {
		w_byte(w, (unsigned)type);
		w_varint(w, zz(id));
	}
	w->last[w->depth] = id;
}

static inline void w_i32(struct tw *w, int16_t id, int64_t v) { w_field(w, 5, id); w_varint(w, zz(v)); }
static inline void w_i64(struct tw *w, int16_t id, int64_t v) { w_field(w, 6, id); w_varint(w, zz(v)); }

static inline void w_bin(struct tw *w, int16_t id, const char *s, size_t n)
{
	w_field(w, 8, id);
	w_varint(w, n);
	for (size_t i = 0; i < n; i++)
		w_byte(w, (unsigned char)s[i]);
}

static inline void w_str(struct tw *w, int16_t id, const char *s) { w_bin(w, id, s, strlen(s)); }

static inline void w_push(struct tw *w) { w->last[++w->depth] = 0; }
static inline void w_stop(struct tw *w) { w_byte(w, 0); w->depth--; }
static inline void w_struct(struct tw *w, int16_t id) { w_field(w, 12, id); w_push(w); }

static inline void w_list(struct tw *w, int16_t id, int etype, uint64_t count)
{
	w_field(w, 9, id);
	if (count < 15) {
		w_byte(w, (unsigned)(count << 4 | (uint64_t)etype));
	} else {
		w_byte(w, (unsigned)(0xf0 | etype));
		w_varint(w, count);
	}
}

#endif
