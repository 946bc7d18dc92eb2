/* internal.h - pieces shared by the text readers of src/tabular: the
 * decoder that turns a file in any supported encoding into UTF-8, the
 * value classifier of the inference, and a set of names.  Not for use
 * outside src/tabular. */
#ifndef SLUICE_TABULAR_INTERNAL_H
#define SLUICE_TABULAR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tabular/tabular.h"

/* Largest row (CSV: bytes from a record's first byte to its end, quoted
 * newlines included) and largest JSON element a reader accepts; bigger is
 * TAB_ERR_FORMAT.  Memory stays within a small multiple of this. */
#define TAB_ROW_MAX (16u << 20)
/* Most cells in a row, columns in a file. */
#define TAB_COLUMNS_MAX 16384
/* Bytes read from the file at a time. */
#define TAB_READ_CHUNK (1u << 20)

/* ---- decoder (encoding.c) ---------------------------------------------
 * Reads the file at path as UTF-8 text whatever its encoding.  encoding is
 * "" (detect: a byte order mark, else UTF-8 while the text is valid UTF-8,
 * else Latin-1 when the first non-ASCII bytes read as Latin-1 text) or one
 * of the names tab_dec_known accepts.  Every byte handed out is valid
 * UTF-8 with no NUL; an invalid byte is TAB_ERR_FORMAT with its offset. */
struct tab_dec;

/* True when name is an encoding the option takes (case-insensitive). */
bool tab_dec_known(const char *name);
/* 0, or TAB_ERR_IO / TAB_ERR_OPTION with the reason in err. */
int tab_dec_open(struct tab_dec **out, const char *path, const char *encoding,
                 char *err, size_t errlen);
/* Up to cap (>= 8) bytes of UTF-8 into dst (a multi-byte character may be split
 * between two calls).  The count (0 only at the end of the file), or a
 * negative enum tab_err with the reason in err. */
long tab_dec_read(struct tab_dec *d, char *dst, size_t cap, char *err, size_t errlen);
/* The encoding as read: "utf-8", "utf-16le", "utf-16be", "latin-1",
 * "windows-1252".  While detection has seen only ASCII: "utf-8". */
const char *tab_dec_encoding(const struct tab_dec *d);
/* A good read size for this file: TAB_READ_CHUNK, or less for a small
 * file (room for its whole text in any encoding), at least 4 KiB. */
size_t tab_dec_chunk(const struct tab_dec *d);
void tab_dec_close(struct tab_dec *d);                 /* NULL is fine */

/* Offset of the first byte of s[0..n) that is not valid UTF-8, or n.  A
 * sequence cut by the end counts as invalid.  NUL counts as invalid. */
size_t tab_utf8_invalid_at(const unsigned char *s, size_t n);

/* ---- value classification (infer.c) -------------------------------- */

/* The type of one text value by the inference rules (never called for an
 * empty value).  int_digits and scale are set for numbers: digits before
 * and after the decimal point. */
enum infer_type infer_classify_text(const char *s, size_t n, int *int_digits, int *scale);
/* The type the values seen so far give column i of a, or -1 when it has
 * had no value (only nulls and markers). */
int infer_acc_type(const struct infer_acc *a, size_t i);
/* Does a column of type t hold the text value s[0..n) as it is? */
bool infer_type_holds(enum infer_type t, const char *s, size_t n);

/* INTEGER, BIGINT, DECIMAL or DOUBLE (t: an enum infer_type, or -1). */
static inline bool infer_is_number(int t)
{
	return t == INFER_INTEGER || t == INFER_BIGINT || t == INFER_DECIMAL || t == INFER_DOUBLE;
}

/* ---- names (tabular.c) ---------------------------------------------- */

/* A set of strings with their first-seen index; names are copied. */
struct tab_names;
struct tab_names *tab_names_new(void);
void tab_names_free(struct tab_names *s);              /* NULL is fine */
/* The index of name; added at the end when new (*added set).  -1 on
 * allocation failure or when the set already holds TAB_COLUMNS_MAX. */
long tab_names_put(struct tab_names *s, const char *name, size_t len, bool *added);
/* The index of name, or -1. */
long tab_names_find(const struct tab_names *s, const char *name, size_t len);
size_t tab_names_count(const struct tab_names *s);
const char *tab_names_at(const struct tab_names *s, size_t i, size_t *len);

/* Column names as every reader hands them out (rules in tabular.c): a
 * namer for a header of ncols names, then each name in order. */
struct tab_namer;
struct tab_namer *tab_namer_new(size_t ncols);
void tab_namer_free(struct tab_namer *m);              /* NULL is fine */
/* The name of column i (0-based) from raw (NULL or "" for none) into out.
 * 0, or -1 on allocation failure or past TAB_COLUMNS_MAX names. */
int tab_namer_name(struct tab_namer *m, size_t i, const char *raw, size_t rawlen,
                   char out[INFER_NAME_MAX]);
/* s (n bytes) cut to at most max bytes, never inside a UTF-8 sequence. */
size_t tab_utf8_cut(const char *s, size_t n, size_t max);

/* ---- values (tabular.c) ------------------------------------------------ */

/* The civil date of day z (days since 1970-01-01, proleptic Gregorian). */
void tab_civil_from_days(long long z, long long *y, unsigned *m, unsigned *d);

/* s without the spaces and tabs around it (*n updated). */
const char *tab_trim_blanks(const char *s, size_t *n);
/* Is s (blanks around it aside) one of o's missing-value markers? */
bool tab_opts_is_marker(const struct tab_opts *o, const char *s, size_t n);
/* Is s (blanks aside) NaN, Inf or Infinity, signed or not, any case? */
bool tab_is_nan_inf(const char *s, size_t n);

/* infer_file's row callback answers this to csv_read and json_read (and
 * only to them) once max_analyze_rows rows were classified: deliver no more
 * rows, but go on counting them so stats->rows stays exact. */
#define TAB_ROW_COUNT_ONLY 2

#endif
