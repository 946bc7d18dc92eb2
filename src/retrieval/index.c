/* index.c - the per-dataset index file.
 *
 * Layout (native byte order, recorded in the header; every section starts
 * at a multiple of 64 bytes so the vectors are cache-line aligned in the
 * mapping, zero padding between sections):
 *
 *   header      struct rindex_hdr (192 bytes)
 *   vectors     float[count][dim]
 *   norms       float[count], each row's L2 norm
 *   codes       int8_t[count rounded up to 16][stride]: each row coded in
 *               8 bits, stride = dim rounded up to 32, kept in runs of 16
 *               rows turned on their side (vec_codes.h)
 *   code rows   float[count] each code's scale, then float[count] each
 *               code's error bound
 *   string offs uint64_t[count][3]: snippet id, metadata JSON, text, as
 *               offsets into the string section
 *   strings     NUL-terminated strings; the section ends with a NUL
 *   bm25        the BM25 blob (bm25.c) over the snippets, a document's
 *               first with the document's title (titled_texts)
 *   docs        uint32_t[count]: each row's document (0..ndocs-1), then
 *               uint32_t[ndocs + 1]: each document's first row, and count;
 *               a document's rows are consecutive, in chunk order
 *   bm25 docs   the BM25 blob over the documents (each its snippets' texts
 *               joined, so the words two snippets overlap on count twice)
 *
 * The checksum is a 64-bit hash of the whole file with the checksum field
 * zeroed: FNV-1a's step (xor, multiply by the FNV prime) applied to
 * 64-bit words in four interleaved lanes, so it runs at memory speed, then
 * the lanes and the length folded together.  Each step is a bijection of
 * the lane state, so any change confined to one 32-byte block always
 * changes the result; it detects torn writes and bit rot, it is not a
 * defence against forgery (the directory's permissions are).
 *
 * Opening checks, before anything is read through it: size, magic,
 * version, byte order, dim and count bounds, each section inside the file
 * and of the size its counts imply, the checksum, every string offset, and
 * both BM25 blobs' own consistency, that the document map covers every
 * row once, in order, and that every code's error bound is a finite number
 * >= 0. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <float.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "retrieval/index.h"
#include "retrieval/index_checks.h"
#include "retrieval/title.h"
#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"
#include "util/pages.h"
#include "util/thread.h"

#define RINDEX_MAGIC "SLRIDX\r\n"
#define RINDEX_VERSION 7u      /* 2: BM25 terms are Snowball stems; 3: documents;
                                * 4: BM25 impacts and idf stored; 5: codes;
                                * 6: documents' titles in BM25; 7: codes in runs */
_Static_assert(RINDEX_MAX_DIM <= VEC_CODES_MAX_DIM, "every row of an index can be coded");
#define RINDEX_BYTE_ORDER 0x01020304u
#define RINDEX_ALIGN 64

enum { SEC_VECS, SEC_NORMS, SEC_CODES, SEC_CODE_ROWS, SEC_STROFF, SEC_STRS, SEC_BM25,
       SEC_DOCS, SEC_BM25_DOCS, SEC_COUNT };

struct rindex_hdr {
	char magic[8];
	uint32_t version, byte_order, dim, count;
	uint64_t file_size, checksum;
	struct { uint64_t off, len; } sec[SEC_COUNT];
	uint32_t ndocs;
	unsigned char reserved[4];
};
_Static_assert(sizeof(struct rindex_hdr) == 192, "index header is 192 bytes");

struct rindex {
	unsigned char *map;
	size_t size;
	size_t dim, count;
	const float *vecs, *norms;
	struct vec_codes codes;
	const uint64_t *stroff;
	const char *strs;
	struct bm25 *bm25, *bm25_docs;
	size_t ndocs;
	const uint32_t *row_doc, *doc_first;
	struct rindex_file file;
};

/* ---- checksum --------------------------------------------------------------- */

#define FNV_PRIME 0x100000001b3ull

struct hasher {
	uint64_t lane[4];
	unsigned char buf[32];
	size_t nbuf;
	uint64_t total;
};

static void hasher_init(struct hasher *h)
{
	for (int j = 0; j < 4; j++)
		h->lane[j] = 0xcbf29ce484222325ull + (uint64_t)j;
	h->nbuf = 0;
	h->total = 0;
}

static void hash_block(uint64_t lane[4], const unsigned char *p)
{
	for (int j = 0; j < 4; j++) {
		uint64_t w;
		memcpy(&w, p + 8 * j, 8);
		lane[j] = (lane[j] ^ w) * FNV_PRIME;
	}
}

static void hasher_update(struct hasher *h, const void *data, size_t n)
{
	const unsigned char *p = data;

	h->total += n;
	if (h->nbuf > 0) {
		size_t take = 32 - h->nbuf < n ? 32 - h->nbuf : n;
		memcpy(h->buf + h->nbuf, p, take);
		h->nbuf += take;
		p += take;
		n -= take;
		if (h->nbuf < 32)
			return;
		hash_block(h->lane, h->buf);
		h->nbuf = 0;
	}
	for (; n >= 32; p += 32, n -= 32)
		hash_block(h->lane, p);
	memcpy(h->buf, p, n);
	h->nbuf = n;
}

static uint64_t hasher_final(struct hasher *h)
{
	uint64_t r = h->total;

	if (h->nbuf > 0) {
		memset(h->buf + h->nbuf, 0, 32 - h->nbuf);
		hash_block(h->lane, h->buf);
	}
	for (int j = 0; j < 4; j++)
		r = (r ^ h->lane[j]) * FNV_PRIME;
	r ^= r >> 33;
	r *= 0xff51afd7ed558ccdull;
	r ^= r >> 33;
	return r;
}

/* The file's checksum: the header with its checksum field zeroed, then the
 * rest. */
static uint64_t file_checksum(const unsigned char *p, size_t size)
{
	struct rindex_hdr h;
	struct hasher hs;

	memcpy(&h, p, sizeof h);
	h.checksum = 0;
	hasher_init(&hs);
	hasher_update(&hs, &h, sizeof h);
	hasher_update(&hs, p + sizeof h, size - sizeof h);
	return hasher_final(&hs);
}

/* ---- writing ---------------------------------------------------------------------- */

/* The writer's pieces end at multiples of 2 MB of the file: a filesystem
 * that keeps files in large folios (XFS, ext4 since Linux 6.16) then
 * caches each whole piece as one huge page, which every reader's
 * mapping maps with one page-table entry.  In 1 MB pieces the pages
 * stayed 4 KB: a pass over 100,000 rows' codes touched 10,000 of them, and
 * each float row it scored again cost a TLB miss. */
#define RINDEX_WRITE_BUF (2u << 20)

/* A buffered writer at a file offset (pwrite: no shared file position),
 * hashing what it writes when asked; with fd -1 it only hashes.  Its
 * buffer holds the bytes from pos - len up to the next multiple of
 * RINDEX_WRITE_BUF. */
struct out {
	int fd;
	bool hash;
	struct hasher hs;
	uint64_t pos;                  /* file offset of the next byte */
	unsigned char *buf;            /* RINDEX_WRITE_BUF, not yet written */
	size_t len;
};

static int out_flush(struct out *o)
{
	size_t done = 0;

	while (done < o->len) {
		ssize_t w = pwrite(o->fd, o->buf + done, o->len - done,
		                   (off_t)(o->pos - o->len + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	o->len = 0;
	return 0;
}

static int out_write(struct out *o, const void *p, size_t n)
{
	const unsigned char *c = p;

	if (o->hash)
		hasher_update(&o->hs, p, n);
	if (o->fd < 0) {
		o->pos += n;
		return 0;
	}
	while (n > 0) {
		size_t room = RINDEX_WRITE_BUF - (size_t)(o->pos % RINDEX_WRITE_BUF);
		size_t take = room < n ? room : n;

		memcpy(o->buf + o->len, c, take);
		o->len += take;
		o->pos += take;
		c += take;
		n -= take;
		if (o->pos % RINDEX_WRITE_BUF == 0 && out_flush(o) != 0)
			return -1;
	}
	return 0;
}

static int out_pad(struct out *o)
{
	static const unsigned char zero[RINDEX_ALIGN];
	size_t r = (size_t)(o->pos % RINDEX_ALIGN);
	return r == 0 ? 0 : out_write(o, zero, RINDEX_ALIGN - r);
}

static uint64_t align_up(uint64_t n)
{
	return (n + RINDEX_ALIGN - 1) & ~(uint64_t)(RINDEX_ALIGN - 1);
}

static const char *str_or(const char *s, const char *dflt)
{
	return s != NULL ? s : dflt;
}

/* The header for these sections, laid out one after the other. */
static void plan(struct rindex_hdr *h, size_t n, size_t dim, size_t ndocs, uint64_t strbytes,
                 uint64_t bm25bytes, uint64_t bm25docbytes)
{
	uint64_t len[SEC_COUNT] = {
		[SEC_VECS] = (uint64_t)n * dim * sizeof(float),
		[SEC_NORMS] = (uint64_t)n * sizeof(float),
		[SEC_CODES] = vec_codes_size(n, dim),
		[SEC_CODE_ROWS] = (uint64_t)n * 2 * sizeof(float),
		[SEC_STROFF] = (uint64_t)n * 3 * sizeof(uint64_t),
		[SEC_STRS] = strbytes,
		[SEC_BM25] = bm25bytes,
		[SEC_DOCS] = ((uint64_t)n + ndocs + 1) * sizeof(uint32_t),
		[SEC_BM25_DOCS] = bm25docbytes,
	};
	uint64_t pos = sizeof *h;

	memset(h, 0, sizeof *h);
	memcpy(h->magic, RINDEX_MAGIC, sizeof h->magic);
	h->version = RINDEX_VERSION;
	h->byte_order = RINDEX_BYTE_ORDER;
	h->dim = (uint32_t)dim;
	h->count = (uint32_t)n;
	h->ndocs = (uint32_t)ndocs;
	for (int s = 0; s < SEC_COUNT; s++) {
		pos = align_up(pos);
		h->sec[s].off = pos;
		h->sec[s].len = len[s];
		pos += len[s];
	}
	h->file_size = pos;
}

/* What rindex_write lays out besides the caller's rows. */
struct derived {
	size_t ndocs;
	uint32_t *row_doc, *doc_first;      /* count, ndocs + 1 */
	struct bm25 *bm, *bm_docs;
};

/* What rindex_write computes from each row's vector: its norm, its code,
 * and the code's scale and error (n of each, then n). */
struct row_figures {
	float *norms;
	int8_t *codes;
	float *code_rows;
};

/* The sections that follow from the rows alone (vectors, norms, codes,
 * string offsets, strings), from the vectors' offset on. */
static int write_rows(struct out *o, size_t n, size_t dim, const struct rindex_row *rows,
                      const struct row_figures *rf)
{
	uint64_t off = 0;

	for (size_t i = 0; i < n; i++)
		if (out_write(o, rows[i].vec, dim * sizeof(float)) != 0)
			return -1;
	if (out_pad(o) != 0 || out_write(o, rf->norms, n * sizeof *rf->norms) != 0 ||
	    out_pad(o) != 0 || out_write(o, rf->codes, vec_codes_size(n, dim)) != 0 ||
	    out_pad(o) != 0 || out_write(o, rf->code_rows, 2 * n * sizeof *rf->code_rows) != 0 ||
	    out_pad(o) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *s[3] = { str_or(rows[i].id, ""), str_or(rows[i].meta, "{}"),
		                     str_or(rows[i].text, "") };
		for (int j = 0; j < 3; j++) {
			if (out_write(o, &off, sizeof off) != 0)
				return -1;
			off += strlen(s[j]) + 1;
		}
	}
	if (out_pad(o) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *s[3] = { str_or(rows[i].id, ""), str_or(rows[i].meta, "{}"),
		                     str_or(rows[i].text, "") };
		for (int j = 0; j < 3; j++)
			if (out_write(o, s[j], strlen(s[j]) + 1) != 0)
				return -1;
	}
	return out_write(o, "", 1) != 0 || out_pad(o) != 0 ? -1 : 0;
}

/* A BM25 index's serialised bytes, from its own memory. */
static int write_bm25(struct out *o, const struct bm25 *b)
{
	struct bm25_part part[2];

	bm25_serialized_parts(b, part);
	return out_write(o, part[0].p, part[0].len) != 0 ||
	       out_write(o, part[1].p, part[1].len) != 0 ? -1 : 0;
}

/* The sections derived from the rows (the BM25 indexes, the documents). */
static int write_derived(struct out *o, size_t n, const struct derived *dv)
{
	if (write_bm25(o, dv->bm) != 0 || out_pad(o) != 0 ||
	    out_write(o, dv->row_doc, n * sizeof *dv->row_doc) != 0 ||
	    out_write(o, dv->doc_first, (dv->ndocs + 1) * sizeof *dv->doc_first) != 0 ||
	    out_pad(o) != 0 || write_bm25(o, dv->bm_docs) != 0)
		return -1;
	return 0;
}

static void derived_free(struct derived *dv)
{
	free(dv->row_doc);
	free(dv->doc_first);
	bm25_free(dv->bm_docs);         /* may read bm's memory: first */
	bm25_free(dv->bm);
}

/* The texts BM25 counts: each row's, with its document's title (title.h)
 * written RINDEX_TITLE_WEIGHT times before the document's first snippet,
 * one per line.  That is BM25F with the title a field of the first
 * snippet weighing that many times its body: its words count that many
 * times, in the snippet's length too, and so in the document's BM25.
 * Only BM25 and proximity read them; the stored text is the snippet's.
 * The caller frees (*bm_tx)[i] where it differs from tx[i], then *bm_tx
 * and *bm_lens.  0, or -1 when out of memory. */
#define RINDEX_TITLE_WEIGHT 2
static int titled_texts(size_t n, const struct rindex_row *rows, const char *const *tx,
                        const size_t *lens, const struct derived *dv,
                        const char ***bm_tx, size_t **bm_lens)
{
	char title[DOC_TITLE_MAX + 1];

	*bm_tx = malloc((n ? n : 1) * sizeof **bm_tx);
	*bm_lens = malloc((n ? n : 1) * sizeof **bm_lens);
	if (*bm_tx == NULL || *bm_lens == NULL) {
		free(*bm_tx);
		free(*bm_lens);
		*bm_tx = NULL;
		*bm_lens = NULL;
		return -1;
	}
	memcpy(*bm_tx, tx, n * sizeof *tx);
	memcpy(*bm_lens, lens, n * sizeof *lens);
	for (size_t d = 0; d < dv->ndocs; d++) {
		uint32_t f = dv->doc_first[d];
		size_t tl = doc_title(rows[f].meta, title, sizeof title), len;
		char *t, *p;

		if (tl == 0)
			continue;
		len = RINDEX_TITLE_WEIGHT * (tl + 1) + lens[f];
		if ((t = malloc(len + 1)) == NULL)
			return -1;
		p = t;
		for (int w = 0; w < RINDEX_TITLE_WEIGHT; w++) {
			memcpy(p, title, tl);
			p += tl;
			*p++ = '\n';
		}
		memcpy(p, tx[f], lens[f] + 1);
		(*bm_tx)[f] = t;
		(*bm_lens)[f] = len;
	}
	return 0;
}

/* The document map (rows with equal consecutive docs are one document)
 * and both BM25 indexes; the documents' index is counted from the rows'
 * words, not tokenised again.  0, or -1 when out of memory. */
static int derive(size_t n, const struct rindex_row *rows, const char *const *tx,
                  const size_t *lens, struct derived *dv)
{
	const char **bm_tx = NULL;
	size_t *bm_lens = NULL;
	int rc;

	dv->row_doc = malloc((n ? n : 1) * sizeof *dv->row_doc);
	dv->doc_first = malloc((n + 1) * sizeof *dv->doc_first);
	if (dv->row_doc == NULL || dv->doc_first == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || rows[i].doc == NULL || rows[i - 1].doc == NULL ||
		    strcmp(rows[i].doc, rows[i - 1].doc) != 0)
			dv->doc_first[dv->ndocs++] = (uint32_t)i;
		dv->row_doc[i] = (uint32_t)(dv->ndocs - 1);
	}
	dv->doc_first[dv->ndocs] = (uint32_t)n;
	rc = titled_texts(n, rows, tx, lens, dv, &bm_tx, &bm_lens) != 0 ||
	     (dv->bm = bm25_build(bm_tx, bm_lens, n, true)) == NULL ||
	     (dv->bm_docs = bm25_build_groups(dv->bm, dv->doc_first, dv->ndocs)) == NULL ? -1 : 0;
	for (size_t i = 0; bm_tx != NULL && i < n; i++)
		if (bm_tx[i] != tx[i])
			free((char *)bm_tx[i]);
	free(bm_tx);
	free(bm_lens);
	return rc;
}

struct derive_job {
	size_t n;
	const struct rindex_row *rows;
	const char *const *tx;
	const size_t *lens;
	struct derived *dv;
	int rc;
};

static void *derive_run(void *arg)
{
	struct derive_job *j = arg;

	j->rc = derive(j->n, j->rows, j->tx, j->lens, j->dv);
	return NULL;
}

static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = -1;

	if (copy == NULL)
		return -1;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rc = fsync(fd);
		close(fd);
	}
	free(copy);
	return rc;
}

/* rindex_sort: documents in id order, each one's rows by position. */
static int by_document(const void *a, const void *b)
{
	const struct rindex_row *x = a, *y = b;
	int c = strcmp(x->doc, y->doc);

	return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

void rindex_sort(struct rindex_row *rows, size_t n)
{
	if (n > 1)
		qsort(rows, n, sizeof *rows, by_document);
}

int rindex_write(const char *path, size_t n, size_t dim, const float *vecs,
                 const char *const *snippet_ids, const char *const *metadata_json,
                 const char *const *texts, const char *const *doc_ids,
                 char *err, size_t errlen)
{
	struct rindex_row *rows = calloc(n ? n : 1, sizeof *rows);
	int rc;

	if (rows == NULL) {
		snprintf(err, errlen, "index: out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct rindex_row){
			.vec = vecs + i * dim,
			.id = snippet_ids != NULL ? snippet_ids[i] : NULL,
			.meta = metadata_json != NULL ? metadata_json[i] : NULL,
			.text = texts != NULL ? texts[i] : NULL,
			.doc = doc_ids != NULL ? doc_ids[i] : NULL,
		};
	rc = rindex_write_rows(path, n, dim, rows, err, errlen);
	free(rows);
	return rc;
}

int rindex_write_rows(const char *path, size_t n, size_t dim, const struct rindex_row *rows,
                      char *err, size_t errlen)
{
	struct rindex_hdr h;
	struct out o = { .fd = -1 };
	struct derived dv = { 0 };
	struct derive_job job;
	pthread_t th;
	bool threaded = false;
	size_t *lens = NULL;
	const char **tx = NULL;
	struct row_figures rf = { 0 };
	char *tmp = NULL;
	uint64_t strbytes = 1, rows_end;
	int fd = -1, rc = -1;

	if (dim == 0 || dim > RINDEX_MAX_DIM || n > RINDEX_MAX_COUNT) {
		snprintf(err, errlen, "index: dim %zu or count %zu out of range", dim, n);
		return -1;
	}
	lens = calloc(n ? n : 1, sizeof *lens);
	tx = calloc(n ? n : 1, sizeof *tx);
	if (lens == NULL || tx == NULL)
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		tx[i] = str_or(rows[i].text, "");
		lens[i] = strlen(tx[i]);
	}
	/* The BM25 indexes are built on a second thread, started first: they
	 * are the longer half (for 100,000 snippets, about 1.7 s against 1).
	 * This one checks and codes the rows and writes the sections that
	 * follow from the rows alone, whose offsets do not depend on them.
	 * The checksum needs the header first, so the rows are hashed after,
	 * from memory. */
	job = (struct derive_job){ n, rows, tx, lens, &dv, -1 };
	if (!(threaded = thread_start(&th, derive_run, &job)))
		derive_run(&job);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < dim; k++)
			if (!isfinite(rows[i].vec[k])) {
				snprintf(err, errlen, "index: vector %zu has a value that is not a "
				         "finite number", i);
				goto out;
			}
	rf.norms = malloc((n ? n : 1) * sizeof *rf.norms);
	rf.codes = calloc(1, vec_codes_size(n ? n : 1, dim));
	rf.code_rows = malloc((n ? n : 1) * 2 * sizeof *rf.code_rows);
	if (rf.norms == NULL || rf.codes == NULL || rf.code_rows == NULL ||
	    (o.buf = malloc(RINDEX_WRITE_BUF)) == NULL ||
	    (tmp = malloc(strlen(path) + 16)) == NULL)
		goto nomem;
	pages_populate(rf.codes, vec_codes_size(n, dim));
	for (size_t i = 0; i < n; i++)
		strbytes += strlen(str_or(rows[i].id, "")) + strlen(str_or(rows[i].meta, "{}")) +
		            lens[i] + 3;
	sprintf(tmp, "%s.tmp.XXXXXX", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "index: cannot create a file next to %s: %s", path,
		         strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		rf.norms[i] = vec_norm(rows[i].vec, dim);
		(void)vec_encode_row(rows[i].vec, dim, rf.codes, i, &rf.code_rows[i],
		                     &rf.code_rows[n + i]);
	}
	o.fd = fd;
	o.pos = align_up(sizeof h);
	rc = write_rows(&o, n, dim, rows, &rf) != 0 || out_flush(&o) != 0 ? -1 : 0;
	rows_end = o.pos;
#ifdef SYNC_FILE_RANGE_WRITE
	/* Start the rows' writeback while the BM25 thread finishes, so the
	 * fsync below waits for little more than the derived sections. */
	if (rc == 0)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
	if (threaded)
		pthread_join(th, NULL);
	threaded = false;
	if (rc != 0)
		goto io;
	rc = -1;
	if (job.rc != 0)
		goto nomem;
	plan(&h, n, dim, dv.ndocs, strbytes, bm25_serialized_size(dv.bm),
	     bm25_serialized_size(dv.bm_docs));
	if (h.sec[SEC_BM25].off != rows_end) {
		snprintf(err, errlen, "index: sections laid out inconsistently");
		goto out;
	}
	o = (struct out){ .fd = -1, .hash = true, .buf = o.buf };
	hasher_init(&o.hs);
	if (out_write(&o, &h, sizeof h) != 0 || out_pad(&o) != 0 ||
	    write_rows(&o, n, dim, rows, &rf) != 0)
		goto io;
	o.fd = fd;
	if (write_derived(&o, n, &dv) != 0 || out_flush(&o) != 0 || o.pos != h.file_size)
		goto io;
	h.checksum = hasher_final(&o.hs);
	if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || fsync(fd) != 0)
		goto io;
	rc = close(fd);
	fd = -1;
	if (rc != 0 || rename(tmp, path) != 0) {
		rc = -1;
		goto io;
	}
	free(tmp);
	tmp = NULL;                                /* renamed: nothing to remove */
	if (fsync_dir_of(path) != 0)
		goto io;
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "index: out of memory");
	goto out;
io:
	snprintf(err, errlen, "index: writing %s: %s", path, strerror(errno ? errno : EIO));
out:
	if (threaded)
		pthread_join(th, NULL);
	if (fd >= 0)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	derived_free(&dv);
	free(o.buf);
	free(rf.norms);
	free(rf.codes);
	free(rf.code_rows);
	free(tx);
	free(lens);
	return rc;
}

/* ---- reading ---------------------------------------------------------------------- */

static const char *check_header(const struct rindex_hdr *h, size_t size)
{
	if (memcmp(h->magic, RINDEX_MAGIC, sizeof h->magic) != 0)
		return "not an index file";
	if (h->version != RINDEX_VERSION)
		return "unsupported index version";
	if (h->byte_order != RINDEX_BYTE_ORDER)
		return "index written with another byte order";
	if (h->file_size != size)
		return "index file truncated or extended";
	if (h->dim == 0 || h->dim > RINDEX_MAX_DIM || h->count > RINDEX_MAX_COUNT ||
	    h->ndocs > h->count)
		return "index dim or count out of range";
	uint64_t want[SEC_COUNT] = {
		[SEC_VECS] = (uint64_t)h->count * h->dim * sizeof(float),
		[SEC_NORMS] = (uint64_t)h->count * sizeof(float),
		[SEC_CODES] = vec_codes_size(h->count, h->dim),
		[SEC_CODE_ROWS] = (uint64_t)h->count * 2 * sizeof(float),
		[SEC_STROFF] = (uint64_t)h->count * 3 * sizeof(uint64_t),
		[SEC_DOCS] = ((uint64_t)h->count + h->ndocs + 1) * sizeof(uint32_t),
	};
	for (int s = 0; s < SEC_COUNT; s++) {
		if (h->sec[s].off % RINDEX_ALIGN != 0 || h->sec[s].off < sizeof *h ||
		    h->sec[s].off > size || h->sec[s].len > size - h->sec[s].off)
			return "index section outside the file";
		if ((s <= SEC_STROFF || s == SEC_DOCS) && h->sec[s].len != want[s])
			return "index section of the wrong size";
	}
	if (h->sec[SEC_STRS].len == 0)
		return "index string section empty";
	return NULL;
}

/* Every row in exactly one document, documents in row order, none empty. */
static bool docs_consistent(const uint32_t *row_doc, const uint32_t *doc_first,
                            size_t count, size_t ndocs)
{
	if (doc_first[0] != 0 || doc_first[ndocs] != count)
		return false;
	for (size_t d = 0; d < ndocs; d++) {
		if (doc_first[d] >= doc_first[d + 1])
			return false;
		for (size_t i = doc_first[d]; i < doc_first[d + 1]; i++)
			if (row_doc[i] != d)
				return false;
	}
	return true;
}

struct rindex *rindex_open(const char *path, char *err, size_t errlen)
{
	struct rindex *ix = NULL;
	struct rindex_hdr h;
	struct stat st;
	const char *why = NULL;
	void *map = MAP_FAILED;
	size_t size = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "index %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		why = "not a regular file";
		goto out;
	}
	if ((uint64_t)st.st_size < sizeof h || (uint64_t)st.st_size > SIZE_MAX) {
		why = "index file too short";
		goto out;
	}
	size = (size_t)st.st_size;
	if ((map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		why = "cannot map the index file";
		goto out;
	}
#ifdef MADV_HUGEPAGE
	/* A file not in the page cache (after a restart) is then read back
	 * in huge pages too, where the filesystem keeps large folios; a hint
	 * only, so its failure changes nothing. */
	(void)madvise(map, size, MADV_HUGEPAGE);
#endif
	const unsigned char *p = map;
	memcpy(&h, p, sizeof h);
	if ((why = check_header(&h, size)) != NULL)
		goto out;
	/* Every byte, unless another process of this serve (or of this sluice
	 * work) read this very file (index_checks.h). */
	struct rindex_file file = rindex_file_of(&st);
	if (!index_checks_known(&file)) {
		bool good = file_checksum(p, size) == h.checksum;

		index_checks_done(&file, good);
		if (!good) {
			why = "index checksum mismatch (torn or corrupt file)";
			goto out;
		}
	}
	const char *strs = (const char *)p + h.sec[SEC_STRS].off;
	uint64_t strs_len = h.sec[SEC_STRS].len;
	const uint64_t *stroff = (const uint64_t *)(p + h.sec[SEC_STROFF].off);
	if (strs[strs_len - 1] != '\0') {
		why = "index strings not terminated";
		goto out;
	}
	for (size_t i = 0; i < (size_t)h.count * 3; i++)
		if (stroff[i] >= strs_len) {
			why = "index string offset outside its section";
			goto out;
		}
	if ((ix = calloc(1, sizeof *ix)) == NULL) {
		why = "out of memory";
		goto out;
	}
	ix->bm25 = bm25_load(p + h.sec[SEC_BM25].off, h.sec[SEC_BM25].len);
	ix->bm25_docs = bm25_load(p + h.sec[SEC_BM25_DOCS].off, h.sec[SEC_BM25_DOCS].len);
	if (ix->bm25 == NULL || bm25_count(ix->bm25) != h.count ||
	    ix->bm25_docs == NULL || bm25_count(ix->bm25_docs) != h.ndocs) {
		why = "index BM25 section inconsistent";
		goto out;
	}
	ix->row_doc = (const uint32_t *)(p + h.sec[SEC_DOCS].off);
	ix->doc_first = ix->row_doc + h.count;
	if (!docs_consistent(ix->row_doc, ix->doc_first, h.count, h.ndocs)) {
		why = "index document map inconsistent";
		goto out;
	}
	/* An error bound that is not a number >= 0 would drop rows that belong
	 * in a top k. */
	const float *code_err = (const float *)(p + h.sec[SEC_CODE_ROWS].off) + h.count;
	for (size_t i = 0; i < h.count; i++)
		if (!(code_err[i] >= 0.0f && code_err[i] <= FLT_MAX)) {
			why = "index code error bound invalid";
			goto out;
		}
	ix->ndocs = h.ndocs;
	ix->file = file;
	ix->map = map;
	ix->size = size;
	ix->dim = h.dim;
	ix->count = h.count;
	ix->vecs = (const float *)(p + h.sec[SEC_VECS].off);
	ix->norms = (const float *)(p + h.sec[SEC_NORMS].off);
	ix->codes = (struct vec_codes){
		(const int8_t *)(p + h.sec[SEC_CODES].off), vec_code_stride(h.dim),
		(const float *)(p + h.sec[SEC_CODE_ROWS].off),
		(const float *)(p + h.sec[SEC_CODE_ROWS].off) + h.count,
	};
	ix->stroff = stroff;
	ix->strs = strs;
	map = MAP_FAILED;                          /* ix owns the mapping */
out:
	close(fd);
	if (why != NULL) {
		snprintf(err, errlen, "index %s: %s", path, why);
		if (ix != NULL) {
			bm25_free(ix->bm25);
			bm25_free(ix->bm25_docs);
		}
		free(ix);
		ix = NULL;
	}
	if (map != MAP_FAILED)
		munmap(map, size);
	return ix;
}

void rindex_close(struct rindex *ix)
{
	if (ix == NULL)
		return;
	bm25_free(ix->bm25);
	bm25_free(ix->bm25_docs);
	munmap(ix->map, ix->size);
	free(ix);
}

const struct rindex_file *rindex_file(const struct rindex *ix) { return &ix->file; }

struct rindex_file rindex_file_of(const struct stat *st)
{
	return (struct rindex_file){ (uint64_t)st->st_dev, (uint64_t)st->st_ino,
	                             (uint64_t)st->st_size, (int64_t)st->st_mtim.tv_sec,
	                             (int64_t)st->st_mtim.tv_nsec, (int64_t)st->st_ctim.tv_sec,
	                             (int64_t)st->st_ctim.tv_nsec };
}

bool rindex_file_same(const struct rindex_file *a, const struct rindex_file *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns &&
	       a->ctime_s == b->ctime_s && a->ctime_ns == b->ctime_ns;
}
size_t rindex_count(const struct rindex *ix) { return ix->count; }
size_t rindex_dim(const struct rindex *ix) { return ix->dim; }
const float *rindex_vectors(const struct rindex *ix) { return ix->vecs; }
const float *rindex_norms(const struct rindex *ix) { return ix->norms; }
const struct vec_codes *rindex_codes(const struct rindex *ix) { return &ix->codes; }
const struct bm25 *rindex_bm25(const struct rindex *ix) { return ix->bm25; }
const struct bm25 *rindex_bm25_docs(const struct rindex *ix) { return ix->bm25_docs; }
size_t rindex_doc_count(const struct rindex *ix) { return ix->ndocs; }
uint32_t rindex_row_doc(const struct rindex *ix, size_t row) { return ix->row_doc[row]; }
size_t rindex_doc_first_row(const struct rindex *ix, size_t doc) { return ix->doc_first[doc]; }
const uint32_t *rindex_row_docs(const struct rindex *ix) { return ix->row_doc; }
const uint32_t *rindex_doc_first_rows(const struct rindex *ix) { return ix->doc_first; }

static const char *row_string(const struct rindex *ix, size_t row, int which)
{
	return row < ix->count ? ix->strs + ix->stroff[row * 3 + which] : NULL;
}

const char *rindex_snippet_id(const struct rindex *ix, size_t row) { return row_string(ix, row, 0); }
const char *rindex_metadata(const struct rindex *ix, size_t row) { return row_string(ix, row, 1); }
const char *rindex_text(const struct rindex *ix, size_t row) { return row_string(ix, row, 2); }
