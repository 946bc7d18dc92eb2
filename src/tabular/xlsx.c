/* xlsx.c - the rows of one sheet of an XLSX workbook (Office Open XML).
 *
 * The zip is read with libzip and every XML part is streamed through expat
 * in chunks, so a sheet of any size is read in bounded memory: the parts
 * kept whole are the sheet list, the relationships, the cell styles' date
 * kinds and the shared strings table, each under a cap.  A part whose
 * uncompressed size is over its cap is refused before it is read (a zip
 * bomb), and the bytes actually inflated are counted against the same cap.
 *
 * The path from the package to the sheet: _rels/.rels names the workbook
 * part; the workbook lists the sheets (name and relationship id) and the
 * 1904 date system flag; the workbook's relationships name each sheet's
 * part, the shared strings and the styles.  styles.xml says, for each cell
 * style (cellXfs), whether its number format shows a date, a date and
 * time, or a time (sheet_format_kind); a numeric cell with such a style is
 * an Excel serial and becomes a date.  Row rules (skip_rows, header_row,
 * blank rows, padding) are sheet.c's. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <expat.h>
#include <zip.h>

#include "tabular/formats.h"
#include "tabular/sheet.h"
#include "util/str.h"

#define MIB (1024ULL * 1024)
#define XLSX_PART_MAX (64 * MIB)          /* workbook, relationships, styles */
#define XLSX_SST_BYTES_MAX (256 * MIB)    /* shared strings: the XML part */
#define XLSX_SST_TEXT_MAX (128 * MIB)     /* shared strings: their text kept */
#define XLSX_SST_COUNT_MAX (16 * 1024 * 1024)
#define XLSX_SHEET_MAX (8192 * MIB)       /* one sheet's XML */
#define XLSX_CELL_MAX (1 * MIB)           /* one cell's text */
#define XLSX_ROW_MAX (64 * MIB)           /* one row's text */
#define XLSX_SHEETS_MAX 4096
#define XLSX_RELS_MAX 65536
#define XLSX_XF_MAX 65536
#define XLSX_NUMFMT_MAX 65536
#define XLSX_ROWS_MAX 1048576             /* Excel's own limits */
#define CHUNK 65536

#define REL_ID_MAX 128
#define PATH_MAX_XLSX 1024

struct xsheet {
	char name[TAB_SHEET_MAX];
	char rid[REL_ID_MAX];
};

struct xrel {
	char id[REL_ID_MAX];
	char type[32];              /* the last segment of the Type URI */
	char target[PATH_MAX_XLSX];
};

struct xfmt {
	long id;
	enum sheet_datefmt kind;
	size_t order;               /* of definition in styles.xml */
};


/* The user data of every expat handler here starts with a pointer to the
 * reader (struct xlsx has its own address first, struct sheet the
 * reader's), so that handlers common to all parts find it. */
struct xlsx {
	struct xlsx *self;
	zip_t *zip;
	char *err;
	size_t errlen;
	int rc;                     /* the first error, set by a handler */
	bool stopped;               /* the sink asked to stop (not an error) */
	XML_Parser parser;          /* the one running */
	const char *part;           /* its name, for messages */

	char workbook[PATH_MAX_XLSX];
	bool date1904;
	struct xsheet *sheets;
	size_t nsheets, sheets_cap;
	bool in_sheets;

	struct xrel *rels;
	size_t nrels, rels_cap;

	struct xfmt *fmts;
	size_t nfmts, fmts_cap;
	long *xf_fmt;               /* numFmtId of each cellXfs entry */
	unsigned char *xf_kind;
	size_t nxf, xf_cap;
	bool in_cellxfs;

	char *sst;                  /* shared strings, NUL after each */
	size_t sst_len, sst_cap;
	uint32_t *ss;               /* where each string starts in sst (text
	                             * under 4 GiB); its length runs to the NUL */
	size_t nss, ss_cap;
	size_t ss_start;
	bool in_si, in_t, in_rph;
};

/* ---- small helpers ------------------------------------------------------ */

static int set_err(struct xlsx *x, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_err(struct xlsx *x, int rc, const char *fmt, ...)
{
	va_list ap;

	if (x->rc == 0) {
		x->rc = rc;
		if (x->err != NULL && x->errlen > 0) {
			va_start(ap, fmt);
			vsnprintf(x->err, x->errlen, fmt, ap);
			va_end(ap);
		}
	}
	if (x->parser != NULL)
		XML_StopParser(x->parser, XML_FALSE);
	return rc;
}

static const char *local(const char *name)
{
	const char *c = strrchr(name, ':');
	return c ? c + 1 : name;
}

static const char *attr(const char **a, const char *name)
{
	for (; a[0] != NULL; a += 2)
		if (strcmp(local(a[0]), name) == 0)
			return a[1];
	return NULL;
}

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (s == NULL || !((*s >= '0' && *s <= '9') || (*s == '-' && min < 0)))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0 || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool xml_bool(const char *s)
{
	return s != NULL && (strcmp(s, "1") == 0 || strcmp(s, "true") == 0 || strcmp(s, "on") == 0);
}

/* Grow *p (of *cap elements of size) to hold n; false when over max or out
 * of memory. */
static bool grow(void **p, size_t *cap, size_t n, size_t size, size_t max)
{
	if (n <= *cap)
		return true;
	if (n > max)
		return false;
	size_t c = *cap ? *cap : 16;
	while (c < n)
		c *= 2;
	if (c > max)
		c = max;
	void *q = realloc(*p, c * size);
	if (q == NULL)
		return false;
	*p = q;
	*cap = c;
	return true;
}

/* Decode OOXML's _xHHHH_ escapes (ST_Xstring) in s[0..n) in place; the new
 * length.  "_x005F_" is a literal underscore; NUL and surrogates stay as
 * written. */
static size_t unescape_x(char *s, size_t n)
{
	size_t r = 0, w = 0;

	while (r < n) {
		if (s[r] == '_' && n - r >= 7 && s[r + 1] == 'x' && s[r + 6] == '_') {
			unsigned cp = 0;
			bool hex = true;
			for (int i = 2; i < 6; i++) {
				char c = s[r + i];
				cp <<= 4;
				if (c >= '0' && c <= '9') cp |= (unsigned)(c - '0');
				else if (c >= 'a' && c <= 'f') cp |= (unsigned)(c - 'a' + 10);
				else if (c >= 'A' && c <= 'F') cp |= (unsigned)(c - 'A' + 10);
				else hex = false;
			}
			if (hex && cp != 0 && (cp < 0xd800 || cp > 0xdfff)) {
				if (cp < 0x80) {
					s[w++] = (char)cp;
				} else if (cp < 0x800) {
					s[w++] = (char)(0xc0 | cp >> 6);
					s[w++] = (char)(0x80 | (cp & 0x3f));
				} else {
					s[w++] = (char)(0xe0 | cp >> 12);
					s[w++] = (char)(0x80 | (cp >> 6 & 0x3f));
					s[w++] = (char)(0x80 | (cp & 0x3f));
				}
				r += 7;
				continue;
			}
		}
		s[w++] = s[r++];
	}
	return w;
}

/* ---- parts ---------------------------------------------------------------- */

static void XMLCALL refuse_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                                   const XML_Char *pubid, int has_internal)
{
	struct xlsx *x = *(struct xlsx **)ud;
	(void)name, (void)sysid, (void)pubid, (void)has_internal;
	set_err(x, TAB_ERR_FORMAT, "%s: a DOCTYPE is not allowed in a workbook part", x->part);
}

/* Stream the part called name (case-insensitive, as OPC part names are)
 * through expat with the handlers given.  *found (may be NULL) says
 * whether the part exists; an absent part is an error only when
 * required. */
static int xml_part(struct xlsx *x, const char *name, zip_uint64_t cap, bool required,
                    bool *found, XML_StartElementHandler start, XML_EndElementHandler end,
                    XML_CharacterDataHandler text, void *ud)
{
	zip_int64_t idx;
	zip_stat_t st;
	zip_file_t *zf = NULL;
	XML_Parser p = NULL;
	char *buf = NULL;
	zip_uint64_t total = 0;

	if (found)
		*found = false;
	idx = zip_name_locate(x->zip, name, ZIP_FL_NOCASE);
	if (idx < 0) {
		if (required)
			return set_err(x, TAB_ERR_FORMAT, "not an XLSX workbook: no part %s", name);
		return 0;
	}
	if (found)
		*found = true;
	zip_stat_init(&st);
	if (zip_stat_index(x->zip, (zip_uint64_t)idx, 0, &st) != 0)
		return set_err(x, TAB_ERR_FORMAT, "%s: %s", name, zip_strerror(x->zip));
	if ((st.valid & ZIP_STAT_SIZE) && st.size > cap)
		return set_err(x, TAB_ERR_FORMAT,
		               "%s inflates to %llu bytes, over the limit of %llu (a zip bomb?)",
		               name, (unsigned long long)st.size, (unsigned long long)cap);
	zf = zip_fopen_index(x->zip, (zip_uint64_t)idx, 0);
	if (zf == NULL)
		return set_err(x, TAB_ERR_FORMAT, "%s: %s", name, zip_strerror(x->zip));
	buf = malloc(CHUNK);
	p = XML_ParserCreate(NULL);
	if (buf == NULL || p == NULL) {
		set_err(x, TAB_ERR_IO, "out of memory");
		goto out;
	}
	XML_SetUserData(p, ud);
	XML_SetElementHandler(p, start, end);
	if (text)
		XML_SetCharacterDataHandler(p, text);
	XML_SetStartDoctypeDeclHandler(p, refuse_doctype);
	x->parser = p;
	x->part = name;
	for (;;) {
		zip_int64_t n = zip_fread(zf, buf, CHUNK);
		if (n < 0) {
			set_err(x, TAB_ERR_FORMAT, "%s: cannot inflate (truncated or corrupt): %s",
			        name, zip_file_strerror(zf));
			break;
		}
		total += (zip_uint64_t)n;
		if (total > cap) {
			set_err(x, TAB_ERR_FORMAT, "%s inflates past the limit of %llu bytes (a zip bomb?)",
			        name, (unsigned long long)cap);
			break;
		}
		if (XML_Parse(p, buf, (int)n, n == 0) != XML_STATUS_OK) {
			if (x->rc == 0 && !x->stopped)
				set_err(x, TAB_ERR_FORMAT, "%s: XML error at line %lu: %s", name,
				        (unsigned long)XML_GetCurrentLineNumber(p),
				        XML_ErrorString(XML_GetErrorCode(p)));
			break;
		}
		if (n == 0)
			break;
	}
out:
	x->parser = NULL;
	if (p)
		XML_ParserFree(p);
	free(buf);
	zip_fclose(zf);
	return x->rc;
}

/* "dir/of/part" + target, with "." and ".." resolved; a target starting
 * with '/' is from the package root. */
static int resolve(const char *base_part, const char *target, char *out, size_t cap)
{
	char tmp[2 * PATH_MAX_XLSX];
	size_t n = 0;

	if (target[0] == '/') {
		snprintf(tmp, sizeof tmp, "%s", target + 1);
	} else {
		const char *slash = strrchr(base_part, '/');
		int dl = slash ? (int)(slash - base_part + 1) : 0;
		snprintf(tmp, sizeof tmp, "%.*s%s", dl, base_part, target);
	}
	/* segment by segment */
	out[0] = '\0';
	for (char *save = NULL, *seg = strtok_r(tmp, "/", &save); seg != NULL;
	     seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			char *s = strrchr(out, '/');
			n = s ? (size_t)(s - out) : 0;
			out[n] = '\0';
			continue;
		}
		size_t sl = strlen(seg);
		if (n + (n ? 1 : 0) + sl + 1 > cap)
			return -1;
		if (n)
			out[n++] = '/';
		memcpy(out + n, seg, sl + 1);
		n += sl;
	}
	return n ? 0 : -1;
}

/* ---- relationships -------------------------------------------------------- */

static void XMLCALL rels_start(void *ud, const XML_Char *name, const XML_Char **a)
{
	struct xlsx *x = ud;
	const char *id, *type, *target, *mode, *seg;

	if (strcmp(local(name), "Relationship") != 0)
		return;
	id = attr(a, "Id");
	type = attr(a, "Type");
	target = attr(a, "Target");
	mode = attr(a, "TargetMode");
	if (id == NULL || type == NULL || target == NULL || (mode && strcmp(mode, "External") == 0))
		return;
	if (!grow((void **)&x->rels, &x->rels_cap, x->nrels + 1, sizeof *x->rels,
	          XLSX_RELS_MAX)) {
		set_err(x, TAB_ERR_FORMAT, "%s: more than %d relationships", x->part, XLSX_RELS_MAX);
		return;
	}
	struct xrel *r = &x->rels[x->nrels];
	seg = strrchr(type, '/');
	seg = seg ? seg + 1 : type;
	if (strlen(id) >= sizeof r->id || strlen(target) >= sizeof r->target)
		return;                /* not one we could use */
	snprintf(r->id, sizeof r->id, "%s", id);
	snprintf(r->type, sizeof r->type, "%s", seg);
	snprintf(r->target, sizeof r->target, "%s", target);
	x->nrels++;
}

/* The relationships part of part ("xl/workbook.xml" ->
 * "xl/_rels/workbook.xml.rels"), into x->rels. */
static int read_rels(struct xlsx *x, const char *part)
{
	char name[PATH_MAX_XLSX + 16];
	const char *slash = strrchr(part, '/');
	int dl = slash ? (int)(slash - part + 1) : 0;

	free(x->rels);
	x->rels = NULL;
	x->nrels = x->rels_cap = 0;
	snprintf(name, sizeof name, "%.*s_rels/%s.rels", dl, part, part + dl);
	return xml_part(x, name, XLSX_PART_MAX, false, NULL, rels_start, NULL, NULL, x);
}

static const struct xrel *rel_by_type(const struct xlsx *x, const char *type)
{
	for (size_t i = 0; i < x->nrels; i++)
		if (strcmp(x->rels[i].type, type) == 0)
			return &x->rels[i];
	return NULL;
}

static const struct xrel *rel_by_id(const struct xlsx *x, const char *id)
{
	for (size_t i = 0; i < x->nrels; i++)
		if (strcmp(x->rels[i].id, id) == 0)
			return &x->rels[i];
	return NULL;
}

/* ---- workbook ------------------------------------------------------------- */

static void XMLCALL wb_start(void *ud, const XML_Char *name, const XML_Char **a)
{
	struct xlsx *x = ud;
	const char *l = local(name);

	if (strcmp(l, "workbookPr") == 0) {
		x->date1904 = xml_bool(attr(a, "date1904"));
	} else if (strcmp(l, "sheets") == 0) {
		x->in_sheets = true;
	} else if (strcmp(l, "sheet") == 0 && x->in_sheets) {
		const char *nm = attr(a, "name"), *rid = attr(a, "id");
		if (nm == NULL || rid == NULL) {
			set_err(x, TAB_ERR_FORMAT, "%s: a sheet without a name or id", x->part);
			return;
		}
		if (!grow((void **)&x->sheets, &x->sheets_cap, x->nsheets + 1,
		          sizeof *x->sheets, XLSX_SHEETS_MAX)) {
			set_err(x, TAB_ERR_FORMAT, "%s: more than %d sheets", x->part, XLSX_SHEETS_MAX);
			return;
		}
		struct xsheet *s = &x->sheets[x->nsheets];
		if (strlen(nm) >= sizeof s->name || strlen(rid) >= sizeof s->rid) {
			set_err(x, TAB_ERR_FORMAT, "%s: a sheet name or id too long", x->part);
			return;
		}
		snprintf(s->name, sizeof s->name, "%s", nm);
		snprintf(s->rid, sizeof s->rid, "%s", rid);
		x->nsheets++;
	}
}

static void XMLCALL wb_end(void *ud, const XML_Char *name)
{
	struct xlsx *x = ud;
	if (strcmp(local(name), "sheets") == 0)
		x->in_sheets = false;
}

/* ---- styles --------------------------------------------------------------- */

static void XMLCALL styles_start(void *ud, const XML_Char *name, const XML_Char **a)
{
	struct xlsx *x = ud;
	const char *l = local(name);
	long id;

	if (strcmp(l, "numFmt") == 0) {
		const char *code = attr(a, "formatCode");
		if (code == NULL || !parse_long(attr(a, "numFmtId"), 0, LONG_MAX, &id))
			return;
		if (!grow((void **)&x->fmts, &x->fmts_cap, x->nfmts + 1, sizeof *x->fmts,
		          XLSX_NUMFMT_MAX)) {
			set_err(x, TAB_ERR_FORMAT, "%s: more than %d number formats", x->part,
			        XLSX_NUMFMT_MAX);
			return;
		}
		x->fmts[x->nfmts++] = (struct xfmt){ id, sheet_format_kind(code), 0 };
	} else if (strcmp(l, "cellXfs") == 0) {
		x->in_cellxfs = true;
	} else if (strcmp(l, "xf") == 0 && x->in_cellxfs) {
		if (!parse_long(attr(a, "numFmtId"), 0, LONG_MAX, &id))
			id = 0;
		if (!grow((void **)&x->xf_fmt, &x->xf_cap, x->nxf + 1, sizeof *x->xf_fmt,
		          XLSX_XF_MAX)) {
			set_err(x, TAB_ERR_FORMAT, "%s: more than %d cell styles", x->part, XLSX_XF_MAX);
			return;
		}
		x->xf_fmt[x->nxf++] = id;
	}
}

static void XMLCALL styles_end(void *ud, const XML_Char *name)
{
	struct xlsx *x = ud;
	if (strcmp(local(name), "cellXfs") == 0)
		x->in_cellxfs = false;
}

static int fmt_id_cmp(const void *a, const void *b)
{
	const struct xfmt *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static int fmt_cmp(const void *a, const void *b)
{
	const struct xfmt *x = a, *y = b;
	int c = fmt_id_cmp(a, b);
	return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* Each cell style's date kind: its format defined in the file (the last
 * definition of an id wins), else a built-in one. */
static int style_kinds(struct xlsx *x)
{
	const struct xfmt *end;

	if (x->nxf == 0)
		return 0;
	end = x->nfmts ? x->fmts + x->nfmts : NULL;
	x->xf_kind = calloc(x->nxf, 1);
	if (x->xf_kind == NULL)
		return set_err(x, TAB_ERR_IO, "out of memory");
	for (size_t j = 0; j < x->nfmts; j++)
		x->fmts[j].order = j;
	if (x->nfmts > 1)
		qsort(x->fmts, x->nfmts, sizeof *x->fmts, fmt_cmp);
	for (size_t i = 0; i < x->nxf; i++) {
		enum sheet_datefmt k = sheet_builtin_kind(x->xf_fmt[i]);
		struct xfmt key = { .id = x->xf_fmt[i] };
		const struct xfmt *f = x->nfmts ? bsearch(&key, x->fmts, x->nfmts, sizeof *x->fmts,
		                                          fmt_id_cmp) : NULL;
		if (f != NULL) {
			while (f + 1 < end && f[1].id == f->id)
				f++;
			k = f->kind;
		}
		x->xf_kind[i] = (unsigned char)k;
	}
	return 0;
}

/* ---- shared strings ------------------------------------------------------- */

static void XMLCALL sst_start(void *ud, const XML_Char *name, const XML_Char **a)
{
	struct xlsx *x = ud;
	const char *l = local(name);
	(void)a;

	if (strcmp(l, "si") == 0) {
		/* a nested <si> is part of the one open: entries stay back to back */
		if (x->in_si)
			return;
		x->in_si = true;
		x->in_rph = false;
		x->ss_start = x->sst_len;
	} else if (x->in_si && strcmp(l, "rPh") == 0) {
		x->in_rph = true;
	} else if (x->in_si && !x->in_rph && strcmp(l, "t") == 0) {
		x->in_t = true;
	}
}

static bool sst_append(struct xlsx *x, const char *s, size_t n)
{
	if (x->sst_len + n + 1 > XLSX_SST_TEXT_MAX) {
		set_err(x, TAB_ERR_FORMAT, "the shared strings table holds more than %llu MiB of text",
		        (unsigned long long)(XLSX_SST_TEXT_MAX / MIB));
		return false;
	}
	if (!grow((void **)&x->sst, &x->sst_cap, x->sst_len + n + 1, 1, XLSX_SST_TEXT_MAX)) {
		set_err(x, TAB_ERR_IO, "out of memory for the shared strings");
		return false;
	}
	memcpy(x->sst + x->sst_len, s, n);
	x->sst_len += n;
	return true;
}

static void XMLCALL sst_text(void *ud, const XML_Char *s, int n)
{
	struct xlsx *x = ud;
	if (x->in_t)
		sst_append(x, s, (size_t)n);
}

static void XMLCALL sst_end(void *ud, const XML_Char *name)
{
	struct xlsx *x = ud;
	const char *l = local(name);

	if (strcmp(l, "t") == 0) {
		x->in_t = false;
	} else if (strcmp(l, "rPh") == 0) {
		x->in_rph = false;
	} else if (strcmp(l, "si") == 0 && x->in_si) {
		x->in_si = false;
		if (x->nss >= XLSX_SST_COUNT_MAX) {
			set_err(x, TAB_ERR_FORMAT, "the shared strings table has more than %d strings",
			        XLSX_SST_COUNT_MAX);
			return;
		}
		if (!sst_append(x, "", 0))
			return;
		size_t len = unescape_x(x->sst + x->ss_start, x->sst_len - x->ss_start);
		x->sst_len = x->ss_start + len;
		x->sst[x->sst_len++] = '\0';
		if (!grow((void **)&x->ss, &x->ss_cap, x->nss + 1, sizeof *x->ss, XLSX_SST_COUNT_MAX)) {
			set_err(x, TAB_ERR_IO, "out of memory for the shared strings");
			return;
		}
		x->ss[x->nss++] = (uint32_t)x->ss_start;
	}
}

/* ---- the sheet ------------------------------------------------------------ */

enum ctype { CT_N, CT_S, CT_INLINE, CT_STR, CT_B, CT_E, CT_D };

struct xcell {
	enum tab_cell_kind kind;
	size_t off, len;            /* in the row pool, or ext */
	const char *ext;            /* a shared string */
	double num;
};

struct sheet {
	struct xlsx *x;             /* first: see struct xlsx */
	struct sheet_rows rows;
	bool in_data;
	long long row, next_row;
	bool in_c, in_v, in_is, in_t, in_rph, has_v;
	long col, next_col, style;
	enum ctype type;
	char *val;
	size_t vlen, vcap;
	struct xcell *cells;
	size_t ncells, ccap;
	char *pool;
	size_t plen, pcap;
	struct tab_cell *out;
	size_t ocap;
};

/* "C5" -> column 2, row 4 (0-based); false when not a cell reference. */
static bool cell_ref(const char *r, long *col, long long *row)
{
	long c = 0;
	long long n = 0;
	int letters = 0, digits = 0;

	for (; *r >= 'A' && *r <= 'Z'; r++)
		if (++letters <= 3)
			c = c * 26 + (*r - 'A' + 1);
	for (; *r >= '0' && *r <= '9'; r++)
		if (++digits <= 7)
			n = n * 10 + (*r - '0');
	if (*r != '\0' || letters == 0 || letters > 3 || digits == 0 || digits > 7 ||
	    c > SHEET_COLS_MAX || n < 1 || n > XLSX_ROWS_MAX)
		return false;
	*col = c - 1;
	*row = n - 1;
	return true;
}

static void XMLCALL sh_start(void *ud, const XML_Char *name, const XML_Char **a)
{
	struct sheet *s = ud;
	struct xlsx *x = s->x;
	const char *l = local(name);

	if (!s->in_data) {
		if (strcmp(l, "sheetData") == 0)
			s->in_data = true;
		return;
	}
	if (strcmp(l, "row") == 0) {
		const char *r = attr(a, "r");
		long v;
		if (r != NULL) {
			if (!parse_long(r, 1, XLSX_ROWS_MAX, &v)) {
				set_err(x, TAB_ERR_FORMAT, "%s: bad row number \"%.32s\"", x->part, r);
				return;
			}
			s->row = v - 1;
		} else {
			s->row = s->next_row;
		}
		s->next_row = s->row + 1;
		s->ncells = 0;
		s->plen = 0;
		s->next_col = 0;
	} else if (strcmp(l, "c") == 0) {
		const char *r = attr(a, "r"), *t = attr(a, "t");
		long st;
		long long rr;
		if (r != NULL) {
			if (!cell_ref(r, &s->col, &rr)) {
				set_err(x, TAB_ERR_FORMAT, "%s: bad cell reference \"%.32s\"", x->part, r);
				return;
			}
		} else {
			s->col = s->next_col;
		}
		if (s->col >= SHEET_COLS_MAX) {
			set_err(x, TAB_ERR_FORMAT, "%s: row %lld has more than %d columns", x->part,
			        s->row + 1, SHEET_COLS_MAX);
			return;
		}
		s->next_col = s->col + 1;
		s->type = CT_N;
		if (t == NULL || strcmp(t, "n") == 0) s->type = CT_N;
		else if (strcmp(t, "s") == 0) s->type = CT_S;
		else if (strcmp(t, "inlineStr") == 0) s->type = CT_INLINE;
		else if (strcmp(t, "str") == 0) s->type = CT_STR;
		else if (strcmp(t, "b") == 0) s->type = CT_B;
		else if (strcmp(t, "e") == 0) s->type = CT_E;
		else if (strcmp(t, "d") == 0) s->type = CT_D;
		else {
			set_err(x, TAB_ERR_FORMAT, "%s: cell %s has an unknown type \"%.16s\"", x->part,
			        r ? r : "?", t);
			return;
		}
		s->style = parse_long(attr(a, "s"), 0, LONG_MAX, &st) ? st : 0;
		s->in_c = true;
		s->has_v = s->in_v = s->in_is = s->in_t = s->in_rph = false;
		s->vlen = 0;
	} else if (s->in_c) {
		if (strcmp(l, "v") == 0) {
			s->in_v = s->has_v = true;
		} else if (strcmp(l, "is") == 0) {
			s->in_is = s->has_v = true;
		} else if (s->in_is && strcmp(l, "rPh") == 0) {
			s->in_rph = true;
		} else if (s->in_is && !s->in_rph && strcmp(l, "t") == 0) {
			s->in_t = true;
		}
	}
}

static void XMLCALL sh_text(void *ud, const XML_Char *t, int n)
{
	struct sheet *s = ud;

	if (!s->in_c || !(s->in_v || s->in_t))
		return;
	if (s->vlen + (size_t)n + 1 > XLSX_CELL_MAX) {
		set_err(s->x, TAB_ERR_FORMAT, "%s: a cell in row %lld holds more than %llu bytes",
		        s->x->part, s->row + 1, (unsigned long long)XLSX_CELL_MAX);
		return;
	}
	if (!grow((void **)&s->val, &s->vcap, s->vlen + (size_t)n + 1, 1, XLSX_CELL_MAX)) {
		set_err(s->x, TAB_ERR_IO, "out of memory");
		return;
	}
	memcpy(s->val + s->vlen, t, (size_t)n);
	s->vlen += (size_t)n;
}

/* Keep text in the row pool; its offset. */
static bool pool_add(struct sheet *s, const char *t, size_t n, size_t *off)
{
	if (s->plen + n + 1 > XLSX_ROW_MAX) {
		set_err(s->x, TAB_ERR_FORMAT, "%s: row %lld holds more than %llu bytes", s->x->part,
		        s->row + 1, (unsigned long long)XLSX_ROW_MAX);
		return false;
	}
	if (!grow((void **)&s->pool, &s->pcap, s->plen + n + 1, 1, XLSX_ROW_MAX)) {
		set_err(s->x, TAB_ERR_IO, "out of memory");
		return false;
	}
	memcpy(s->pool + s->plen, t, n);
	s->pool[s->plen + n] = '\0';
	*off = s->plen;
	s->plen += n + 1;
	return true;
}

static bool all_digits(const char *p, int n)
{
	for (int i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

/* A t="d" cell: ISO 8601 text, "YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+hh:mm]",
 * written into buf as kind says; the cell kind, or -1 when not such text. */
static int iso_cell(const char *v, enum sheet_datefmt kind, char *buf, size_t cap)
{
	size_t n = strlen(v);
	int hh = 0, mi = 0, ss = 0;
	const char *frac = "";
	int flen = 0;

	if (n < 10 || !all_digits(v, 4) || v[4] != '-' || !all_digits(v + 5, 2) || v[7] != '-' ||
	    !all_digits(v + 8, 2))
		return -1;
	if (n > 10) {
		const char *t = v + 11;
		if ((v[10] != 'T' && v[10] != ' ') || n < 16 || !all_digits(t, 2) || t[2] != ':' ||
		    !all_digits(t + 3, 2))
			return -1;
		hh = (t[0] - '0') * 10 + (t[1] - '0');
		mi = (t[3] - '0') * 10 + (t[4] - '0');
		t += 5;
		if (*t == ':' && all_digits(t + 1, 2)) {
			ss = (t[1] - '0') * 10 + (t[2] - '0');
			t += 3;
			if (*t == '.') {
				frac = ++t;
				while (*t >= '0' && *t <= '9' && flen < 6)
					t++, flen++;
				while (*t >= '0' && *t <= '9')
					t++;
			}
		}
		if (*t == 'Z')
			t++;
		else if ((*t == '+' || *t == '-') && strlen(t) == 6)
			t += 6;
		if (*t != '\0' || hh > 23 || mi > 59 || ss > 60)
			return -1;
	}
	if (kind == SHEET_FMT_DATE || (n == 10 && kind == SHEET_FMT_NONE)) {
		snprintf(buf, cap, "%.10s", v);
		return TAB_DATE;
	}
	/* trailing zeros of the fraction say nothing */
	while (flen > 0 && frac[flen - 1] == '0')
		flen--;
	if (kind == SHEET_FMT_TIME || kind == SHEET_FMT_ELAPSED) {
		snprintf(buf, cap, "%d:%02d:%02d%s%.*s", hh, mi, ss, flen ? "." : "", flen, frac);
		return TAB_TEXT;
	}
	snprintf(buf, cap, "%.10s %02d:%02d:%02d%s%.*s", v, hh, mi, ss, flen ? "." : "", flen, frac);
	return TAB_DATETIME;
}

/* A number as Excel writes one: [-]digits[.digits][E[+-]digits] (strtod
 * alone would take "nan", "inf", hex and leading blanks). */
static bool number_syntax(const char *p)
{
	bool digits = false;

	if (*p == '-' || *p == '+')
		p++;
	for (; *p >= '0' && *p <= '9'; p++)
		digits = true;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			digits = true;
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

static void end_cell(struct sheet *s)
{
	struct xlsx *x = s->x;
	struct xcell c = { .kind = TAB_NULL };
	char buf[64];
	enum sheet_datefmt kind = SHEET_FMT_NONE;

	s->in_c = false;
	if (!grow((void **)&s->val, &s->vcap, s->vlen + 1, 1, XLSX_CELL_MAX)) {
		set_err(x, TAB_ERR_IO, "out of memory");
		return;
	}
	s->val[s->vlen] = '\0';
	if (s->style >= 0 && (size_t)s->style < x->nxf && x->xf_kind != NULL)
		kind = (enum sheet_datefmt)x->xf_kind[s->style];

	if (!s->has_v) {
		/* an empty (formatted) cell */
	} else if (s->type == CT_S) {
		long i;
		if (!parse_long(s->val, 0, LONG_MAX, &i) || (size_t)i >= x->nss) {
			set_err(x, TAB_ERR_FORMAT, "%s: row %lld: shared string index \"%.20s\" out of "
			        "range (%zu strings)", x->part, s->row + 1, s->val, x->nss);
			return;
		}
		c.ext = x->sst + x->ss[i];
		c.len = ((size_t)i + 1 < x->nss ? x->ss[i + 1] : x->sst_len) - x->ss[i] - 1;
		c.kind = c.len ? TAB_TEXT : TAB_NULL;
	} else if (s->type == CT_INLINE || s->type == CT_STR) {
		size_t n = unescape_x(s->val, s->vlen);
		if (n > 0) {
			if (!pool_add(s, s->val, n, &c.off))
				return;
			c.kind = TAB_TEXT;
			c.len = n;
		}
	} else if (s->type == CT_E) {
		/* #N/A, #DIV/0! ...: no value */
	} else if (s->vlen == 0) {
		/* no value */
	} else if (s->type == CT_B) {
		bool t = strcmp(s->val, "1") == 0 || strcmp(s->val, "true") == 0;
		bool f = strcmp(s->val, "0") == 0 || strcmp(s->val, "false") == 0;
		if (t || f) {
			c.kind = TAB_BOOL;
			c.num = t;
			if (!pool_add(s, t ? "true" : "false", t ? 4 : 5, &c.off))
				return;
			c.len = t ? 4 : 5;
		} else {
			c.kind = TAB_TEXT;
		}
	} else if (s->type == CT_D) {
		int k = iso_cell(s->val, kind, buf, sizeof buf);
		c.kind = TAB_TEXT;
		if (k >= 0) {
			c.kind = (enum tab_cell_kind)k;
			if (!pool_add(s, buf, strlen(buf), &c.off))
				return;
			c.len = strlen(buf);
		}
	} else {
		double d = 0;
		c.kind = TAB_TEXT;
		if (number_syntax(s->val) && (errno = 0, d = strtod(s->val, NULL), errno != ERANGE) &&
		    isfinite(d)) {
			c.kind = TAB_NUMBER;
			c.num = d;
			if (kind != SHEET_FMT_NONE) {
				int k = sheet_serial_text(d, x->date1904, kind, buf, sizeof buf);
				if (k >= 0) {
					c.kind = (enum tab_cell_kind)k;
					if (!pool_add(s, buf, strlen(buf), &c.off))
						return;
					c.len = strlen(buf);
				}
			}
		}
	}
	/* numbers as written, and text that was not rewritten above */
	if ((c.kind == TAB_NUMBER || c.kind == TAB_TEXT) && c.ext == NULL && c.len == 0) {
		if (!pool_add(s, s->val, s->vlen, &c.off))
			return;
		c.len = s->vlen;
	}

	if ((size_t)s->col >= s->ncells) {
		if (!grow((void **)&s->cells, &s->ccap, (size_t)s->col + 1, sizeof *s->cells,
		          SHEET_COLS_MAX)) {
			set_err(x, TAB_ERR_IO, "out of memory");
			return;
		}
		for (size_t i = s->ncells; i <= (size_t)s->col; i++)
			s->cells[i] = (struct xcell){ .kind = TAB_NULL };
		s->ncells = (size_t)s->col + 1;
	}
	s->cells[s->col] = c;
}

static void end_row(struct sheet *s)
{
	struct xlsx *x = s->x;
	int rc;

	if (!grow((void **)&s->out, &s->ocap, s->ncells ? s->ncells : 1, sizeof *s->out,
	          SHEET_COLS_MAX)) {
		set_err(x, TAB_ERR_IO, "out of memory");
		return;
	}
	for (size_t i = 0; i < s->ncells; i++) {
		const struct xcell *c = &s->cells[i];
		s->out[i] = (struct tab_cell){
			.kind = c->kind,
			.text = c->kind == TAB_NULL ? "" : c->ext ? c->ext : s->pool + c->off,
			.len = c->kind == TAB_NULL ? 0 : c->len,
			.num = c->num,
		};
	}
	rc = sheet_row(&s->rows, s->row, s->out, s->ncells, x->err, x->errlen);
	if (rc == 1) {
		x->stopped = true;
		XML_StopParser(x->parser, XML_FALSE);
	} else if (rc < 0) {
		if (rc == TAB_ERR_STOP)
			str_errf(x->err, x->errlen, "stopped by the caller");
		x->rc = rc;
		XML_StopParser(x->parser, XML_FALSE);
	}
}

static void XMLCALL sh_end(void *ud, const XML_Char *name)
{
	struct sheet *s = ud;
	const char *l = local(name);

	if (!s->in_data || s->x->rc != 0 || s->x->stopped)
		return;
	if (s->in_c) {
		if (strcmp(l, "c") == 0)
			end_cell(s);
		else if (strcmp(l, "v") == 0)
			s->in_v = false;
		else if (strcmp(l, "t") == 0)
			s->in_t = false;
		else if (strcmp(l, "rPh") == 0)
			s->in_rph = false;
		else if (strcmp(l, "is") == 0)
			s->in_is = false;
	} else if (strcmp(l, "row") == 0) {
		end_row(s);
	} else if (strcmp(l, "sheetData") == 0) {
		s->in_data = false;
	}
}

/* ---- the reader ------------------------------------------------------------- */

static int open_zip(struct xlsx *x, const char *path)
{
	struct stat st;
	unsigned char magic[8] = { 0 };
	int fd, ze = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		set_err(x, TAB_ERR_IO, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return x->rc;
	}
	ssize_t got = read(fd, magic, sizeof magic);
	close(fd);
	if (st.st_size == 0)
		return set_err(x, TAB_ERR_FORMAT, "empty file");
	if (got == 8 && memcmp(magic, "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 8) == 0)
		return set_err(x, TAB_ERR_FORMAT, "not an XLSX file but an OLE2 compound file: an "
		               "encrypted workbook, or an XLS file named .xlsx");
	x->zip = zip_open(path, ZIP_RDONLY, &ze);
	if (x->zip == NULL) {
		zip_error_t e;
		zip_error_init_with_code(&e, ze);
		set_err(x, ze == ZIP_ER_OPEN || ze == ZIP_ER_READ || ze == ZIP_ER_MEMORY ?
		        TAB_ERR_IO : TAB_ERR_FORMAT,
		        "not a valid XLSX file (the zip archive is truncated or damaged): %s",
		        zip_error_strerror(&e));
		zip_error_fini(&e);
		return x->rc;
	}
	return 0;
}

/* The sheet named want (exactly, else ignoring ASCII case as Excel does),
 * or the first worksheet; TAB_ERR_OPTION naming the sheets there are.  The
 * workbook's relationships are read. */
static const struct xsheet *pick_sheet(struct xlsx *x, const char *want)
{
	if (x->nsheets == 0) {
		set_err(x, TAB_ERR_FORMAT, "the workbook has no sheets");
		return NULL;
	}
	if (want[0] == '\0') {
		/* the first worksheet (a chart sheet has no cells) */
		for (size_t i = 0; i < x->nsheets; i++) {
			const struct xrel *r = rel_by_id(x, x->sheets[i].rid);
			if (r != NULL && strcmp(r->type, "worksheet") == 0)
				return &x->sheets[i];
		}
		return &x->sheets[0];
	}
	for (size_t i = 0; i < x->nsheets; i++)
		if (strcmp(x->sheets[i].name, want) == 0)
			return &x->sheets[i];
	for (size_t i = 0; i < x->nsheets; i++)
		if (str_eq_nocase(x->sheets[i].name, want))
			return &x->sheets[i];

	char list[512];
	size_t n = 0;
	list[0] = '\0';
	for (size_t i = 0; i < x->nsheets && n < sizeof list; i++) {
		int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", x->sheets[i].name);
		if (w < 0 || (size_t)w >= sizeof list - n) {
			snprintf(list + (n < sizeof list - 5 ? n : sizeof list - 5),
			         sizeof list - (n < sizeof list - 5 ? n : sizeof list - 5), ", ...");
			break;
		}
		n += (size_t)w;
	}
	set_err(x, TAB_ERR_OPTION, "no sheet named \"%s\"; sheets: %s", want, list);
	return NULL;
}

static void xlsx_free(struct xlsx *x)
{
	if (x->zip)
		zip_discard(x->zip);
	free(x->sheets);
	free(x->rels);
	free(x->fmts);
	free(x->xf_fmt);
	free(x->xf_kind);
	free(x->sst);
	free(x->ss);
}

int xlsx_read(const char *path, const struct tab_opts *o, const struct tab_sink *sink,
              struct tab_stats *stats, char *err, size_t errlen)
{
	struct xlsx x = { .err = err, .errlen = errlen };
	struct tab_stats local_stats;
	struct sheet s = { .x = &x };
	char part[PATH_MAX_XLSX], sheet_part[PATH_MAX_XLSX];
	const struct xrel *rel;
	const struct xsheet *sh;

	x.self = &x;
	if (stats == NULL)
		stats = &local_stats;
	memset(stats, 0, sizeof *stats);
	if (err && errlen)
		err[0] = '\0';
	if (open_zip(&x, path) != 0)
		goto out;

	/* the workbook part, from the package relationships */
	if (read_rels(&x, "") != 0)
		goto out;
	rel = rel_by_type(&x, "officeDocument");
	if (rel == NULL || resolve("", rel->target, x.workbook, sizeof x.workbook) != 0)
		snprintf(x.workbook, sizeof x.workbook, "xl/workbook.xml");
	if (xml_part(&x, x.workbook, XLSX_PART_MAX, true, NULL, wb_start, wb_end, NULL, &x) != 0)
		goto out;
	if (read_rels(&x, x.workbook) != 0)
		goto out;
	if ((sh = pick_sheet(&x, o->sheet_name)) == NULL)
		goto out;
	snprintf(stats->sheet_name, sizeof stats->sheet_name, "%s", sh->name);
	rel = rel_by_id(&x, sh->rid);
	if (rel == NULL || resolve(x.workbook, rel->target, sheet_part, sizeof sheet_part) != 0) {
		set_err(&x, TAB_ERR_FORMAT, "sheet \"%s\": no part for relationship %s", sh->name,
		        sh->rid);
		goto out;
	}
	if (strcmp(rel->type, "worksheet") != 0) {
		set_err(&x, TAB_ERR_FORMAT, "sheet \"%s\" is a %s, not a worksheet", sh->name,
		        rel->type);
		goto out;
	}
	rel = rel_by_type(&x, "styles");
	if (rel != NULL && resolve(x.workbook, rel->target, part, sizeof part) == 0) {
		if (xml_part(&x, part, XLSX_PART_MAX, false, NULL, styles_start, styles_end, NULL,
		             &x) != 0 || style_kinds(&x) != 0)
			goto out;
	}
	rel = rel_by_type(&x, "sharedStrings");
	if (rel != NULL && resolve(x.workbook, rel->target, part, sizeof part) == 0) {
		if (xml_part(&x, part, XLSX_SST_BYTES_MAX, false, NULL, sst_start, sst_end, sst_text,
		             &x) != 0)
			goto out;
	}

	sheet_rows_init(&s.rows, o, sink, stats);
	if (xml_part(&x, sheet_part, XLSX_SHEET_MAX, true, NULL, sh_start, sh_end, sh_text, &s) != 0)
		goto out;
	if (!x.stopped) {
		int rc = sheet_rows_end(&s.rows, err, errlen);
		if (rc < 0) {
			if (rc == TAB_ERR_STOP)
				str_errf(err, errlen, "stopped by the caller");
			x.rc = rc;
		}
	}
out:
	sheet_rows_free(&s.rows);
	free(s.val);
	free(s.cells);
	free(s.pool);
	free(s.out);
	xlsx_free(&x);
	return x.rc;
}
