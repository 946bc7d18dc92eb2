/* parquet_page.c - the level entries of one column chunk, page by page.
 *
 * A column chunk is an optional dictionary page, then data pages, each a
 * Thrift PageHeader (thrift.c) followed by its body.  Pages are read one at
 * a time with pread, decompressed (Snappy, gzip, Zstandard) into a buffer
 * of exactly the size the header declares, and decoded lazily, one entry at
 * a time, so memory holds one page and the dictionary of each column.
 *
 * Data page v1: the body, decompressed, is the repetition levels, the
 * definition levels (each RLE with a 4-byte length) and the values.  Data
 * page v2: the levels come first, never compressed, with their lengths in
 * the header; only the values may be compressed.  Values are PLAIN,
 * dictionary indices (PLAIN_DICTIONARY, RLE_DICTIONARY), RLE (booleans),
 * DELTA_BINARY_PACKED (integers), DELTA_LENGTH_BYTE_ARRAY and
 * DELTA_BYTE_ARRAY (bytes) or BYTE_STREAM_SPLIT (fixed-size values); the
 * old BIT_PACKED levels are refused.  Levels and indices are the RLE /
 * bit-packing hybrid.
 *
 * Nothing here trusts the file: every size is checked against what is left
 * of its buffer and against the caps of parquet.h before it is used or
 * allocated, and a decompressor that would write more than the declared
 * size fails. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "tabular/parquet.h"
#include "tabular/thrift.h"
#include "util/str.h"

/* parquet.thrift: PageType, Encoding. */
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum { ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_BIT_PACKED = 4,
       ENC_DELTA_BINARY_PACKED = 5, ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
       ENC_DELTA_BYTE_ARRAY = 7, ENC_RLE_DICTIONARY = 8, ENC_BYTE_STREAM_SPLIT = 9 };

#define HEADER_WINDOW (64u * 1024)        /* first read of a page header */

static const char *encoding_name(int e)
{
	static const char *const names[] = {
		"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
		"DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
		"RLE_DICTIONARY", "BYTE_STREAM_SPLIT",
	};
	return e >= 0 && (size_t)e < sizeof names / sizeof names[0] ? names[e] : "unknown";
}

static const char *type_name(int t)
{
	static const char *const names[] = {
		"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
		"FIXED_LEN_BYTE_ARRAY",
	};
	return t >= 0 && (size_t)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

static const char *codec_name(int c)
{
	static const char *const names[] = {
		"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW",
	};
	return c >= 0 && (size_t)c < sizeof names / sizeof names[0] ? names[c] : "unknown";
}

/* ---- the RLE / bit-packing hybrid ---------------------------------------- */

struct hyb {
	const uint8_t *p, *end;
	int bw;                          /* bits a value, 0 to 32 */
	uint64_t left;                   /* values left in the current run */
	bool packed;
	uint32_t value;                  /* of an RLE run */
	const uint8_t *bp;               /* a bit-packed run's bytes */
	uint64_t bit, bits;              /* next bit, bits there are */
};

static void hyb_init(struct hyb *h, const uint8_t *p, size_t n, int bw)
{
	memset(h, 0, sizeof *h);
	h->p = p;
	h->end = p + n;
	h->bw = bw;
}

/* An unsigned LEB128 varint of at most 64 bits. */
static int uleb64(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		if (shift == 63 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* The next value: 0, or -1 when the data ends or is malformed.  A last
 * bit-packed run may stop short of its declared groups (writers cut it):
 * only the values actually read must be there. */
static int hyb_next(struct hyb *h, uint32_t *v)
{
	while (h->left == 0) {
		uint64_t hdr;
		if (uleb64(&h->p, h->end, &hdr) != 0 || hdr > UINT32_MAX)
			return -1;
		if (!(hdr & 1)) {              /* an RLE run: count << 1 */
			size_t nb = ((size_t)h->bw + 7) / 8;
			if ((size_t)(h->end - h->p) < nb)
				return -1;
			h->value = 0;
			for (size_t i = 0; i < nb; i++)
				h->value |= (uint32_t)h->p[i] << (8 * i);
			h->p += nb;
			h->packed = false;
			h->left = hdr >> 1;
		} else {                       /* bit-packed: groups of 8 << 1 | 1 */
			uint64_t bytes = (uint64_t)(hdr >> 1) * (uint64_t)h->bw;
			uint64_t have = (uint64_t)(h->end - h->p);
			h->packed = true;
			h->left = (uint64_t)(hdr >> 1) * 8;
			h->bp = h->p;
			h->bit = 0;
			h->bits = (bytes < have ? bytes : have) * 8;
			h->p += bytes < have ? bytes : have;
		}
	}
	h->left--;
	if (!h->packed) {
		*v = h->value;
		return 0;
	}
	if (h->bw == 0) {
		*v = 0;
		return 0;
	}
	if (h->bit + (uint64_t)h->bw > h->bits)
		return -1;
	uint64_t acc = 0;
	size_t byte = (size_t)(h->bit / 8);
	unsigned shift = (unsigned)(h->bit % 8);
	size_t nb = (shift + (unsigned)h->bw + 7) / 8;
	for (size_t i = 0; i < nb; i++)
		acc |= (uint64_t)h->bp[byte + i] << (8 * i);
	*v = (uint32_t)((acc >> shift) & ((1ULL << h->bw) - 1));
	h->bit += (uint64_t)h->bw;
	return 0;
}

static int bit_width(int max)
{
	int w = 0;

	while (max > 0) {
		w++;
		max >>= 1;
	}
	return w;
}

/* ---- DELTA_BINARY_PACKED ---------------------------------------------- */

/* Blocks of miniblocks of bit-packed deltas from a minimum, after a
 * header: block size, miniblocks a block, value count, first value. */
struct delta {
	const uint8_t *p, *end;
	uint64_t per_mini, nmini, left;
	uint64_t last;                   /* wraps as the writer's arithmetic does */
	bool first;                      /* the first value not handed out yet */
	uint64_t min_delta;
	const uint8_t *widths;           /* of the block's miniblocks */
	uint64_t mini;                   /* current miniblock, nmini: none */
	uint64_t in_mini;                /* values read of it */
	const uint8_t *mp;
	uint64_t mbit, mbits;
	int bw;
};

static uint64_t zigzag64(uint64_t u)
{
	return (u >> 1) ^ (0 - (u & 1));
}

static int delta_init(struct delta *d, const uint8_t *p, const uint8_t *end)
{
	uint64_t block, first;

	memset(d, 0, sizeof *d);
	d->p = p;
	d->end = end;
	if (uleb64(&d->p, end, &block) != 0 || uleb64(&d->p, end, &d->nmini) != 0 ||
	    uleb64(&d->p, end, &d->left) != 0 || uleb64(&d->p, end, &first) != 0)
		return -1;
	if (d->nmini == 0 || d->nmini > 4096 || block == 0 || block > (1u << 24) ||
	    block % d->nmini != 0 || (block / d->nmini) % 8 != 0)
		return -1;
	d->per_mini = block / d->nmini;
	d->last = zigzag64(first);
	d->first = d->left > 0;
	d->mini = d->nmini;
	return 0;
}

/* The next value: 0, or -1 when the data ends or is malformed. */
static int delta_next(struct delta *d, uint64_t *v)
{
	if (d->left == 0)
		return -1;
	d->left--;
	if (d->first) {
		d->first = false;
		*v = d->last;
		return 0;
	}
	if (d->mini < d->nmini && d->in_mini == d->per_mini)
		d->mini++;
	if (d->mini >= d->nmini) {                 /* a new block */
		uint64_t md;
		if (uleb64(&d->p, d->end, &md) != 0 || (uint64_t)(d->end - d->p) < d->nmini)
			return -1;
		d->min_delta = zigzag64(md);
		d->widths = d->p;
		d->p += d->nmini;
		d->mini = 0;
		d->in_mini = d->per_mini;              /* the miniblock is opened below */
		d->bw = -1;
	}
	if (d->in_mini == d->per_mini || d->bw < 0) {   /* open miniblock d->mini */
		uint64_t bytes, have = (uint64_t)(d->end - d->p);
		d->bw = d->widths[d->mini];
		if (d->bw > 64)
			return -1;
		bytes = d->per_mini * (uint64_t)d->bw / 8;
		d->mp = d->p;
		d->mbits = (bytes < have ? bytes : have) * 8;
		d->p += bytes < have ? bytes : have;
		d->mbit = 0;
		d->in_mini = 0;
	}
	uint64_t delta = 0;
	if (d->bw > 0) {
		if (d->mbit + (uint64_t)d->bw > d->mbits)
			return -1;
		for (int k = 0; k < d->bw; k++, d->mbit++)
			delta |= (uint64_t)((d->mp[d->mbit / 8] >> (d->mbit % 8)) & 1) << k;
	}
	d->in_mini++;
	d->last += d->min_delta + delta;
	*v = d->last;
	return 0;
}

/* Where the delta stream at p ends: every value read through. */
static const uint8_t *delta_end(const uint8_t *p, const uint8_t *end, uint64_t *count)
{
	struct delta d;
	uint64_t v;

	if (delta_init(&d, p, end) != 0)
		return NULL;
	*count = d.left;
	while (d.left > 0)
		if (delta_next(&d, &v) != 0)
			return NULL;
	return d.p;
}

/* ---- the cursor ------------------------------------------------------- */

struct dict_value {
	int64_t i;
	double d;
	const uint8_t *b;
	size_t n;
};

struct pq_cursor {
	struct pq_src src;
	struct pq_leaf_desc d;
	struct pq_budget *budget;
	uint64_t pos, end;               /* next page header; the chunk's end */
	int64_t left;                    /* entries of the chunk not read yet */

	int64_t page_left;               /* entries of the page not read yet */
	struct hyb rep, def;
	int enc;                         /* of the values */
	const uint8_t *vp, *vend;        /* PLAIN values */
	uint64_t vbit;                   /* PLAIN booleans: the next bit */
	struct hyb idx;                  /* dictionary indices, RLE booleans */
	struct delta dv;                 /* DELTA_BINARY_PACKED values; the lengths
	                                  * of DELTA_LENGTH_BYTE_ARRAY, the
	                                  * suffixes' of DELTA_BYTE_ARRAY */
	struct delta dp;                 /* DELTA_BYTE_ARRAY: the prefixes */
	uint64_t bss_n, bss_i;           /* BYTE_STREAM_SPLIT: values, the next */
	uint8_t *prev;                   /* DELTA_BYTE_ARRAY: the last value */
	size_t prev_len, prev_cap;
	uint8_t scratch[16];             /* BYTE_STREAM_SPLIT: one value put together */

	uint8_t *raw;                    /* page header window, compressed body */
	size_t raw_cap;
	uint8_t *page;                   /* decompressed body */
	size_t page_cap;
	uint8_t *dict_bytes;
	size_t dict_bytes_cap;
	struct dict_value *dict;
	size_t ndict, dict_cap;
	bool have_dict;
	uint64_t held;                   /* bytes counted in budget */
};

static int cfail(const struct pq_cursor *c, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int cfail(const struct pq_cursor *c, char *err, size_t errlen, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	str_errf(err, errlen, "Parquet column %s: %s", c->d.name, msg);
	return TAB_ERR_FORMAT;
}

/* *buf grown to hold need bytes, counted against the row group's budget. */
static int grow(struct pq_cursor *c, void **buf, size_t *cap, size_t need, size_t elem,
                char *err, size_t errlen)
{
	size_t ncap;
	void *nb;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 4096 / elem + 1;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if ((uint64_t)(ncap - *cap) * elem > PARQUET_HELD_MAX - c->budget->held)
		return cfail(c, err, errlen, "the row group's pages need more than %u MiB at once",
		             PARQUET_HELD_MAX >> 20);
	nb = realloc(*buf, ncap * elem);
	if (nb == NULL) {
		str_errf(err, errlen, "out of memory for a Parquet page of %zu bytes", need * elem);
		return TAB_ERR_IO;
	}
	c->budget->held += (uint64_t)(ncap - *cap) * elem;
	c->held += (uint64_t)(ncap - *cap) * elem;
	*buf = nb;
	*cap = ncap;
	return 0;
}

static int src_read(const struct pq_cursor *c, uint64_t off, void *buf, size_t n,
                    char *err, size_t errlen)
{
	const struct pq_src *s = &c->src;
	size_t got = 0;

	if (off > s->size || n > s->size - off)
		return cfail(c, err, errlen, "a page runs past the end of the file");
	if (s->fd < 0) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	while (got < n) {
		ssize_t r = pread(s->fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			str_errf(err, errlen, "cannot read: %s", r < 0 ? strerror(errno)
			         : "the file got shorter");
			return TAB_ERR_IO;
		}
		got += (size_t)r;
	}
	return 0;
}

/* ---- decompression ------------------------------------------------------ */

static int inflate_gzip(const uint8_t *src, size_t n, uint8_t *dst, size_t want)
{
	z_stream z;
	int zr = Z_OK;

	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 15 + 32) != Z_OK)          /* a gzip or zlib header */
		return -1;
	z.next_in = (Bytef *)(uintptr_t)src;
	z.avail_in = (uInt)n;
	z.next_out = dst;
	z.avail_out = (uInt)want;
	for (;;) {
		zr = inflate(&z, Z_FINISH);
		if (zr == Z_STREAM_END && z.avail_in > 0 && z.avail_out > 0) {
			if (inflateReset(&z) != Z_OK)   /* gzip members one after another */
				break;
			continue;
		}
		break;
	}
	bool ok = zr == Z_STREAM_END && z.total_out == want;
	/* output full but input left: it would inflate past the declared size */
	if (zr == Z_STREAM_END && z.avail_in > 0)
		ok = false;
	inflateEnd(&z);
	return ok ? 0 : -1;
}

/* src[0..n) of the chunk's codec into dst, which takes exactly want bytes. */
static int decompress(const struct pq_cursor *c, const uint8_t *src, size_t n, uint8_t *dst,
                      size_t want, char *err, size_t errlen)
{
	size_t len;

	switch (c->d.chunk.codec) {
	case CODEC_UNCOMPRESSED:
		if (n != want)
			return cfail(c, err, errlen, "an uncompressed page of %zu bytes says %zu",
			             n, want);
		memcpy(dst, src, n);
		return 0;
	case CODEC_SNAPPY:
		if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK ||
		    len != want)
			return cfail(c, err, errlen, "a SNAPPY page does not inflate to its "
			             "declared %zu bytes", want);
		if (snappy_uncompress((const char *)src, n, (char *)dst, &len) != SNAPPY_OK ||
		    len != want)
			return cfail(c, err, errlen, "a SNAPPY page is damaged");
		return 0;
	case CODEC_GZIP:
		if (n > UINT32_MAX || want > UINT32_MAX || inflate_gzip(src, n, dst, want) != 0)
			return cfail(c, err, errlen, "a GZIP page is damaged or does not inflate "
			             "to its declared %zu bytes", want);
		return 0;
	case CODEC_ZSTD:
		len = ZSTD_decompress(dst, want, src, n);
		if (ZSTD_isError(len))
			return cfail(c, err, errlen, "a ZSTD page: %s", ZSTD_getErrorName(len));
		if (len != want)
			return cfail(c, err, errlen, "a ZSTD page inflates to %zu bytes, not its "
			             "declared %zu", len, want);
		return 0;
	default:
		return cfail(c, err, errlen, "compression %s is not supported (UNCOMPRESSED, "
		             "SNAPPY, GZIP and ZSTD are)", codec_name(c->d.chunk.codec));
	}
}

/* ---- page headers ------------------------------------------------------ */

struct page_header {
	int32_t type, usize, csize;
	int32_t num_values, encoding, def_enc, rep_enc;     /* v1, dictionary */
	int32_t def_len, rep_len;                           /* v2 */
	bool compressed;                                    /* v2 */
	bool have_data, have_dict, have_v2;
	size_t len;                                         /* of the header */
};

/* DataPageHeader {1: num_values, 2: encoding, 3: def encoding, 4: rep
 * encoding}, DictionaryPageHeader {1: num_values, 2: encoding} and
 * DataPageHeaderV2 {1: num_values, 4: encoding, 5: def length, 6: rep
 * length, 7: is_compressed}. */
static int rd_sub_header(struct thrift *t, struct page_header *h, int16_t which)
{
	int16_t last = 0, id;
	int ft;

	for (;;) {
		int rc;
		if (thrift_field(t, &last, &ft, &id) != 0)
			return -1;
		if (ft == CT_STOP)
			return 0;
		if (id == 1)
			rc = thrift_field_i32(t, ft, &h->num_values);
		else if (which == 8 && id == 4)
			rc = thrift_field_i32(t, ft, &h->encoding);
		else if (which == 8 && id == 5)
			rc = thrift_field_i32(t, ft, &h->def_len);
		else if (which == 8 && id == 6)
			rc = thrift_field_i32(t, ft, &h->rep_len);
		else if (which == 8 && id == 7)
			rc = thrift_want_bool(t, ft, &h->compressed);
		else if (which != 8 && id == 2)
			rc = thrift_field_i32(t, ft, &h->encoding);
		else if (which == 5 && id == 3)
			rc = thrift_field_i32(t, ft, &h->def_enc);
		else if (which == 5 && id == 4)
			rc = thrift_field_i32(t, ft, &h->rep_enc);
		else
			rc = thrift_skip(t, ft, 3, false);
		if (rc != 0)
			return -1;
	}
}

/* PageHeader {1: type, 2: uncompressed size, 3: compressed size, 5: data,
 * 7: dictionary, 8: data v2}. */
static int parse_header(const uint8_t *buf, size_t n, struct page_header *h, bool *truncated,
                        char *err, size_t errlen)
{
	struct thrift t;
	int16_t last = 0, id;
	int ft;

	memset(h, 0, sizeof *h);
	h->type = h->usize = h->csize = -1;
	h->num_values = h->encoding = h->def_len = h->rep_len = -1;
	h->def_enc = h->rep_enc = ENC_RLE;
	h->compressed = true;
	thrift_init(&t, buf, n, "page header", err, errlen);
	for (;;) {
		int rc;
		if (thrift_field(&t, &last, &ft, &id) != 0)
			goto bad;
		if (ft == CT_STOP)
			break;
		if (id == 1)
			rc = thrift_field_i32(&t, ft, &h->type);
		else if (id == 2)
			rc = thrift_field_i32(&t, ft, &h->usize);
		else if (id == 3)
			rc = thrift_field_i32(&t, ft, &h->csize);
		else if ((id == 5 || id == 7 || id == 8) && ft == CT_STRUCT) {
			rc = rd_sub_header(&t, h, id);
			h->have_data |= id == 5;
			h->have_dict |= id == 7;
			h->have_v2 |= id == 8;
		} else
			rc = thrift_skip(&t, ft, 1, false);
		if (rc != 0)
			goto bad;
	}
	h->len = (size_t)(t.p - t.start);
	return 0;
bad:
	*truncated = t.truncated;
	return -1;
}

/* The header of the page at c->pos, growing the window while it is cut. */
static int read_header(struct pq_cursor *c, struct page_header *h, char *err, size_t errlen)
{
	uint64_t avail = c->end - c->pos;
	size_t win = avail < HEADER_WINDOW ? (size_t)avail : HEADER_WINDOW;
	char herr[200];

	for (;;) {
		bool cut = false;
		int rc = grow(c, (void **)&c->raw, &c->raw_cap, win ? win : 1, 1, err, errlen);
		if (rc != 0 || (rc = src_read(c, c->pos, c->raw, win, err, errlen)) != 0)
			return rc;
		if (parse_header(c->raw, win, h, &cut, herr, sizeof herr) == 0)
			return 0;
		if (!cut || win == avail || win >= PARQUET_PAGE_HEADER_MAX)
			return cfail(c, err, errlen, "%s (page at byte %llu)", herr,
			             (unsigned long long)c->pos);
		win = avail < (uint64_t)win * 4 ? (size_t)avail : win * 4;
		if (win > PARQUET_PAGE_HEADER_MAX)
			win = PARQUET_PAGE_HEADER_MAX;
	}
}

/* ---- values ------------------------------------------------------------- */

static int64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	if (n == 4)
		return (int32_t)(uint32_t)v;
	return (int64_t)v;
}

/* One PLAIN value at *p (not past end) into the fields of a dict_value. */
static int plain_value(const struct pq_cursor *c, const uint8_t **p, const uint8_t *end,
                       uint64_t *bit, struct dict_value *v)
{
	size_t left = (size_t)(end - *p), n;

	switch (c->d.type) {
	case PT_BOOLEAN:
		if (*bit / 8 >= left)
			return -1;
		v->i = ((*p)[*bit / 8] >> (*bit % 8)) & 1;
		(*bit)++;
		return 0;
	case PT_INT32:
	case PT_FLOAT:
		if (left < 4)
			return -1;
		v->i = le(*p, 4);
		if (c->d.type == PT_FLOAT) {
			uint32_t u = (uint32_t)v->i;
			float f;
			memcpy(&f, &u, 4);
			v->d = f;
		}
		*p += 4;
		return 0;
	case PT_INT64:
	case PT_DOUBLE:
		if (left < 8)
			return -1;
		v->i = le(*p, 8);
		if (c->d.type == PT_DOUBLE) {
			uint64_t u = (uint64_t)v->i;
			memcpy(&v->d, &u, 8);
		}
		*p += 8;
		return 0;
	case PT_INT96:
		n = 12;
		break;
	case PT_FLBA:
		n = (size_t)c->d.type_length;
		break;
	case PT_BYTE_ARRAY:
		if (left < 4)
			return -1;
		n = (size_t)(uint32_t)le(*p, 4);
		*p += 4;
		left -= 4;
		break;
	default:
		return -1;
	}
	if (left < n)
		return -1;
	v->b = *p;
	v->n = n;
	*p += n;
	return 0;
}

/* The width of a fixed-size value of the column, 0 for BYTE_ARRAY. */
static size_t fixed_width(const struct pq_cursor *c)
{
	switch (c->d.type) {
	case PT_INT32: case PT_FLOAT: return 4;
	case PT_INT64: case PT_DOUBLE: return 8;
	case PT_INT96: return 12;
	case PT_FLBA: return (size_t)c->d.type_length;
	default: return 0;
	}
}

/* BYTE_STREAM_SPLIT: byte k of value i is at k * n + i. */
static int bss_value(struct pq_cursor *c, struct dict_value *v)
{
	size_t w = fixed_width(c);
	const uint8_t *q = c->scratch;
	uint64_t bit = 0;

	if (c->bss_i >= c->bss_n || w == 0 || w > sizeof c->scratch)
		return -1;
	for (size_t k = 0; k < w; k++)
		c->scratch[k] = c->vp[k * c->bss_n + c->bss_i];
	c->bss_i++;
	return plain_value(c, &q, c->scratch + w, &bit, v);
}

/* DELTA_BYTE_ARRAY: the previous value's first prefix bytes, then the
 * suffix. */
static int delta_value(struct pq_cursor *c, struct dict_value *v)
{
	uint64_t pre, suf;
	int rc;

	if (delta_next(&c->dp, &pre) != 0 || delta_next(&c->dv, &suf) != 0 ||
	    pre > c->prev_len || suf > (uint64_t)(c->vend - c->vp) ||
	    pre + suf > PARQUET_PAGE_MAX)
		return -1;
	rc = grow(c, (void **)&c->prev, &c->prev_cap, (size_t)(pre + suf) + 1, 1, NULL, 0);
	if (rc != 0)
		return -1;
	memcpy(c->prev + pre, c->vp, (size_t)suf);
	c->vp += suf;
	c->prev_len = (size_t)(pre + suf);
	v->b = c->prev;
	v->n = c->prev_len;
	return 0;
}

static int read_value(struct pq_cursor *c, struct pq_entry *e)
{
	struct dict_value v = { 0 };
	uint32_t k;

	switch (c->enc) {
	case ENC_PLAIN:
		if (plain_value(c, &c->vp, c->vend, &c->vbit, &v) != 0)
			return -1;
		break;
	case ENC_RLE:                      /* booleans */
		if (hyb_next(&c->idx, &k) != 0)
			return -1;
		v.i = k & 1;
		break;
	case ENC_DELTA_BINARY_PACKED: {
		uint64_t u;
		if (delta_next(&c->dv, &u) != 0)
			return -1;
		v.i = c->d.type == PT_INT32 ? (int32_t)(uint32_t)u : (int64_t)u;
		break;
	}
	case ENC_DELTA_LENGTH_BYTE_ARRAY: {
		uint64_t n;
		if (delta_next(&c->dv, &n) != 0 || n > (uint64_t)(c->vend - c->vp))
			return -1;
		v.b = c->vp;
		v.n = (size_t)n;
		c->vp += n;
		break;
	}
	case ENC_DELTA_BYTE_ARRAY:
		if (delta_value(c, &v) != 0)
			return -1;
		break;
	case ENC_BYTE_STREAM_SPLIT:
		if (bss_value(c, &v) != 0)
			return -1;
		break;
	default:                           /* dictionary indices */
		if (hyb_next(&c->idx, &k) != 0 || k >= c->ndict)
			return -1;
		v = c->dict[k];
		break;
	}
	e->i = v.i;
	e->d = v.d;
	e->b = v.b;
	e->n = v.n;
	return 0;
}

/* ---- pages ------------------------------------------------------------- */

/* The body of a page (header h at c->pos) of csize bytes read into raw. */
static int read_body(struct pq_cursor *c, const struct page_header *h, char *err,
                     size_t errlen)
{
	uint64_t at = c->pos + h->len;
	int rc;

	if (h->csize < 0 || h->usize < 0)
		return cfail(c, err, errlen, "a page without its sizes");
	if ((uint32_t)h->csize > PARQUET_PAGE_MAX || (uint32_t)h->usize > PARQUET_PAGE_MAX)
		return cfail(c, err, errlen, "a page of %d bytes (%d compressed) is over the "
		             "limit of %u MiB", h->usize, h->csize, PARQUET_PAGE_MAX >> 20);
	if ((uint64_t)h->csize > c->end - at)
		return cfail(c, err, errlen, "a page runs past the end of its column chunk");
	if ((rc = grow(c, (void **)&c->raw, &c->raw_cap, (size_t)h->csize + 1, 1, err,
	               errlen)) != 0)
		return rc;
	if ((rc = src_read(c, at, c->raw, (size_t)h->csize, err, errlen)) != 0)
		return rc;
	c->pos = at + (uint64_t)h->csize;
	return 0;
}

static int load_dictionary(struct pq_cursor *c, const struct page_header *h, char *err,
                           size_t errlen)
{
	const uint8_t *p, *end;
	uint64_t bit = 0;
	int rc;

	if (c->have_dict)
		return cfail(c, err, errlen, "a second dictionary page");
	if (!h->have_dict || h->num_values < 0)
		return cfail(c, err, errlen, "a dictionary page without its header");
	if (h->encoding != ENC_PLAIN && h->encoding != ENC_PLAIN_DICTIONARY)
		return cfail(c, err, errlen, "a dictionary encoded %s", encoding_name(h->encoding));
	if ((rc = read_body(c, h, err, errlen)) != 0)
		return rc;
	if ((rc = grow(c, (void **)&c->dict_bytes, &c->dict_bytes_cap, (size_t)h->usize + 1, 1,
	               err, errlen)) != 0 ||
	    (rc = decompress(c, c->raw, (size_t)h->csize, c->dict_bytes, (size_t)h->usize, err,
	                     errlen)) != 0)
		return rc;
	/* a value takes a bit at least */
	if ((uint64_t)h->num_values > (uint64_t)h->usize * 8)
		return cfail(c, err, errlen, "a dictionary of %d values in %d bytes",
		             h->num_values, h->usize);
	if ((rc = grow(c, (void **)&c->dict, &c->dict_cap, (size_t)h->num_values + 1,
	               sizeof *c->dict, err, errlen)) != 0)
		return rc;
	p = c->dict_bytes;
	end = p + h->usize;
	for (int32_t i = 0; i < h->num_values; i++) {
		memset(&c->dict[i], 0, sizeof c->dict[i]);
		if (plain_value(c, &p, end, &bit, &c->dict[i]) != 0)
			return cfail(c, err, errlen, "the dictionary page ends inside value %d", i);
	}
	c->ndict = (size_t)h->num_values;
	c->have_dict = true;
	return 0;
}

/* Levels of max (> 0) from a v1 page at *p: a 4-byte length, then the
 * hybrid; *p moves past them. */
static int v1_levels(struct pq_cursor *c, struct hyb *h, int enc, int max, const uint8_t **p,
                     const uint8_t *end, char *err, size_t errlen)
{
	uint32_t n;

	if (enc != ENC_RLE)
		return cfail(c, err, errlen, "levels encoded %s are not supported (RLE is)",
		             encoding_name(enc));
	if (end - *p < 4 || (n = (uint32_t)le(*p, 4)) > (uint64_t)(end - *p - 4))
		return cfail(c, err, errlen, "a data page's levels run past its end");
	hyb_init(h, *p + 4, n, bit_width(max));
	*p += 4 + (size_t)n;
	return 0;
}

/* The values region [p, end) of a data page, encoded enc. */
static int start_values(struct pq_cursor *c, int enc, const uint8_t *p, const uint8_t *end,
                        char *err, size_t errlen)
{
	c->enc = enc;
	c->vbit = 0;
	memset(&c->dv, 0, sizeof c->dv);
	memset(&c->dp, 0, sizeof c->dp);
	switch (enc) {
	case ENC_PLAIN:
		c->vp = p;
		c->vend = end;
		return 0;
	case ENC_PLAIN_DICTIONARY:
	case ENC_RLE_DICTIONARY:
		if (!c->have_dict)
			return cfail(c, err, errlen, "a dictionary-encoded page without a dictionary");
		if (p == end) {                /* no value (all nulls) */
			hyb_init(&c->idx, p, 0, 0);
			return 0;
		}
		if (*p > 32)
			return cfail(c, err, errlen, "dictionary indices of %d bits", *p);
		hyb_init(&c->idx, p + 1, (size_t)(end - p - 1), *p);
		return 0;
	case ENC_RLE:
		if (c->d.type != PT_BOOLEAN)
			break;
		if (end - p < 4 || (uint32_t)le(p, 4) > (uint64_t)(end - p - 4))
			return cfail(c, err, errlen, "RLE booleans run past the page's end");
		hyb_init(&c->idx, p + 4, (uint32_t)le(p, 4), 1);
		return 0;
	case ENC_DELTA_BINARY_PACKED:
		if (c->d.type != PT_INT32 && c->d.type != PT_INT64)
			break;
		if (p < end && delta_init(&c->dv, p, end) != 0)
			return cfail(c, err, errlen, "a damaged DELTA_BINARY_PACKED header");
		return 0;
	case ENC_DELTA_LENGTH_BYTE_ARRAY:
	case ENC_DELTA_BYTE_ARRAY: {
		const uint8_t *q = p;
		uint64_t n1 = 0, n2 = 0;
		if (c->d.type != PT_BYTE_ARRAY && c->d.type != PT_FLBA)
			break;
		if (p == end)
			return 0;                  /* no value (all nulls) */
		if (enc == ENC_DELTA_BYTE_ARRAY) {
			if ((q = delta_end(p, end, &n1)) == NULL || delta_init(&c->dp, p, end) != 0)
				return cfail(c, err, errlen, "damaged DELTA_BYTE_ARRAY prefixes");
			c->prev_len = 0;
		}
		c->vp = delta_end(q, end, &n2);
		if (c->vp == NULL || delta_init(&c->dv, q, end) != 0 ||
		    (enc == ENC_DELTA_BYTE_ARRAY && n1 != n2))
			return cfail(c, err, errlen, "damaged %s lengths", encoding_name(enc));
		c->vend = end;
		return 0;
	}
	case ENC_BYTE_STREAM_SPLIT: {
		size_t w = fixed_width(c);
		if (w == 0 || w > sizeof c->scratch)
			break;
		if ((size_t)(end - p) % w != 0)
			return cfail(c, err, errlen, "BYTE_STREAM_SPLIT values of %zu bytes in %zu",
			             w, (size_t)(end - p));
		c->vp = p;
		c->bss_n = (uint64_t)(end - p) / w;
		c->bss_i = 0;
		return 0;
	}
	default:
		break;
	}
	return cfail(c, err, errlen, "values encoded %s are not supported for %s (PLAIN, "
	             "PLAIN_DICTIONARY, RLE_DICTIONARY, RLE, DELTA_BINARY_PACKED, "
	             "DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT are, "
	             "each for its types)", encoding_name(enc), type_name(c->d.type));
}

static int start_v1(struct pq_cursor *c, const struct page_header *h, char *err, size_t errlen)
{
	const uint8_t *p, *end;
	int rc;

	if (!h->have_data || h->num_values < 0)
		return cfail(c, err, errlen, "a data page without its header");
	if ((rc = read_body(c, h, err, errlen)) != 0)
		return rc;
	if (c->d.chunk.codec == CODEC_UNCOMPRESSED) {
		if (h->csize != h->usize)
			return cfail(c, err, errlen, "an uncompressed page of %d bytes says %d",
			             h->csize, h->usize);
		p = c->raw;
	} else {
		if ((rc = grow(c, (void **)&c->page, &c->page_cap, (size_t)h->usize + 1, 1, err,
		               errlen)) != 0 ||
		    (rc = decompress(c, c->raw, (size_t)h->csize, c->page, (size_t)h->usize, err,
		                     errlen)) != 0)
			return rc;
		p = c->page;
	}
	end = p + h->usize;
	if (c->d.max_rep > 0 &&
	    (rc = v1_levels(c, &c->rep, h->rep_enc, c->d.max_rep, &p, end, err, errlen)) != 0)
		return rc;
	if (c->d.max_def > 0 &&
	    (rc = v1_levels(c, &c->def, h->def_enc, c->d.max_def, &p, end, err, errlen)) != 0)
		return rc;
	c->page_left = h->num_values;
	return start_values(c, h->encoding, p, end, err, errlen);
}

static int start_v2(struct pq_cursor *c, const struct page_header *h, char *err, size_t errlen)
{
	const uint8_t *vals;
	size_t levels, vsize, usize;
	int rc;

	if (!h->have_v2 || h->num_values < 0 || h->def_len < 0 || h->rep_len < 0)
		return cfail(c, err, errlen, "a data page v2 without its header");
	if ((rc = read_body(c, h, err, errlen)) != 0)
		return rc;
	levels = (size_t)h->def_len + (size_t)h->rep_len;
	if (levels > (size_t)h->csize || levels > (size_t)h->usize)
		return cfail(c, err, errlen, "a data page's levels run past its end");
	hyb_init(&c->rep, c->raw, (size_t)h->rep_len, bit_width(c->d.max_rep));
	hyb_init(&c->def, c->raw + h->rep_len, (size_t)h->def_len, bit_width(c->d.max_def));
	vsize = (size_t)h->csize - levels;
	usize = (size_t)h->usize - levels;
	vals = c->raw + levels;
	if (h->compressed && c->d.chunk.codec != CODEC_UNCOMPRESSED) {
		if ((rc = grow(c, (void **)&c->page, &c->page_cap, usize + 1, 1, err, errlen)) != 0 ||
		    (rc = decompress(c, vals, vsize, c->page, usize, err, errlen)) != 0)
			return rc;
		vals = c->page;
	} else if (vsize != usize) {
		return cfail(c, err, errlen, "an uncompressed page of %zu bytes says %zu",
		             vsize, usize);
	}
	c->page_left = h->num_values;
	return start_values(c, h->encoding, vals, vals + usize, err, errlen);
}

/* The next data page with entries. */
static int next_page(struct pq_cursor *c, char *err, size_t errlen)
{
	for (;;) {
		struct page_header h;
		int rc;

		if (c->pos >= c->end)
			return cfail(c, err, errlen, "the column chunk ends %lld values short",
			             (long long)c->left);
		if ((rc = read_header(c, &h, err, errlen)) != 0)
			return rc;
		switch (h.type) {
		case PAGE_DICTIONARY:
			rc = load_dictionary(c, &h, err, errlen);
			break;
		case PAGE_DATA:
			rc = start_v1(c, &h, err, errlen);
			break;
		case PAGE_DATA_V2:
			rc = start_v2(c, &h, err, errlen);
			break;
		default:                       /* index pages and others: skipped */
			if (h.csize < 0 || (uint64_t)h.csize > c->end - c->pos - h.len)
				return cfail(c, err, errlen, "a page runs past the end of its column chunk");
			c->pos += h.len + (uint64_t)h.csize;
			continue;
		}
		if (rc != 0)
			return rc;
		if ((h.type == PAGE_DATA || h.type == PAGE_DATA_V2) && c->page_left > 0)
			return 0;
	}
}

int pq_cursor_next(struct pq_cursor *c, struct pq_entry *e, char *err, size_t errlen)
{
	uint32_t v;
	int rc;

	if (c->left <= 0)
		return 0;
	if (c->page_left <= 0 && (rc = next_page(c, err, errlen)) != 0)
		return rc;
	memset(e, 0, sizeof *e);
	if (c->d.max_rep > 0) {
		if (hyb_next(&c->rep, &v) != 0 || v > (uint32_t)c->d.max_rep)
			return cfail(c, err, errlen, "bad or missing repetition levels");
		e->rep = (int)v;
	}
	e->def = c->d.max_def;
	if (c->d.max_def > 0) {
		if (hyb_next(&c->def, &v) != 0 || v > (uint32_t)c->d.max_def)
			return cfail(c, err, errlen, "bad or missing definition levels");
		e->def = (int)v;
	}
	e->present = e->def == c->d.max_def;
	if (e->present && read_value(c, e) != 0)
		return cfail(c, err, errlen, "a data page ends before its values, or a "
		             "dictionary index is out of range");
	c->page_left--;
	c->left--;
	return 1;
}

int pq_cursor_open(struct pq_cursor **out, const struct pq_src *src,
                   const struct pq_leaf_desc *d, struct pq_budget *budget,
                   char *err, size_t errlen)
{
	struct pq_cursor *c;

	*out = NULL;
	c = calloc(1, sizeof *c);
	if (c == NULL) {
		str_errf(err, errlen, "out of memory");
		return TAB_ERR_IO;
	}
	c->src = *src;
	c->d = *d;
	c->budget = budget;
	c->pos = d->chunk.start;
	c->left = d->chunk.num_values;
	if (d->chunk.start > src->size || d->chunk.size > src->size - d->chunk.start) {
		cfail(c, err, errlen, "its column chunk runs past the end of the file");
		free(c);
		return TAB_ERR_FORMAT;
	}
	if (d->type < PT_BOOLEAN || d->type > PT_FLBA ||
	    (d->type == PT_FLBA && (d->type_length < 1 || d->type_length > (int32_t)PARQUET_PAGE_MAX))) {
		cfail(c, err, errlen, "unknown physical type %d (length %d)", d->type,
		      (int)d->type_length);
		free(c);
		return TAB_ERR_FORMAT;
	}
	c->end = d->chunk.start + d->chunk.size;
	*out = c;
	return 0;
}

void pq_cursor_free(struct pq_cursor *c)
{
	if (c == NULL)
		return;
	c->budget->held -= c->held;
	free(c->raw);
	free(c->page);
	free(c->dict_bytes);
	free(c->dict);
	free(c->prev);
	free(c);
}
