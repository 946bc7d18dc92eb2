/* retrieval_ablation.c - known-item ranking quality of each part of the
 * hybrid ranking, and its cost, on the project's own ranking code without
 * the service around it.
 *
 *   retrieval_ablation CORPUS.json [base] [INDEX]
 *   retrieval_ablation CORPUS.json cost INDEX
 *   retrieval_ablation CORPUS.json sweep < WEIGHTS
 *
 * CORPUS.json is what bench/lib/corpus.pl prints.  Each document is cut
 * into snippets by chunk.c (800 characters, 100 overlap: the defaults of
 * chunk_size and chunk_overlap), embedded by the built-in embedder (384
 * dimensions) and written to an index file by rindex_write, as ingestion
 * does.  Every question is then ranked by rank_question with the built-in
 * embedder's parameters, once with top_n = 10 for MRR@10 and once with the
 * default top_n = 3 for recall@3 (with MMR, the first 3 of 10 picks need
 * not be the 3 picks), and a document is found at the rank of the first of
 * its snippets.  The same snippets go into SQLite FTS5 tables (unicode61,
 * and porter over it) ranked by bm25() for the question's words OR-ed.
 *
 * Each snippet's metadata holds its document's source, as an upload's
 * does, which gives the document a title (src/retrieval/title.h).
 * Rows: the defaults; each part off in turn, the title by a second index
 * written without the metadata; snippet BM25 alone; MMR off;
 * MMR with the earlier default lambda_mult 0.5; hybrid off.  Each row also gives the median over the questions of one
 * rank_question call (top_n = 10; each question's fastest of three calls,
 * after a warm-up pass).  With "base", compiled against an
 * older tree (-DRANK_BASE, bench/retrieval_ablation.sh), only the FTS5
 * rows and that tree's defaults are run, so one run compares both.
 * INDEX keeps the index file at that path.  "cost" opens an INDEX kept so
 * and ranks each question once with the defaults and nothing else, for
 * valgrind --tool=callgrind --toggle-collect=rank_question: instruction
 * counts that do not depend on what else the machine is doing.  "sweep"
 * reads lines "doc head prox vec repeat lambda_mult mmr" (the weights of
 * struct rank_weights, MMR's trade-off, MMR on 1 or off 0) and prints each
 * line's MRR@10 and recall@3 with the built-in embedder's other defaults:
 * one index, many weightings, for tuning.
 * Built and run by bench/retrieval_ablation.sh. */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sqlite3.h>

#include "retrieval/chunk.h"
#include "retrieval/embed.h"
#include "retrieval/index.h"
#include "retrieval/rank.h"
#ifndef RANK_BASE
#include "retrieval/title.h"
#endif

#define DIM 384
#define CHUNK_SIZE 800
#define CHUNK_OVERLAP 100
#define MAX_CHUNKS 4096

struct doc { const char *question, *text, *source; size_t s0, ns; };

static struct doc *docs;
static char **metas;                         /* each snippet's metadata JSON */
static size_t ndocs, nsnip;
static uint32_t *snip_doc;                   /* snippet -> document */
static const char **snip_text;
static size_t *snip_len;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void die(const char *what)
{
	fprintf(stderr, "retrieval_ablation: %s\n", what);
	exit(1);
}

/* Documents and their snippets (pointers into the parsed JSON). */
static struct json_object *load(const char *path)
{
	struct json_object *a = json_object_from_file(path);
	static struct chunk ch[MAX_CHUNKS];
	size_t cap = 0;

	if (a == NULL || !json_object_is_type(a, json_type_array))
		die("the corpus is not a JSON array");
	ndocs = json_object_array_length(a);
	if ((docs = calloc(ndocs, sizeof *docs)) == NULL)
		die("out of memory");
	for (size_t d = 0; d < ndocs; d++) {
		struct json_object *o = json_object_array_get_idx(a, d), *q, *t;
		if (!json_object_object_get_ex(o, "question", &q) ||
		    !json_object_object_get_ex(o, "text", &t))
			die("a document without question or text");
		docs[d].question = json_object_get_string(q);
		docs[d].text = json_object_get_string(t);
		docs[d].source = json_object_object_get_ex(o, "source", &q)
		                 ? json_object_get_string(q) : "";
		size_t len = strlen(docs[d].text);
		size_t n = chunk_text(docs[d].text, len, CHUNK_SIZE, CHUNK_OVERLAP, ch, MAX_CHUNKS);
		if (n > MAX_CHUNKS)
			die("a document of too many snippets");
		docs[d].s0 = nsnip;
		docs[d].ns = n;
		if (nsnip + n > cap) {
			cap = (nsnip + n) * 2;
			snip_doc = realloc(snip_doc, cap * sizeof *snip_doc);
			snip_text = realloc(snip_text, cap * sizeof *snip_text);
			snip_len = realloc(snip_len, cap * sizeof *snip_len);
			if (snip_doc == NULL || snip_text == NULL || snip_len == NULL)
				die("out of memory");
		}
		for (size_t i = 0; i < n; i++, nsnip++) {
			snip_doc[nsnip] = (uint32_t)d;
			snip_text[nsnip] = docs[d].text + ch[i].off;
			snip_len[nsnip] = ch[i].len;
		}
	}
	return a;
}

struct score { double mrr, r3; };

/* Add list (snippet rows, best first) for question d to s. */
static void score_list(struct score *s, size_t d, const uint32_t *rows, size_t n, bool mrr)
{
	for (size_t i = 0; i < n && i < 10; i++)
		if (snip_doc[rows[i]] == d) {
			if (mrr)
				s->mrr += 1.0 / (double)(i + 1);
			else if (i < 3)
				s->r3 += 1.0;
			return;
		}
}

/* ---- FTS5 ------------------------------------------------------------------------ */

/* titles: a second column holds each document's title (title.h) in its
 * first snippet's row, weighing 2 in bm25() as sluice's does. */
static struct score fts5(const char *tokenizer, bool titles)
{
	struct score s = { 0, 0 };
	sqlite3 *db;
	sqlite3_stmt *st;
	char sql[256], title[4096] = "";

	(void)titles;   /* the base tree has no titles */
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		die("sqlite3_open");
	snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE t USING fts5(body, title, row UNINDEXED, "
	         "tokenize = '%s')", tokenizer);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die("this SQLite has no FTS5");
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?, ?)", -1, &st, NULL);
	for (size_t i = 0; i < nsnip; i++) {
#ifndef RANK_BASE
		if (titles && docs[snip_doc[i]].s0 == i)
			doc_title(metas[i], title, sizeof title);
		else
			title[0] = '\0';
#endif
		sqlite3_bind_text(st, 1, snip_text[i], (int)snip_len[i], SQLITE_STATIC);
		sqlite3_bind_text(st, 2, title, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)i);
		sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_prepare_v2(db, "SELECT row FROM t WHERE t MATCH ? ORDER BY bm25(t, 1.0, 2.0) "
	                   "LIMIT 10", -1, &st, NULL);
	for (size_t d = 0; d < ndocs; d++) {
		/* The question's words (\w+, lower-cased), each quoted, OR-ed:
		 * what bench/retrieval_quality.sh sends. */
		char m[8192];
		size_t mp = 0;
		const unsigned char *p = (const unsigned char *)docs[d].question;
		while (*p != '\0') {
			while (*p != '\0' && !(isalnum(*p) || *p == '_' || *p >= 0x80))
				p++;
			const unsigned char *w = p;
			while (*p != '\0' && (isalnum(*p) || *p == '_' || *p >= 0x80))
				p++;
			if (p > w && mp + (size_t)(p - w) + 8 < sizeof m) {
				if (mp > 0) {
					memcpy(m + mp, " OR ", 4);
					mp += 4;
				}
				m[mp++] = '"';
				for (; w < p; w++)
					m[mp++] = (char)tolower(*w);
				m[mp++] = '"';
			}
		}
		uint32_t rows[10];
		size_t n = 0;
		sqlite3_bind_text(st, 1, m, (int)mp, SQLITE_STATIC);
		while (n < 10 && sqlite3_step(st) == SQLITE_ROW)
			rows[n++] = (uint32_t)sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
		score_list(&s, d, rows, n, true);
		score_list(&s, d, rows, n, false);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	s.mrr /= (double)ndocs;
	s.r3 /= (double)ndocs;
	return s;
}

/* ---- sluice -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Rank every question with p; the score, and the median ms of a call. */
static struct score ask_all(const struct rindex *ix, const float *qvecs,
                            struct rank_params p, double *median_ms)
{
	struct score s = { 0, 0 };
	double *ms = malloc(ndocs * sizeof *ms);
	struct vec_hit h[10];
	uint32_t rows[10];

	if (ms == NULL)
		die("out of memory");
	/* Passes 0-2 time top_n = 10 (each question's fastest of three, so
	 * another process's burst does not count) and score MRR@10 once;
	 * pass 3 scores recall@3. */
	for (int pass = 0; pass < 4; pass++) {
		p.top_n = pass < 3 ? 10 : 3;
		for (size_t d = 0; d < ndocs; d++) {
			double t0 = now_ms();
			size_t n = rank_question(ix, qvecs + d * DIM, docs[d].question,
			                         strlen(docs[d].question), &p, h, 10);
			double t = now_ms() - t0;
			if (pass < 3)
				ms[d] = pass == 0 || t < ms[d] ? t : ms[d];
			if (pass > 0 && pass < 3)
				continue;
			for (size_t i = 0; i < n; i++)
				rows[i] = h[i].row;
			score_list(&s, d, rows, n, pass == 0);
		}
	}
	qsort(ms, ndocs, sizeof *ms, cmp_double);
	*median_ms = ms[ndocs / 2];
	free(ms);
	s.mrr /= (double)ndocs;
	s.r3 /= (double)ndocs;
	return s;
}

/* One row of the table: p's score and median time (ms < 0: no time). */
static void row(const char *name, struct score s, double ms)
{
	if (ms >= 0)
		printf("%-44s %7.3f %9.3f %10.3f\n", name, s.mrr, s.r3, ms);
	else
		printf("%-44s %7.3f %9.3f %10s\n", name, s.mrr, s.r3, "");
	fflush(stdout);
}

static void builtin(struct rank_params *p)
{
	rank_params_default(p);
#ifdef RANK_BASE
	p->vec_weight = RANK_VEC_WEIGHT_BUILTIN;
#else
	rank_params_embedder(p, true);
#endif
}

#ifndef RANK_BASE
/* Every weighting on stdin, scored (see the top). */
static void sweep(const struct rindex *ix, const float *qvecs)
{
	char line[512];
	struct rank_params p;
	struct score s;
	double ms;
	int mmr;

	printf("%-44s %7s %9s\n", "doc head prox vec repeat lambda_mult mmr", "MRR@10", "recall@3");
	while (fgets(line, sizeof line, stdin) != NULL) {
		builtin(&p);
		if (sscanf(line, "%lf %lf %lf %lf %lf %lf %d", &p.w.doc, &p.w.head, &p.w.prox,
		           &p.w.vec, &p.w.repeat, &p.lambda_mult, &mmr) != 7)
			continue;
		p.mmr = mmr != 0;
		s = ask_all(ix, qvecs, p, &ms);
		line[strcspn(line, "\n")] = '\0';
		printf("%-44s %7.4f %9.4f\n", line, s.mrr, s.r3);
		fflush(stdout);
	}
}
#endif

/* One row: every question ranked with p. */
static void ask_row(const struct rindex *ix, const float *qvecs, const char *name,
                    struct rank_params p)
{
	double ms;
	struct score s = ask_all(ix, qvecs, p, &ms);

	row(name, s, ms);
}

/* The table's rows (see the top); with base, the older tree's defaults only.
 * untitled is the same index written without the documents' sources. */
static void ablate(const struct rindex *ix, const struct rindex *untitled,
                   const float *qvecs, bool base)
{
	struct rank_params p;
	double ms;

	(void)untitled;   /* base: not written */
	printf("%-44s %7s %9s %10s\n", "ranking", "MRR@10", "recall@3", "ms/question");
	if (!base) {
		row("FTS5 bm25() (unicode61)", fts5("unicode61", false), -1);
		row("FTS5 bm25() (porter)", fts5("porter unicode61", false), -1);
		row("FTS5 bm25() (porter), with the title", fts5("porter unicode61", true), -1);
	}

	builtin(&p);
	ask_all(ix, qvecs, p, &ms);       /* warm-up: the mapping's first touch */
	ask_row(ix, qvecs, base ? "sluice defaults (base tree)" : "sluice defaults", p);
#ifndef RANK_BASE
	if (!base) {
		static const struct { const char *name; size_t off; double off_value; } parts[] = {
			{ "  without the document's BM25", offsetof(struct rank_weights, doc), 0 },
			{ "  without the first snippet's BM25", offsetof(struct rank_weights, head), 0 },
			{ "  without proximity", offsetof(struct rank_weights, prox), 0 },
			{ "  without the vector metric", offsetof(struct rank_weights, vec), 0 },
			{ "  without the repeat factor", offsetof(struct rank_weights, repeat), 1 },
		};
		for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
			builtin(&p);
			*(double *)((char *)&p.w + parts[i].off) = parts[i].off_value;
			ask_row(ix, qvecs, parts[i].name, p);
		}
		builtin(&p);
		ask_all(untitled, qvecs, p, &ms);
		ask_row(untitled, qvecs, "  without the title (no metadata.source)", p);
		builtin(&p);
		p.w = (struct rank_weights){ 0, 0, 0, 0, 1 };
		ask_row(ix, qvecs, "  snippet BM25 alone", p);
		builtin(&p);
		p.mmr = false;
		ask_row(ix, qvecs, "  MMR off", p);
		builtin(&p);
		p.lambda_mult = 0.5;
		ask_row(ix, qvecs, "  MMR lambda_mult 0.5 (the earlier default)", p);
		builtin(&p);
		p.hybrid = false;
		ask_row(ix, qvecs, "  hybrid off (the vector metric alone)", p);
	}
#endif
}

/* Each question ranked once with the defaults, and nothing else. */
static void cost(const char *path)
{
	char err[256];
	struct rindex *ix = rindex_open(path, err, sizeof err);
	float *q = malloc(DIM * sizeof *q);
	struct vec_hit h[10];
	struct rank_params p;

	if (ix == NULL || q == NULL)
		die(ix == NULL ? err : "out of memory");
	builtin(&p);
	p.top_n = 10;
	for (size_t d = 0; d < ndocs; d++) {
		embed_builtin(docs[d].question, strlen(docs[d].question), q, DIM);
		rank_question(ix, q, docs[d].question, strlen(docs[d].question), &p, h, 10);
	}
	printf("%zu questions ranked\n", ndocs);
	rindex_close(ix);
	free(q);
}

int main(int argc, char **argv)
{
	bool base = argc > 2 && strcmp(argv[2], "base") == 0;
	bool sweeping = argc > 2 && strcmp(argv[2], "sweep") == 0;
	const char *keep = argc > 3 ? argv[3] : argc > 2 && !base && !sweeping ? argv[2] : NULL;
	char dir[] = "/tmp/sluice-ablation-XXXXXX", tmp[64], untitled_path[64], err[256];
	const char *path = tmp;
	struct json_object *corpus;
	float *vecs, *qvecs;
	char **ids, **dids;
	struct rindex *untitled = NULL;
	double t0, embed_ms, index_ms;

	if (argc < 2 || (argc > 2 && strcmp(argv[2], "cost") == 0 && argc < 4))
		die("usage: retrieval_ablation CORPUS.json [base] [INDEX] | CORPUS.json cost INDEX"
		    " | CORPUS.json sweep < WEIGHTS");
	corpus = load(argv[1]);
	if (argc > 3 && strcmp(argv[2], "cost") == 0) {
		cost(argv[3]);
		json_object_put(corpus);
		return 0;
	}
	vecs = malloc(nsnip * DIM * sizeof *vecs);
	qvecs = malloc(ndocs * DIM * sizeof *qvecs);
	ids = malloc(nsnip * sizeof *ids);
	dids = malloc(nsnip * sizeof *dids);
	metas = malloc(nsnip * sizeof *metas);
	if (vecs == NULL || qvecs == NULL || ids == NULL || dids == NULL || metas == NULL)
		die("out of memory");
	t0 = now_ms();
	for (size_t i = 0; i < nsnip; i++)
		embed_builtin(snip_text[i], snip_len[i], vecs + i * DIM, DIM);
	embed_ms = now_ms() - t0;
	for (size_t d = 0; d < ndocs; d++)
		embed_builtin(docs[d].question, strlen(docs[d].question), qvecs + d * DIM, DIM);
	/* The texts as ingestion stores them: one string per snippet. */
	const char **texts = malloc(nsnip * sizeof *texts);
	if (texts == NULL)
		die("out of memory");
	for (size_t i = 0; i < nsnip; i++) {
		texts[i] = strndup(snip_text[i], snip_len[i]);
		if (asprintf(&ids[i], "%zu", i) < 0 || asprintf(&dids[i], "%u", snip_doc[i]) < 0 ||
		    texts[i] == NULL)
			die("out of memory");
		/* A snippet's metadata as ingestion stores it: its document's
		 * (here the source, which gives the document's title), then
		 * document_id and chunk. */
		struct json_object *m = json_object_new_object();
		json_object_object_add(m, "source",
		                       json_object_new_string(docs[snip_doc[i]].source));
		json_object_object_add(m, "document_id", json_object_new_string(dids[i]));
		json_object_object_add(m, "chunk",
		                       json_object_new_int64((int64_t)(i - docs[snip_doc[i]].s0)));
		if ((metas[i] = strdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN))) == NULL)
			die("out of memory");
		json_object_put(m);
	}
	if (mkdtemp(dir) == NULL)
		die("mkdtemp");
	if (keep != NULL)
		path = keep;
	else
		snprintf(tmp, sizeof tmp, "%s/a.idx", dir);
	t0 = now_ms();
#ifdef RANK_BASE
	if (rindex_write(path, nsnip, DIM, vecs, (const char *const *)ids,
	                 (const char *const *)metas, texts, err, sizeof err) != 0)
#else
	if (rindex_write(path, nsnip, DIM, vecs, (const char *const *)ids,
	                 (const char *const *)metas, texts, (const char *const *)dids,
	                 err, sizeof err) != 0)
#endif
		die(err);
	index_ms = now_ms() - t0;
	struct rindex *ix = rindex_open(path, err, sizeof err);
	if (ix == NULL)
		die(err);
#ifndef RANK_BASE
	/* The same snippets without metadata: no titles. */
	snprintf(untitled_path, sizeof untitled_path, "%s/b.idx", dir);
	if (!base && !sweeping &&
	    (rindex_write(untitled_path, nsnip, DIM, vecs, (const char *const *)ids, NULL, texts,
	                  (const char *const *)dids, err, sizeof err) != 0 ||
	     (untitled = rindex_open(untitled_path, err, sizeof err)) == NULL))
		die(err);
#endif
	printf("%zu documents, %zu snippets; built-in embedding %.0f ms, index file %.0f ms\n\n",
	       ndocs, nsnip, embed_ms, index_ms);
#ifndef RANK_BASE
	if (sweeping)
		sweep(ix, qvecs);
	else
#endif
		ablate(ix, untitled, qvecs, base);
	rindex_close(ix);
	if (untitled != NULL) {
		rindex_close(untitled);
		unlink(untitled_path);
	}
	if (keep == NULL)
		unlink(path);
	rmdir(dir);
	for (size_t i = 0; i < nsnip; i++) {
		free(ids[i]);
		free(dids[i]);
		free(metas[i]);
		free((char *)texts[i]);
	}
	free(ids);
	free(dids);
	free(metas);
	free(texts);
	free(vecs);
	free(qvecs);
	json_object_put(corpus);
	return 0;
}
