/* embed_speed.c - the built-in embedder alone: every 700-byte piece of a
 * text file embedded at one dimension, REPS times; the median time per
 * piece and the FNV-1a of every vector's bits (two builds that print the
 * same checksum give the same vectors).  bench/embed_speed.sh builds it
 * against this tree and against BASE. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "retrieval/embed.h"

#define PIECE 700

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t dim = argc > 2 ? strtoul(argv[2], NULL, 10) : EMBED_DIM_DEFAULT;
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	FILE *fp = argc > 1 ? fopen(argv[1], "rb") : NULL;
	uint64_t fnv = 0xcbf29ce484222325ull;
	double times[64];
	char *text;
	float *v;
	long size;
	size_t pieces;

	if (fp == NULL || reps < 1 || reps > 64 || dim == 0 || dim > EMBED_DIM_MAX) {
		fprintf(stderr, "usage: embed_speed FILE [DIM] [REPS <= 64]\n");
		return 2;
	}
	fseek(fp, 0, SEEK_END);
	size = ftell(fp);
	rewind(fp);
	text = malloc((size_t)size + 1);
	v = malloc(dim * sizeof *v);
	if (text == NULL || v == NULL || fread(text, 1, (size_t)size, fp) != (size_t)size)
		return 1;
	fclose(fp);
	pieces = (size_t)size / PIECE;
	for (int r = 0; r < reps; r++) {
		double t0 = now_s();

		for (size_t i = 0; i < pieces; i++) {
			if (embed_builtin(text + i * PIECE, PIECE, v, dim) != 0)
				return 1;
			if (r == 0)
				for (size_t b = 0; b < dim * sizeof *v; b++)
					fnv = (fnv ^ ((const unsigned char *)v)[b]) * 0x100000001b3ull;
		}
		times[r] = now_s() - t0;
	}
	qsort(times, (size_t)reps, sizeof *times, cmp_double);
	printf("%zu pieces of %d bytes, dim %zu: median %.2f us a piece, vectors' fnv %016llx\n",
	       pieces, PIECE, dim, times[reps / 2] / (double)pieces * 1e6,
	       (unsigned long long)fnv);
	free(text);
	free(v);
	return 0;
}
