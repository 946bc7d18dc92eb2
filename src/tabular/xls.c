/* xls.c - the rows of one sheet of a legacy Excel workbook (BIFF in an
 * OLE2 compound file) through libfreexl.
 *
 * FreeXL decodes the whole selected sheet when it is selected (its cells in
 * one array of rows x columns); a BIFF8 sheet is at most 65536 x 256 cells,
 * so that bounds the memory.  FreeXL already turns cells whose format shows
 * a date into text, in the workbook's date system: DATE "YYYY-MM-DD",
 * DATETIME "YYYY-MM-DD HH:MM:SS", TIME "HH:MM:SS".  Row rules (skip_rows,
 * header_row, blank rows, padding) are sheet.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <freexl.h>

#include "tabular/formats.h"
#include "tabular/sheet.h"
#include "util/str.h"

/* Text of a number that reads back as the same double, as short as may be. */
static void number_text(double d, char *buf, size_t cap)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

static const char *freexl_reason(int rc)
{
	switch (rc) {
	case FREEXL_FILE_NOT_FOUND: return "cannot open the file";
	case FREEXL_INSUFFICIENT_MEMORY: return "out of memory";
	case FREEXL_INVALID_CFBF_HEADER:
	case FREEXL_CFBF_INVALID_SIGNATURE:
		return "not an XLS file (no OLE2 compound file header)";
	case FREEXL_CFBF_READ_ERROR:
	case FREEXL_CFBF_SEEK_ERROR:
		return "truncated or damaged (cannot read a sector)";
	case FREEXL_CFBF_INVALID_SECTOR_SIZE:
	case FREEXL_CFBF_EMPTY_FAT_CHAIN:
	case FREEXL_CFBF_ILLEGAL_FAT_ENTRY:
	case FREEXL_INVALID_MINI_STREAM:
	case FREEXL_CFBF_ILLEGAL_MINI_FAT_ENTRY:
		return "damaged compound file (bad allocation table)";
	case FREEXL_BIFF_INVALID_BOF: return "damaged workbook stream (bad BOF record)";
	case FREEXL_BIFF_INVALID_SST: return "damaged shared strings table";
	case FREEXL_BIFF_ILLEGAL_SST_INDEX: return "a shared string index out of range";
	case FREEXL_BIFF_WORKBOOK_NOT_FOUND: return "no workbook stream in the file";
	case FREEXL_INVALID_CHARACTER: return "text not in the workbook's code page";
	case FREEXL_UNSUPPORTED_CHARSET: return "the workbook's code page is not supported";
	case FREEXL_ILLEGAL_RK_VALUE: return "a damaged number (RK) record";
	case FREEXL_CRAFTED_FILE: return "a severely damaged (or crafted) file";
	default: return "unreadable";
	}
}

/* --- what FreeXL would read, checked before it reads it ----------------- */

/* FreeXL 1.0.6 trusts lengths stated inside the file:
 * - a directory entry's name is converted with the length the entry states
 *   (up to 65535 bytes) from a 64-byte field;
 * - a sector's place is (id + 1) x size in 32 bits: a directory sector id
 *   past the file wraps round to the header, whose bytes then read as a
 *   directory entry with any name length;
 * - a FORMAT or LABEL record's string is copied with the character count the
 *   record states (up to 65535 UTF-16 characters) from its 8224-byte record
 *   buffer, whatever the record's size; in a BIFF3 or BIFF4 file (a bare
 *   record stream, no compound file) a LABEL's too;
 * - a workbook stream under the mini-stream cutoff is read from the root
 *   entry's stream, for the workbook's size, whatever the root's size;
 * - a stream whose sector chain runs on past its stated size moves FreeXL's
 *   end of sector beyond its sector buffer.
 * Each lets a crafted file make FreeXL read past one of its buffers (the
 * first three were found by fuzzing, the rest by reading its source).
 * So the file is walked first the way FreeXL walks it (MS-CFB for the
 * compound file, MS-XLS for the records): its directory, the workbook
 * stream's sector chain, and every record that carries such a string (the
 * stream is held whole meanwhile: FreeXL holds every cell of it after).
 * Anything else wrong with the file is left for FreeXL to refuse. */
#define CFB_ENTRY 128
#define CFB_NAME_MAX 64                /* bytes of UTF-16 with the NUL */
#define CFB_HEADER_DIFAT 109
#define CFB_END 0xFFFFFFFEu
#define BIFF_RECORD_MAX 8224           /* FreeXL's record buffer */
#define BIFF_MINI_RECORD_MAX 8191      /* FreeXL's bound in a mini stream */

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static unsigned le16(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

struct cfb {
	int fd;
	size_t ssz;                        /* sector size */
	off_t nsect;                       /* sectors in the file after the header */
	unsigned char hdr[512];
};

/* Sector sid into buf (ssz bytes); -1 when it is not in the file. */
static int cfb_sector(const struct cfb *c, uint32_t sid, unsigned char *buf)
{
	if ((off_t)sid >= c->nsect)
		return -1;
	return pread(c->fd, buf, c->ssz, ((off_t)sid + 1) * (off_t)c->ssz) ==
	       (ssize_t)c->ssz ? 0 : -1;
}

/* The allocation table's entry for sid (the next sector of its chain). */
static int cfb_next(const struct cfb *c, uint32_t sid, unsigned char *buf, uint32_t *next)
{
	uint32_t per = (uint32_t)(c->ssz / 4), k = sid / per, fat;

	if (k < CFB_HEADER_DIFAT) {
		fat = le32(c->hdr + 0x4C + 4 * k);
	} else {
		/* the DIFAT sectors: per - 1 entries and the next one's id */
		uint32_t d = le32(c->hdr + 0x44);

		k -= CFB_HEADER_DIFAT;
		for (off_t hops = 0; k >= per - 1; k -= per - 1) {
			if (cfb_sector(c, d, buf) != 0 || ++hops > c->nsect)
				return -1;
			d = le32(buf + c->ssz - 4);
		}
		if (cfb_sector(c, d, buf) != 0)
			return -1;
		fat = le32(buf + 4 * k);
	}
	if (cfb_sector(c, fat, buf) != 0)
		return -1;
	*next = le32(buf + 4 * (sid % per));
	return 0;
}

/* 0, or -1 when a directory entry states a name longer than its field. */
static int cfb_names_ok(const struct cfb *c, unsigned char *buf)
{
	uint32_t sid = le32(c->hdr + 0x30);

	for (off_t n = 0; sid != CFB_END && n <= c->nsect; n++) {
		if (cfb_sector(c, sid, buf) != 0)
			break;
		for (size_t e = 0; e < c->ssz; e += CFB_ENTRY)
			if (le16(buf + e + 0x40) > CFB_NAME_MAX)
				return -1;
		if (cfb_next(c, sid, buf, &sid) != 0)
			break;
	}
	return 0;
}

/* Whether a directory entry's name is the ASCII name want. */
static bool cfb_name_is(const unsigned char *entry, const char *want)
{
	size_t i, n = le16(entry + 0x40) / 2;

	for (i = 0; i < n && i < CFB_NAME_MAX / 2 && le16(entry + 2 * i) != 0; i++)
		if (want[i] == '\0' || le16(entry + 2 * i) != (unsigned char)want[i])
			return false;
	return want[i] == '\0';
}

/* The stream of size bytes whose chain starts at sid, into a new buffer;
 * NULL when its chain leaves the file, loops, or is not exactly as long
 * as the size needs (FreeXL follows the chain, not the size). */
static unsigned char *cfb_stream(const struct cfb *c, uint32_t sid, uint32_t size,
                                 unsigned char *buf)
{
	size_t got = 0;
	unsigned char *s;

	if ((off_t)size > c->nsect * (off_t)c->ssz || (s = malloc(size + 1)) == NULL)
		return NULL;
	while (got < size) {
		size_t n = size - got < c->ssz ? size - got : c->ssz;

		if (cfb_sector(c, sid, buf) != 0)
			goto bad;
		memcpy(s + got, buf, n);
		got += n;
		if (cfb_next(c, sid, buf, &sid) != 0 || (got < size) == (sid == CFB_END))
			goto bad;
	}
	return s;
bad:
	free(s);
	return NULL;
}

/* Whether a string at off of a record of size bytes, stated chars long
 * with a BIFF8 option byte first (utf16) or as bytes, lies in the record. */
static bool biff_string_fits(const unsigned char *rec, size_t size, size_t off,
                             size_t chars, bool utf16)
{
	if (!utf16)
		return off + chars <= size;
	if (off + 1 > size)
		return false;
	unsigned char opt = rec[off];
	size_t at = off + 1 + (opt & 0x08 ? 2 : 0) + (opt & 0x04 ? 4 : 0);
	return at + chars * (opt & 0x01 ? 2 : 1) <= size;
}

/* 0, or -1 when a FORMAT or LABEL record of the workbook stream s states a
 * string longer than the record, as FreeXL reads them: the version is the
 * first BOF record's; from BIFF5 on (BOF 0x0809) the stream ends at a
 * zero record or one over max.  Before BIFF5 (a bare record stream) FreeXL
 * skips any record it does not read and stops only at its EOF record, so
 * every record to the end is checked; there a FORMAT's length is a byte
 * and only a LABEL can reach past the record buffer. */
static int biff_strings_ok(const unsigned char *s, size_t n, size_t max)
{
	bool legacy = n < 4 || le16(s) != 0x0809;
	bool v8 = !legacy && n >= 6 && le16(s + 4) == 0x0600;

	for (size_t p = 0; p + 4 <= n;) {
		unsigned type = le16(s + p), size = le16(s + p + 2);
		const unsigned char *rec = s + p + 4;

		if (!legacy && ((type == 0 && size == 0) || size > max))
			break;
		if (p + 4 + size > n)
			break;
		p += 4 + size;
		if (size > max)                    /* skipped, never copied */
			continue;
		if (type == 0x0204 &&              /* LABEL: row, col, xf, length */
		    (size < 8 || !biff_string_fits(rec, size, 8, le16(rec + 6), v8)))
			return -1;
		if (type == 0x041E && !legacy &&   /* FORMAT: index, string */
		    (v8 ? size < 4 || !biff_string_fits(rec, size, 4, le16(rec + 2), true)
		        : size < 4 || !biff_string_fits(rec, size, 3, rec[3], false)))
			return -1;
	}
	return 0;
}

/* NULL, or why FreeXL must not read the file at path. */
static const char *xls_unsafe(const char *path)
{
	static const unsigned char magic[8] = { 0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1 };
	struct cfb c = { .fd = -1 };
	unsigned char *buf = NULL, *s = NULL;
	uint32_t wb_sid = 0, wb_size = 0, root_sid = 0, root_size = 0;
	bool found = false, mini;
	const char *why = NULL;
	struct stat st;
	unsigned shift;

	if ((c.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(c.fd, &st) != 0 ||
	    st.st_size < 4 || pread(c.fd, c.hdr, 4, 0) != 4)
		goto out;                  /* FreeXL says what is wrong */
	if (memcmp(c.hdr, magic, 4) != 0) {
		/* no compound file: BIFF2 to BIFF4 are a bare record stream,
		 * which FreeXL reads after a BOF of theirs (mapped, not read:
		 * the walk touches each record's head and a LABEL's length) */
		unsigned bof = le16(c.hdr);
		void *m;

		if ((bof != 0x0009 && bof != 0x0209 && bof != 0x0409) ||
		    (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, c.fd, 0)) == MAP_FAILED)
			goto out;
		if (biff_strings_ok(m, (size_t)st.st_size, BIFF_RECORD_MAX) != 0)
			why = "damaged workbook stream (a string longer than its record)";
		munmap(m, (size_t)st.st_size);
		goto out;
	}
	if (pread(c.fd, c.hdr, sizeof c.hdr, 0) != (ssize_t)sizeof c.hdr ||
	    memcmp(c.hdr, magic, sizeof magic) != 0)
		goto out;
	shift = le16(c.hdr + 0x1E);
	if (shift != 9 && shift != 12)
		goto out;
	c.ssz = (size_t)1 << shift;
	c.nsect = st.st_size / (off_t)c.ssz - 1;
	if ((buf = malloc(c.ssz)) == NULL)
		goto out;
	if ((off_t)le32(c.hdr + 0x30) >= c.nsect) {
		why = "damaged compound file (its directory outside the file)";
		goto out;
	}
	if (cfb_names_ok(&c, buf) != 0) {
		why = "damaged compound file (a directory name too long)";
		goto out;
	}
	/* FreeXL looks for the workbook in the first directory sector only */
	if (cfb_sector(&c, le32(c.hdr + 0x30), buf) != 0)
		goto out;                  /* short: FreeXL says so */
	for (size_t e = 0; e < c.ssz && !found; e += CFB_ENTRY) {
		if (cfb_name_is(buf + e, "Root Entry")) {
			root_sid = le32(buf + e + 0x74);
			root_size = le32(buf + e + 0x78);
		}
		if (cfb_name_is(buf + e, "Workbook") || cfb_name_is(buf + e, "Book")) {
			wb_sid = le32(buf + e + 0x74);
			wb_size = le32(buf + e + 0x78);
			found = true;
		}
	}
	if (!found)
		goto out;
	mini = wb_size <= le32(c.hdr + 0x38);
	if (mini && wb_size > root_size) {
		why = "damaged compound file (a stream longer than its container)";
		goto out;
	}
	s = mini ? cfb_stream(&c, root_sid, root_size, buf) : cfb_stream(&c, wb_sid, wb_size, buf);
	if (s == NULL) {
		why = "damaged compound file (a sector chain not as long as its stream)";
		goto out;
	}
	if (biff_strings_ok(s, wb_size, mini ? BIFF_MINI_RECORD_MAX : BIFF_RECORD_MAX) != 0)
		why = "damaged workbook stream (a string longer than its record)";
out:
	free(s);
	free(buf);
	if (c.fd >= 0)
		close(c.fd);
	return why;
}

int xls_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
             struct tab_stats *stats, char *err, size_t errlen)
{
	const void *h = NULL;
	struct tab_stats local_stats;
	struct sheet_rows rows;
	struct tab_cell *cells = NULL;
	char *nums = NULL;          /* number text, 32 bytes a column */
	unsigned int nsheets = 0, pw = 0, nrows = 0;
	unsigned short ncols = 0, pick = 0;
	const char *name = NULL, *why;
	struct stat st;
	int rc, ret = TAB_ERR_FORMAT;
	bool found = false;

	if (stats == NULL)
		stats = &local_stats;
	memset(stats, 0, sizeof *stats);
	sheet_rows_init(&rows, o, sink, stats);
	if (stat(path, &st) != 0) {
		str_errf(err, errlen, "cannot open: %m");
		return TAB_ERR_IO;
	}
	if (st.st_size == 0) {
		str_errf(err, errlen, "empty file");
		return TAB_ERR_FORMAT;
	}
	if ((why = xls_unsafe(path)) != NULL) {
		str_errf(err, errlen, "not a valid XLS file: %s", why);
		goto out;
	}
	rc = freexl_open(path, &h);
	if (rc != FREEXL_OK) {
		str_errf(err, errlen, "not a valid XLS file: %s", freexl_reason(rc));
		ret = rc == FREEXL_FILE_NOT_FOUND ? TAB_ERR_IO : TAB_ERR_FORMAT;
		h = NULL;
		goto out;
	}
	if (freexl_get_info(h, FREEXL_BIFF_PASSWORD, &pw) == FREEXL_OK &&
	    pw == FREEXL_BIFF_OBFUSCATED) {
		str_errf(err, errlen, "the workbook is password-protected");
		goto out;
	}
	if (freexl_get_info(h, FREEXL_BIFF_SHEET_COUNT, &nsheets) != FREEXL_OK || nsheets == 0) {
		str_errf(err, errlen, "the workbook has no sheets");
		goto out;
	}
	if (nsheets > 65535)
		nsheets = 65535;
	if (o->sheet_name[0] == '\0') {
		found = freexl_get_worksheet_name(h, 0, &name) == FREEXL_OK && name != NULL;
	} else {
		/* exactly, else ignoring ASCII case as Excel does */
		for (int pass = 0; pass < 2 && !found; pass++)
			for (unsigned i = 0; i < nsheets && !found; i++) {
				const char *nm = NULL;
				if (freexl_get_worksheet_name(h, (unsigned short)i, &nm) != FREEXL_OK ||
				    nm == NULL)
					continue;
				if (pass == 0 ? strcmp(nm, o->sheet_name) == 0
				              : str_eq_nocase(nm, o->sheet_name)) {
					found = true;
					pick = (unsigned short)i;
					name = nm;
				}
			}
		if (!found) {
			char list[512];
			size_t n = 0;
			list[0] = '\0';
			for (unsigned i = 0; i < nsheets; i++) {
				const char *nm = NULL;
				if (freexl_get_worksheet_name(h, (unsigned short)i, &nm) != FREEXL_OK ||
				    nm == NULL)
					continue;
				int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", nm);
				if (w < 0 || (size_t)w >= sizeof list - n) {
					size_t at = n < sizeof list - 5 ? n : sizeof list - 5;
					snprintf(list + at, sizeof list - at, ", ...");
					break;
				}
				n += (size_t)w;
			}
			str_errf(err, errlen, "no sheet named \"%s\"; sheets: %s", o->sheet_name, list);
			ret = TAB_ERR_OPTION;
			goto out;
		}
	}
	if (!found) {
		str_errf(err, errlen, "the workbook's first sheet has no name");
		goto out;
	}
	snprintf(stats->sheet_name, sizeof stats->sheet_name, "%s", name);
	rc = freexl_select_active_worksheet(h, pick);
	if (rc == FREEXL_OK)
		rc = freexl_worksheet_dimensions(h, &nrows, &ncols);
	if (rc != FREEXL_OK) {
		str_errf(err, errlen, "sheet \"%s\": %s", stats->sheet_name, freexl_reason(rc));
		goto out;
	}
	if (ncols > 0) {
		cells = calloc(ncols, sizeof *cells);
		nums = malloc((size_t)ncols * 32);
		if (cells == NULL || nums == NULL) {
			str_errf(err, errlen, "out of memory");
			ret = TAB_ERR_IO;
			goto out;
		}
	}
	for (unsigned r = 0; r < nrows; r++) {
		for (unsigned short c = 0; c < ncols; c++) {
			FreeXL_CellValue v;
			struct tab_cell *t = &cells[c];
			char *nb = nums + (size_t)c * 32;

			*t = (struct tab_cell){ .kind = TAB_NULL, .text = "" };
			rc = freexl_get_cell_value(h, r, c, &v);
			if (rc != FREEXL_OK) {
				str_errf(err, errlen, "sheet \"%s\", row %u: %s", stats->sheet_name, r + 1,
				         freexl_reason(rc));
				goto out;
			}
			switch (v.type) {
			case FREEXL_CELL_INT:
				snprintf(nb, 32, "%d", v.value.int_value);
				*t = (struct tab_cell){ .kind = TAB_NUMBER, .text = nb, .len = strlen(nb),
				                       .num = v.value.int_value };
				break;
			case FREEXL_CELL_DOUBLE:
				if (!isfinite(v.value.double_value))
					break;
				number_text(v.value.double_value, nb, 32);
				*t = (struct tab_cell){ .kind = TAB_NUMBER, .text = nb, .len = strlen(nb),
				                       .num = v.value.double_value };
				break;
			case FREEXL_CELL_TEXT:
			case FREEXL_CELL_SST_TEXT:
			case FREEXL_CELL_DATE:
			case FREEXL_CELL_DATETIME:
			case FREEXL_CELL_TIME:
				if (v.value.text_value == NULL || v.value.text_value[0] == '\0')
					break;
				t->text = v.value.text_value;
				t->len = strlen(t->text);
				t->kind = v.type == FREEXL_CELL_DATE ? TAB_DATE
				        : v.type == FREEXL_CELL_DATETIME ? TAB_DATETIME : TAB_TEXT;
				break;
			default:        /* FREEXL_CELL_NULL */
				break;
			}
		}
		rc = sheet_row(&rows, r, cells, ncols, err, errlen);
		if (rc == 1)
			break;
		if (rc < 0) {
			if (rc == TAB_ERR_STOP)
				str_errf(err, errlen, "stopped by the caller");
			ret = rc;
			goto out;
		}
	}
	rc = sheet_rows_end(&rows, err, errlen);
	if (rc < 0) {
		if (rc == TAB_ERR_STOP)
			str_errf(err, errlen, "stopped by the caller");
		ret = rc;
		goto out;
	}
	ret = 0;
out:
	if (h != NULL)
		freexl_close(h);
	sheet_rows_free(&rows);
	free(cells);
	free(nums);
	return ret;
}
