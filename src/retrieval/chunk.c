/* chunk.c - split a document into snippets (see chunk.h).
 *
 * Greedy, left to right.  From a chunk's start, a window of `size`
 * characters is scanned for cut points, which are always the first byte of
 * a word (a non-space byte after white space), so a chunk keeps the white
 * space that ends it and consecutive chunks tile the text.  A cut point's
 * rank is the break before it:
 *
 *   paragraph   the white space holds two or more newlines
 *   sentence    the word before ends in . ! or ? (optionally followed by a
 *               closing quote or bracket)
 *   word        any other white space
 *
 * White space at a chunk's start (only after a hard cut, or at the start
 * of the text) does not count towards the window.
 *
 * The chunk ends at the last paragraph cut in the window, else the last
 * sentence cut, else the last word cut; sentence and word cuts closer than
 * size/4 characters to the start are not taken (a chunk of "Dr. " helps
 * nobody), paragraph cuts are (a heading is a fine snippet).  With no cut
 * at all (one word longer than size) the window is cut after size
 * characters, between code points.  The last chunk runs to the end,
 * trailing white space included; no chunk is only white space.
 *
 * Overlap: the next chunk starts at the first word that begins at most
 * `overlap` characters before the cut, or at the cut when no word fits.
 * Every cut is after the previous one, so each chunk adds new text.
 *
 * Characters are counted as UTF-8 lead bytes (continuation bytes do not
 * count); a position is never inside a well-formed sequence. */
#include <stdbool.h>

#include "retrieval/chunk.h"

enum cut_rank { CUT_NONE, CUT_WORD, CUT_SENTENCE, CUT_PARAGRAPH };

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_cont(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

/* Position after one character at i (at most 4 bytes, stops at len). */
static size_t next_char(const unsigned char *t, size_t len, size_t i)
{
	size_t j = i + 1;
	while (j < len && j < i + 4 && is_cont(t[j]))
		j++;
	return j;
}

/* The rank of the break that ends at word start p (t[p-1] is white space). */
static enum cut_rank cut_rank_at(const unsigned char *t, size_t start, size_t p)
{
	size_t i = p, newlines = 0;

	while (i > start && is_space(t[i - 1])) {
		newlines += t[i - 1] == '\n';
		i--;
	}
	if (newlines >= 2)
		return CUT_PARAGRAPH;
	while (i > start && (t[i - 1] == '"' || t[i - 1] == '\'' || t[i - 1] == ')' ||
	                     t[i - 1] == ']'))
		i--;
	if (i > start && (t[i - 1] == '.' || t[i - 1] == '!' || t[i - 1] == '?'))
		return CUT_SENTENCE;
	return CUT_WORD;
}

/* The end of the chunk that starts at start; after > start is the earliest
 * allowed cut (the previous chunk's end). */
static size_t find_cut(const unsigned char *t, size_t len, size_t start,
                       size_t after, size_t size)
{
	size_t best[CUT_PARAGRAPH + 1] = { 0 };
	size_t i = start, chars = 0, min_chars = size / 4;

	/* White space before the first word is not counted: no chunk is blank. */
	while (i < len && is_space(t[i]))
		i++;
	while (i < len && chars < size) {
		i = next_char(t, len, i);
		chars++;
		if (i >= len)
			return len;
		if (i > after && !is_space(t[i]) && is_space(t[i - 1])) {
			enum cut_rank r = cut_rank_at(t, start, i);
			if (r == CUT_PARAGRAPH || chars >= min_chars)
				best[r] = i;
		}
	}
	if (i >= len)
		return len;
	for (int r = CUT_PARAGRAPH; r > CUT_NONE; r--)
		if (best[r] != 0)
			return best[r];
	return i;                                /* no word boundary: hard cut */
}

/* The start of the chunk after [start, cut): `overlap` characters back from
 * cut, moved forward to a word start; cut when that is not after start. */
static size_t overlap_start(const unsigned char *t, size_t start, size_t cut,
                            size_t overlap)
{
	size_t b = cut, chars = 0;

	while (b > start && chars < overlap) {
		b--;
		while (b > start && is_cont(t[b]))
			b--;
		chars++;
	}
	while (b < cut && !(b > start && !is_space(t[b]) && is_space(t[b - 1])))
		b++;
	return b > start ? b : cut;
}

size_t chunk_text(const char *text, size_t len, size_t size, size_t overlap,
                  struct chunk *out, size_t max)
{
	const unsigned char *t = (const unsigned char *)text;
	size_t count = 0, start = 0, prev_cut = 0, content_end = len;

	if (size == 0)
		size = 1;
	if (overlap >= size)
		overlap = size / 2;
	while (content_end > 0 && is_space(t[content_end - 1]))
		content_end--;
	if (content_end == 0)
		return 0;                        /* nothing but white space */
	while (start < len) {
		size_t cut = find_cut(t, len, start, prev_cut, size);
		if (cut >= content_end)
			cut = len;               /* trailing white space joins the last chunk */
		if (count < max) {
			out[count].off = start;
			out[count].len = cut - start;
		}
		count++;
		if (cut >= len)
			break;
		prev_cut = cut;
		start = overlap > 0 ? overlap_start(t, start, cut, overlap) : cut;
	}
	return count;
}
