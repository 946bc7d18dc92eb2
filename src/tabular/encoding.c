/* encoding.c - a text file read as UTF-8 whatever its encoding (see
 * internal.h).
 *
 * Which encoding:
 *   - an explicit one (the encoding option) is used as given; a byte order
 *     mark that agrees with it is dropped;
 *   - else a byte order mark decides: EF BB BF UTF-8, FF FE UTF-16LE,
 *     FE FF UTF-16BE (the mark itself is dropped);
 *   - else the text is UTF-8 while it is ASCII; at the first non-ASCII byte
 *     the rest of that read (plus the few bytes after it) decides: valid
 *     UTF-8 makes it UTF-8 for good, text with no byte in 0x80-0x9F (the C1
 *     controls, which Latin-1 text never holds) makes it Latin-1 for good,
 *     anything else is "invalid UTF-8 at byte N".  Everything before that
 *     byte was ASCII, which reads the same in both.
 * "utf-16" without a byte order mark picks the byte order from where the
 * zero bytes of ASCII characters fall in the first 4 KiB.
 *
 * UTF-8 is read straight into the caller's buffer and validated there (an
 * eight-bytes-at-a-time ASCII fast path); the other encodings go through
 * iconv(3).  A NUL character is refused in every encoding: the cells are C
 * strings, and a NUL in "UTF-8" text is nearly always UTF-16 without a
 * byte order mark. */
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tabular/internal.h"
#include "util/str.h"

enum dec_mode {
	DEC_DETECT,        /* ASCII so far, nothing decided */
	DEC_UTF8,          /* validating UTF-8 */
	DEC_ICONV,         /* converting with cd */
};

struct tab_dec {
	int fd;
	enum dec_mode mode;
	iconv_t cd;
	const char *name;
	long long off;               /* file offset of the next byte read */
	/* DEC_UTF8: a sequence cut by the end of the last read */
	unsigned need;               /* continuation bytes still expected */
	unsigned char lo, hi;        /* range of the next continuation byte */
	long long seq_off;           /* offset of its lead byte */
	/* DEC_ICONV: raw bytes read but not converted yet */
	char *raw;
	size_t raw_pos, raw_len;
	long long raw_off;           /* file offset of raw[0] */
	size_t chunk;                /* read size, see tab_dec_chunk */
	bool eof;
};

static const struct {
	const char *name;            /* as the option spells it */
	const char *iconv_name;      /* NULL: UTF-8, read natively */
	const char *read_as;         /* stats name */
} encodings[] = {
	{ "utf-8", NULL, "utf-8" },
	{ "utf8", NULL, "utf-8" },
	{ "utf-16", "", "utf-16" },  /* byte order from the mark or the text */
	{ "utf16", "", "utf-16" },
	{ "utf-16le", "UTF-16LE", "utf-16le" },
	{ "utf-16be", "UTF-16BE", "utf-16be" },
	{ "latin-1", "ISO-8859-1", "latin-1" },
	{ "latin1", "ISO-8859-1", "latin-1" },
	{ "iso-8859-1", "ISO-8859-1", "latin-1" },
	{ "iso8859-1", "ISO-8859-1", "latin-1" },
	{ "windows-1252", "WINDOWS-1252", "windows-1252" },
	{ "cp1252", "WINDOWS-1252", "windows-1252" },
};

static int enc_index(const char *name)
{
	for (size_t i = 0; i < sizeof encodings / sizeof encodings[0]; i++)
		if (str_eq_nocase(name, encodings[i].name))
			return (int)i;
	return -1;
}

bool tab_dec_known(const char *name)
{
	return name != NULL && enc_index(name) >= 0;
}

/* ---- UTF-8 validation --------------------------------------------------- */

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Index of the first byte at or after i that is >= 0x80 or NUL, or n. */
static size_t ascii_run(const unsigned char *s, size_t i, size_t n)
{
	while (i + 8 <= n) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		/* a high bit set, or a zero byte */
		if (((w | ((w - ONES) & ~w)) & HIGHS) != 0)
			break;
		i += 8;
	}
	while (i < n && s[i] != 0 && s[i] < 0x80)
		i++;
	return i;
}

/* Continuation count and the allowed range of the first continuation byte
 * for lead byte c (RFC 3629: no overlongs, no surrogates, <= U+10FFFF);
 * 0 when c cannot lead a sequence. */
static unsigned lead_info(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		return 1;
	if (c >= 0xE0 && c <= 0xEF) {
		if (c == 0xE0)
			*lo = 0xA0;
		else if (c == 0xED)
			*hi = 0x9F;
		return 2;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if (c == 0xF0)
			*lo = 0x90;
		else if (c == 0xF4)
			*hi = 0x8F;
		return 3;
	}
	return 0;
}

/* Validate s[0..n) (s[0] at text offset base) continuing the sequence
 * state in d.  The index in s of the first invalid byte, or n; *bad_at is
 * then the offset to report: the invalid byte's, or the lead byte's of the
 * sequence it breaks. */
static size_t utf8_step(struct tab_dec *d, const unsigned char *s, size_t n,
                        long long base, long long *bad_at)
{
	size_t i = 0;

	for (;;) {
		while (d->need > 0) {
			if (i == n)
				return n;
			if (s[i] < d->lo || s[i] > d->hi) {
				*bad_at = d->seq_off;
				return i;
			}
			d->lo = 0x80;
			d->hi = 0xBF;
			d->need--;
			i++;
		}
		i = ascii_run(s, i, n);
		if (i == n)
			return n;
		if (s[i] == 0) {
			*bad_at = base + (long long)i;
			return i;
		}
		d->need = lead_info(s[i], &d->lo, &d->hi);
		if (d->need == 0) {
			*bad_at = base + (long long)i;
			return i;
		}
		d->seq_off = base + (long long)i;
		i++;
	}
}

size_t tab_utf8_invalid_at(const unsigned char *s, size_t n)
{
	struct tab_dec d = { .fd = -1 };
	long long bad = -1;
	size_t i = utf8_step(&d, s, n, 0, &bad);

	if (i < n)
		return (size_t)bad;
	if (d.need > 0)
		return (size_t)d.seq_off;
	return n;
}

/* ---- open ---------------------------------------------------------------- */

static int start_iconv(struct tab_dec *d, const char *from, char *err, size_t errlen)
{
	d->cd = iconv_open("UTF-8", from);
	if (d->cd == (iconv_t)-1) {
		str_errf(err, errlen, "encoding %s is not available (iconv: %s)", from,
		         strerror(errno));
		return TAB_ERR_IO;
	}
	d->raw = malloc(d->chunk);
	if (d->raw == NULL) {
		str_errf(err, errlen, "out of memory");
		return TAB_ERR_IO;
	}
	d->mode = DEC_ICONV;
	d->raw_off = d->off;
	return 0;
}

/* UTF-16 with no byte order mark: little-endian when ASCII's zero bytes
 * fall on odd offsets more often than on even ones. */
static bool utf16_guess_le(int fd, long long at)
{
	unsigned char b[4096];
	ssize_t n = pread(fd, b, sizeof b, at);
	long even = 0, odd = 0;

	for (ssize_t i = 0; i + 1 < n; i += 2) {
		even += b[i] == 0;
		odd += b[i + 1] == 0;
	}
	return odd >= even;
}

int tab_dec_open(struct tab_dec **out, const char *path, const char *encoding,
                 char *err, size_t errlen)
{
	struct tab_dec *d = NULL;
	unsigned char bom[3] = { 0 };
	ssize_t nb;
	int enc = -1, rc;
	const char *bom_enc = NULL;
	size_t bom_len = 0;

	*out = NULL;
	if (encoding != NULL && encoding[0] != '\0') {
		enc = enc_index(encoding);
		if (enc < 0) {
			str_errf(err, errlen,
			         "unknown encoding '%s' (utf-8, utf-16, utf-16le, utf-16be, "
			         "latin-1, iso-8859-1, windows-1252)", encoding);
			return TAB_ERR_OPTION;
		}
	}
	d = calloc(1, sizeof *d);
	if (d == NULL) {
		str_errf(err, errlen, "out of memory");
		return TAB_ERR_IO;
	}
	d->cd = (iconv_t)-1;
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0) {
		str_errf(err, errlen, "cannot open the file: %s", strerror(errno));
		rc = TAB_ERR_IO;
		goto fail;
	}
	{
		struct stat sb;

		/* small files get small buffers: the decoded text of n bytes is
		 * at most 2n bytes (Latin-1 to UTF-8) */
		d->chunk = TAB_READ_CHUNK;
		if (fstat(d->fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    sb.st_size < (off_t)(TAB_READ_CHUNK / 2))
			d->chunk = (size_t)sb.st_size * 2 + 64 < 4096 ? 4096
			           : (size_t)sb.st_size * 2 + 64;
	}
	nb = pread(d->fd, bom, sizeof bom, 0);
	if (nb < 0) {
		str_errf(err, errlen, "cannot read the file: %s", strerror(errno));
		rc = TAB_ERR_IO;
		goto fail;
	}
	if (nb >= 3 && bom[0] == 0xEF && bom[1] == 0xBB && bom[2] == 0xBF) {
		bom_enc = "utf-8";
		bom_len = 3;
	} else if (nb >= 2 && bom[0] == 0xFF && bom[1] == 0xFE) {
		bom_enc = "utf-16le";
		bom_len = 2;
	} else if (nb >= 2 && bom[0] == 0xFE && bom[1] == 0xFF) {
		bom_enc = "utf-16be";
		bom_len = 2;
	}

	if (enc < 0 && bom_enc == NULL) {
		d->mode = DEC_DETECT;
		d->name = "utf-8";
	} else {
		const char *want = enc >= 0 ? encodings[enc].read_as : bom_enc;

		if (strcmp(want, "utf-16") == 0)
			want = bom_enc != NULL && strcmp(bom_enc, "utf-8") != 0 ? bom_enc
			       : utf16_guess_le(d->fd, 0) ? "utf-16le" : "utf-16be";
		/* A mark is dropped when it is the mark of the encoding read. */
		if (bom_enc != NULL && strcmp(bom_enc, want) == 0)
			d->off = (long long)bom_len;
		if (strcmp(want, "utf-8") == 0) {
			d->mode = DEC_UTF8;
			d->name = "utf-8";
		} else {
			for (size_t i = 0; i < sizeof encodings / sizeof encodings[0]; i++)
				if (strcmp(encodings[i].read_as, want) == 0 &&
				    encodings[i].iconv_name != NULL && encodings[i].iconv_name[0]) {
					d->name = encodings[i].read_as;
					rc = start_iconv(d, encodings[i].iconv_name, err, errlen);
					if (rc != 0)
						goto fail;
					break;
				}
		}
	}
	if (d->off > 0 && lseek(d->fd, (off_t)d->off, SEEK_SET) < 0) {
		str_errf(err, errlen, "cannot read the file: %s", strerror(errno));
		rc = TAB_ERR_IO;
		goto fail;
	}
	*out = d;
	return 0;
fail:
	tab_dec_close(d);
	return rc;
}

void tab_dec_close(struct tab_dec *d)
{
	if (d == NULL)
		return;
	if (d->fd >= 0)
		close(d->fd);
	if (d->cd != (iconv_t)-1)
		iconv_close(d->cd);
	free(d->raw);
	free(d);
}

const char *tab_dec_encoding(const struct tab_dec *d)
{
	return d->name;
}

size_t tab_dec_chunk(const struct tab_dec *d)
{
	return d->chunk;
}

/* ---- reading ----------------------------------------------------------- */

static long read_some(struct tab_dec *d, char *dst, size_t cap, char *err, size_t errlen)
{
	ssize_t n;

	do
		n = read(d->fd, dst, cap);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		str_errf(err, errlen, "cannot read the file: %s", strerror(errno));
		return TAB_ERR_IO;
	}
	return (long)n;
}

static long utf8_check(struct tab_dec *d, const char *buf, size_t n, char *err,
                       size_t errlen)
{
	long long bad = -1;
	size_t i = utf8_step(d, (const unsigned char *)buf, n, d->off, &bad);

	if (i < n) {
		if ((unsigned char)buf[i] == 0 && bad == d->off + (long long)i)
			str_errf(err, errlen,
			         "NUL byte at byte %lld (UTF-16 without a byte order mark? "
			         "set the encoding)", bad);
		else
			str_errf(err, errlen, "invalid UTF-8 at byte %lld", bad);
		return TAB_ERR_FORMAT;
	}
	return 0;
}

/* Detection at the first non-ASCII byte, buf[i]: UTF-8 when the rest of
 * the read (and up to 3 bytes after it, for a sequence the read cut) is
 * valid UTF-8; Latin-1 when it holds no C1 control byte. */
static int decide(struct tab_dec *d, const char *buf, size_t i, size_t n, bool *latin1)
{
	const unsigned char *s = (const unsigned char *)buf;
	unsigned char tail[8];
	struct tab_dec probe = { .fd = -1 };
	long long bad = -1;
	size_t at = utf8_step(&probe, s + i, n - i, 0, &bad);

	*latin1 = false;
	if (at == n - i && probe.need > 0) {
		/* cut by the end of this read: look at the next bytes */
		ssize_t m = pread(d->fd, tail, probe.need, d->off + (long long)n);
		size_t j = m > 0 ? (size_t)m : 0;

		at = utf8_step(&probe, tail, j, 0, &bad);
		if (at == j && probe.need == 0)
			return 0;
		at = 0;           /* invalid (or cut by the end of the file) */
	} else if (at == n - i) {
		return 0;
	}
	for (size_t k = i; k < n; k++)
		if (s[k] >= 0x80 && s[k] <= 0x9F)
			return -1;
	*latin1 = true;
	return 0;
}

/* Keep the unread raw bytes (a cut sequence), moved to the front, and read
 * more behind them: the count read (0 at the end of the file, which sets
 * eof), or a negative enum tab_err. */
static long refill(struct tab_dec *d, char *err, size_t errlen)
{
	size_t keep = d->raw_len - d->raw_pos;
	long n;

	memmove(d->raw, d->raw + d->raw_pos, keep);
	d->raw_off += (long long)d->raw_pos;
	d->raw_pos = 0;
	d->raw_len = keep;
	n = read_some(d, d->raw + keep, d->chunk - keep, err, errlen);
	if (n < 0)
		return n;
	d->off += n;
	d->raw_len += (size_t)n;
	if (n == 0)
		d->eof = true;
	return n;
}

static long iconv_read(struct tab_dec *d, char *dst, size_t cap, char *err, size_t errlen)
{
	char *out = dst;
	size_t outleft = cap;

	while (outleft > 0) {
		if (d->raw_pos == d->raw_len || d->raw_len - d->raw_pos < 8) {
			/* keep a cut sequence, read more behind it */
			long n = d->eof ? 0 : refill(d, err, errlen);

			if (n < 0)
				return n;
			if (d->raw_pos == d->raw_len)
				break;
		}
		char *in = d->raw + d->raw_pos;
		size_t inleft = d->raw_len - d->raw_pos;
		size_t r = iconv(d->cd, &in, &inleft, &out, &outleft);
		int e = errno;

		d->raw_pos = (size_t)(in - d->raw);
		if (r != (size_t)-1)
			continue;
		if (e == E2BIG)
			break;
		if (e == EINVAL) {
			/* a sequence cut by the end of what was read */
			if (d->eof) {
				str_errf(err, errlen, "%s text cut short at byte %lld", d->name,
				         d->raw_off + (long long)d->raw_pos);
				return TAB_ERR_FORMAT;
			}
			if (d->raw_pos > 0 || d->raw_len < d->chunk) {
				/* read more behind the cut sequence */
				long n = refill(d, err, errlen);

				if (n < 0)
					return n;
				continue;
			}
		}
		str_errf(err, errlen, "invalid %s at byte %lld", d->name,
		         d->raw_off + (long long)d->raw_pos);
		return TAB_ERR_FORMAT;
	}
	if (memchr(dst, 0, (size_t)(out - dst)) != NULL) {
		str_errf(err, errlen, "NUL character before byte %lld",
		         d->raw_off + (long long)d->raw_pos);
		return TAB_ERR_FORMAT;
	}
	return (long)(out - dst);
}

long tab_dec_read(struct tab_dec *d, char *dst, size_t cap, char *err, size_t errlen)
{
	long n;

	if (cap < 8) {
		/* iconv needs room for one whole character */
		str_errf(err, errlen, "internal error: decoder buffer too small");
		return TAB_ERR_IO;
	}
	/* never more than the raw buffer holds, should detection switch to
	 * iconv in the middle of this read */
	if (cap > d->chunk)
		cap = d->chunk;
	if (d->mode == DEC_ICONV)
		return iconv_read(d, dst, cap, err, errlen);
	n = read_some(d, dst, cap, err, errlen);
	if (n < 0)
		return n;
	if (n == 0) {
		if (d->mode == DEC_UTF8 && d->need > 0) {
			str_errf(err, errlen, "invalid UTF-8 at byte %lld (cut short)", d->seq_off);
			return TAB_ERR_FORMAT;
		}
		return 0;
	}
	if (d->mode == DEC_DETECT) {
		size_t i = ascii_run((const unsigned char *)dst, 0, (size_t)n);
		bool latin1;

		if (i == (size_t)n) {
			d->off += n;
			return n;
		}
		if (dst[i] == 0) {
			str_errf(err, errlen,
			         "NUL byte at byte %lld (UTF-16 without a byte order mark? "
			         "set the encoding)", d->off + (long long)i);
			return TAB_ERR_FORMAT;
		}
		if (decide(d, dst, i, (size_t)n, &latin1) != 0) {
			long long bad = -1;
			struct tab_dec probe = { .fd = -1 };
			size_t at = utf8_step(&probe, (const unsigned char *)dst + i,
			                      (size_t)n - i, d->off + (long long)i, &bad);
			if (at == (size_t)n - i)
				bad = probe.seq_off;
			str_errf(err, errlen, "invalid UTF-8 at byte %lld", bad);
			return TAB_ERR_FORMAT;
		}
		if (latin1) {
			/* Hand out the ASCII part now; the rest goes to iconv. */
			int rc;
			long long at = d->off + (long long)i;

			d->off = at;
			rc = start_iconv(d, "ISO-8859-1", err, errlen);
			if (rc != 0)
				return rc;
			d->name = "latin-1";
			d->off += n - (long)i;
			memcpy(d->raw, dst + i, (size_t)n - i);
			d->raw_len = (size_t)n - i;
			d->raw_off = at;
			if (i > 0)
				return (long)i;
			return iconv_read(d, dst, cap, err, errlen);
		}
		d->mode = DEC_UTF8;
		d->need = 0;
		{
			long long base = d->off;
			long rc;

			/* utf8_check counts offsets from d->off */
			d->off = base + (long long)i;
			rc = utf8_check(d, dst + i, (size_t)n - i, err, errlen);
			d->off = base + n;
			if (rc < 0)
				return rc;
		}
		return n;
	}
	{
		long rc = utf8_check(d, dst, (size_t)n, err, errlen);

		d->off += n;
		if (rc < 0)
			return rc;
	}
	return n;
}
