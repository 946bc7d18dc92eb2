/* index_write.c - the index file's writer alone: n snippets of real text
 * shaped as bench/retrieval_service.sh posts them (one-snippet documents
 * of 300 to 600 bytes, "doc j: " and a slice of the text, metadata with a
 * source, random 384-dimension vectors; or, with a group, documents of
 * that many snippets), written by rindex_write_rows REPS times; the
 * median time and the FNV-1a of the file's bytes (two builds that print
 * the same checksum wrote the same file).  bench/index_write.sh builds it
 * against this tree and against BASE.
 *
 *   index_write TEXT N GROUP REPS OUT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bench.h"
#include "retrieval/index.h"

#define DIM 384

static char *read_text(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *t = malloc(64u << 20);

	if (f == NULL || t == NULL) {
		fprintf(stderr, "index_write: cannot read %s\n", path);
		exit(1);
	}
	*len = fread(t, 1, (64u << 20) - 1, f);
	fclose(f);
	for (size_t i = 0; i < *len; i++)
		if (t[i] == '\0')
			t[i] = ' ';
	t[*len] = '\0';
	return t;
}

static uint64_t file_fnv(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint64_t h = 0xcbf29ce484222325ull;
	int c;

	if (f == NULL)
		return 0;
	while ((c = getc(f)) != EOF)
		h = (h ^ (unsigned char)c) * 0x100000001b3ull;
	fclose(f);
	return h;
}

int main(int argc, char **argv)
{
	size_t tl, n, group;
	int reps;
	char *text, err[256];
	struct rindex_row *rows;
	float *vecs;
	double *ms;
	uint64_t seed = 1;

	if (argc != 6) {
		fprintf(stderr, "usage: index_write TEXT N GROUP REPS OUT\n");
		return 2;
	}
	text = read_text(argv[1], &tl);
	n = strtoul(argv[2], NULL, 10);
	group = strtoul(argv[3], NULL, 10);
	reps = atoi(argv[4]);
	if (tl < 1000 || group == 0 || reps < 1) {
		fprintf(stderr, "index_write: a text of 1000 bytes, a group and a rep at least\n");
		return 2;
	}
	rows = calloc(n ? n : 1, sizeof *rows);
	vecs = malloc((n ? n : 1) * DIM * sizeof *vecs);
	ms = malloc((size_t)reps * sizeof *ms);
	if (rows == NULL || vecs == NULL || ms == NULL)
		return 1;
	for (size_t j = 0; j < n; j++) {
		size_t len = 300 + (j * 7919) % 300, off = (j * 104729) % (tl - len);
		char *t = malloc(len + 32), *m = malloc(96), *id = malloc(48), *doc = malloc(48);

		if (t == NULL || m == NULL || id == NULL || doc == NULL)
			return 1;
		int k = snprintf(t, 32, "doc %zu: ", j / group);
		memcpy(t + k, text + off, len);
		t[k + len] = '\0';
		snprintf(m, 96, "{\"n\":%zu,\"source\":\"doc-%zu.txt\"}", j / group, j / group);
		snprintf(id, 48, "0190aaaa-0000-7000-8000-%012zu", j);
		snprintf(doc, 48, "0190bbbb-0000-7000-8000-%012zu", j / group);
		for (size_t d = 0; d < DIM; d++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			vecs[j * DIM + d] = (float)(seed >> 40) / (float)(1u << 24) - 0.5f;
		}
		rows[j] = (struct rindex_row){ vecs + j * DIM, id, m, t, doc, (long)(j % group) };
	}
	for (int r = 0; r < reps; r++) {
		double t0 = now_ms();

		if (rindex_write_rows(argv[5], n, DIM, rows, err, sizeof err) != 0) {
			fprintf(stderr, "index_write: %s\n", err);
			return 1;
		}
		ms[r] = now_ms() - t0;
	}
	qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
	printf("%zu snippets in documents of %zu: median %.0f ms (%.0f .. %.0f), file's fnv %016llx\n",
	       n, group, ms[reps / 2], ms[0], ms[reps - 1],
	       (unsigned long long)file_fnv(argv[5]));
	return 0;
}
