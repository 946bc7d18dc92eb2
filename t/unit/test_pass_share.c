/* test_pass_share.c - serve workers' shared passes (pass_share.h), with
 * forked processes for workers: every result is the lone ranking's, hit
 * for hit; a pass takes the questions posted while it gathers; a passing
 * process killed with SIGKILL loses nobody's question; a question posted
 * during a pass is woken to lead the next one; passes of two
 * files do not wait for each other; a question whose pass never ends is
 * given back to its caller; and what is not shared is refused. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "suites.h"
#include "retrieval/index.h"
#include "retrieval/pass_share.h"
#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"
#include "util/config.h"
#include "util/timeutil.h"

#define DIM 24
#define ROWS_BIG 36000          /* split among threads: >= 2 x VEC_PART_MIN_ROWS */
#define ROWS_SMALL 500
#define DIM_WIDE (PASS_DIM_MAX + 4)
#define K_MAX 40

static char dir[64], big[128], small[128], wide[128];

/* xorshift: the same questions in every process that asks for seed's. */
static float rnd(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return (float)(*s % 20001u) / 10000.0f - 1.0f;
}

static int write_index(const char *path, size_t n, size_t dim, unsigned seed)
{
	float *v = malloc(n * dim * sizeof *v);
	const char **ids = calloc(n, sizeof *ids);
	char err[256], (*names)[16] = malloc(n * sizeof *names);
	int rc = -1;

	if (v != NULL && ids != NULL && names != NULL) {
		for (size_t i = 0; i < n * dim; i++)
			v[i] = rnd(&seed);
		for (size_t i = 0; i < n; i++) {
			snprintf(names[i], sizeof names[i], "s%zu", i);
			ids[i] = names[i];
		}
		rc = rindex_write(path, n, dim, v, ids, NULL, NULL, NULL, err, sizeof err);
	}
	free(v);
	free(ids);
	free(names);
	return rc;
}

static int setup(void)
{
	strcpy(dir, "/tmp/sluice-pass-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(big, sizeof big, "%s/big.idx", dir);
	snprintf(small, sizeof small, "%s/small.idx", dir);
	snprintf(wide, sizeof wide, "%s/wide.idx", dir);
	return write_index(big, ROWS_BIG, DIM, 7) == 0 && write_index(small, ROWS_SMALL, DIM, 8) == 0 &&
	       write_index(wide, 8, DIM_WIDE, 9) == 0 ? 0 : -1;
}

static int teardown(void)
{
	unlink(big);
	unlink(small);
	unlink(wide);
	rmdir(dir);
	return 0;
}

static struct rindex *open_ix(const char *path)
{
	char err[256];

	return rindex_open(path, err, sizeof err);
}

/* Question i of seed: its vector, metric and k. */
static void question(unsigned seed, int i, size_t dim, float *q, enum vec_metric *m, size_t *k)
{
	unsigned s = seed * 7919u + (unsigned)i * 104729u + 1u;

	for (size_t d = 0; d < dim; d++)
		q[d] = rnd(&s);
	*m = (enum vec_metric)(i % VEC_METRIC_COUNT);
	*k = 1 + (seed + (unsigned)i) % K_MAX;
}

/* Ask question i of seed through the board: 0 its result is the lone
 * ranking's, hit for hit; 1 not ranked; 2 a different result. */
static int ask(const struct config *cfg, const struct rindex *ix, unsigned seed, int i)
{
	size_t dim = rindex_dim(ix), k, got = 0;
	struct vec_hit out[K_MAX], want[K_MAX];
	float q[DIM_WIDE];
	enum vec_metric m;
	size_t nwant;

	question(seed, i, dim, q, &m, &k);
	if (!pass_share_rank(cfg, ix, m, q, k, out, &got))
		return 1;
	nwant = vec_topk_coded(m, q, vec_norm(q, dim), rindex_vectors(ix), rindex_norms(ix),
	                       rindex_codes(ix), rindex_count(ix), dim, NULL, k, want, NULL);
	if (got != nwant)
		return 2;
	for (size_t h = 0; h < got; h++)
		if (out[h].row != want[h].row || out[h].score != want[h].score)
			return 2;
	return 0;
}

/* A worker: a process that opens path itself and asks n questions of
 * seed, with the test hook's pause pause_ms. */
static pid_t worker(const char *path, unsigned seed, int n, int pause_ms)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	struct config cfg;
	struct rindex *ix = open_ix(path);
	int rc = ix == NULL ? 3 : 0;

	config_defaults(&cfg);
#ifdef SLUICE_TEST_HOOKS
	cfg.rag_test_pass_pause_ms = pause_ms;
#else
	(void)pause_ms;
#endif
	for (int i = 0; i < n && rc == 0; i++)
		rc = ask(&cfg, ix, seed, i);
	_exit(rc);
}

/* A worker's exit status, or -1 when it did not exit normally. */
static int exit_of(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void kill_worker(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);          /* a zombie would still count as there */
}

static struct pass_share_stats stats(long *passing, size_t *npassing)
{
	struct pass_share_stats st;
	long p[PASS_SLOTS];

	*npassing = pass_share_stats(&st, p, PASS_SLOTS);
	if (passing != NULL)
		*passing = *npassing > 0 ? p[0] : 0;
	return st;
}

/* Wait up to 20 s until pid alone is passing with taken questions taken. */
static bool wait_passing(pid_t pid, size_t taken)
{
	for (double end = time_mono_ms() + 20000; time_mono_ms() < end;) {
		long who;
		size_t n;
		struct pass_share_stats st = stats(&who, &n);

		if (n == 1 && who == (long)pid && st.taken == taken)
			return true;
		usleep(5000);
	}
	return false;
}

static void test_refused(void)
{
	struct config cfg;
	struct rindex *ix = open_ix(big), *w = open_ix(wide);
	float q[DIM_WIDE] = { 1 };
	struct vec_hit out[PASS_K_MAX + 1];
	struct pass_share_stats st;
	size_t got, n;

	config_defaults(&cfg);
	CU_ASSERT_FATAL(ix != NULL && w != NULL);
	CU_ASSERT_FALSE(pass_share_rank(&cfg, ix, VEC_L2, q, 3, out, &got));    /* no board */
	CU_ASSERT_EQUAL_FATAL(pass_share_init(), 0);
	CU_ASSERT_EQUAL(pass_share_init(), 0);                                    /* once */
	CU_ASSERT_FALSE(pass_share_rank(&cfg, ix, VEC_L2, q, 0, out, &got));
	CU_ASSERT_FALSE(pass_share_rank(&cfg, ix, VEC_L2, q, PASS_K_MAX + 1, out, &got));
	CU_ASSERT_FALSE(pass_share_rank(&cfg, w, VEC_L2, q, 3, out, &got));
	st = stats(NULL, &n);
	CU_ASSERT(st.passes == 0 && st.questions == 0 && st.posted == 0 && st.taken == 0);
	/* Alone on the board, a question is its own pass. */
	CU_ASSERT_EQUAL(ask(&cfg, ix, 1, 0), 0);
	st = stats(NULL, &n);
	CU_ASSERT(st.passes == 1 && st.questions == 1 && st.posted == 0 && st.taken == 0);
	rindex_close(w);
	rindex_close(ix);
}

static void test_many_workers(void)
{
	size_t n;
	struct pass_share_stats before = stats(NULL, &n), after;
	pid_t w[4];

	for (int i = 0; i < 4; i++)
		w[i] = worker(big, 10u + (unsigned)i, 40, 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(exit_of(w[i]), 0);
	after = stats(NULL, &n);
	CU_ASSERT_EQUAL(after.questions - before.questions, 160);
	CU_ASSERT(after.passes > before.passes && after.passes - before.passes <= 160);
	CU_ASSERT(after.posted == 0 && after.taken == 0 && n == 0);
}

#ifdef SLUICE_TEST_HOOKS
/* The leader pauses 3 s while questions come, takes them, and pauses
 * again: killed then, its questions are posted again and ranked. */
static void test_leader_killed(void)
{
	size_t n;
	struct pass_share_stats before = stats(NULL, &n), after;
	pid_t lead = worker(big, 20, 1, 3000), w[3];

	CU_ASSERT_FATAL(wait_passing(lead, 1));
	for (int i = 0; i < 3; i++)
		w[i] = worker(big, 21u + (unsigned)i, 1, 0);
	CU_ASSERT(wait_passing(lead, 4));         /* its own and the three */
	kill_worker(lead);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(exit_of(w[i]), 0);
	after = stats(NULL, &n);
	/* One pass ranked the three: the killed one never ended. */
	CU_ASSERT_EQUAL(after.passes - before.passes, 1);
	CU_ASSERT_EQUAL(after.questions - before.questions, 3);
}

/* A question posted during a pass (after it took its questions) leads
 * the next pass once woken by the one that ended, not at its tick. */
static void test_next_leader_woken(void)
{
	size_t n;
	struct pass_share_stats before = stats(NULL, &n), after, st;
	pid_t lead = worker(big, 50, 1, 1500), next;
	double end;

	CU_ASSERT_FATAL(wait_passing(lead, 1));
	usleep(1700 * 1000);                      /* into its second pause */
	next = worker(big, 51, 1, 0);
	for (end = time_mono_ms() + 20000; time_mono_ms() < end; usleep(2000)) {
		long who;

		st = stats(&who, &n);
		if (st.posted == 1 || n == 0)
			break;
	}
	CU_ASSERT(st.posted == 1 && st.taken == 1);  /* waiting while lead passes */
	CU_ASSERT_EQUAL(exit_of(lead), 0);
	CU_ASSERT_EQUAL(exit_of(next), 0);
	after = stats(NULL, &n);
	CU_ASSERT_EQUAL(after.passes - before.passes, 2);
	CU_ASSERT_EQUAL(after.questions - before.questions, 2);
	CU_ASSERT_EQUAL(after.led_on_tick - before.led_on_tick, 0);
}

/* A pass of one file does not hold up questions of another. */
static void test_two_files(void)
{
	pid_t lead = worker(big, 30, 1, 5000), other;
	long who;
	size_t n;

	CU_ASSERT_FATAL(wait_passing(lead, 1));
	other = worker(small, 31, 10, 0);
	CU_ASSERT_EQUAL(exit_of(other), 0);
	stats(&who, &n);
	CU_ASSERT(n == 1 && who == (long)lead);     /* still in its pause */
	kill_worker(lead);
}

/* A pass that does not end (its worker stopped, not killed): the waiter
 * gets its question back after PASS_WAIT_MAX_MS; once the passing worker
 * is gone, the next question is ranked. */
static void test_wait_max(void)
{
	struct config cfg;
	struct rindex *ix = open_ix(big);
	pid_t lead = worker(big, 40, 1, 60000);
	double t0;

	config_defaults(&cfg);
	CU_ASSERT_FATAL(ix != NULL);
	CU_ASSERT_FATAL(wait_passing(lead, 1));
	t0 = time_mono_ms();
	CU_ASSERT_EQUAL(ask(&cfg, ix, 41, 0), 1);
	CU_ASSERT(time_mono_ms() - t0 >= PASS_WAIT_MAX_MS - 1);
	kill_worker(lead);
	CU_ASSERT_EQUAL(ask(&cfg, ix, 42, 0), 0);
	rindex_close(ix);
}
#endif

int suite_pass_share(void)
{
	static const struct test_case tests[] = {
		{ "not shared: no board, k 0 or too large, too many dimensions", test_refused },
		{ "four workers' 160 questions: each the lone ranking's", test_many_workers },
#ifdef SLUICE_TEST_HOOKS
		{ "a pass takes those posted meanwhile; its worker killed, none lost",
		  test_leader_killed },
		{ "a question posted during a pass is woken to lead the next",
		  test_next_leader_woken },
		{ "a pass of one file does not hold up another's", test_two_files },
		{ "a pass that never ends: the question back after the wait", test_wait_max },
#endif
		{ NULL, NULL },
	};
	CU_pSuite s = CU_add_suite("pass_share", setup, teardown);

	if (s == NULL)
		return -1;
	for (const struct test_case *t = tests; t->name != NULL; t++)
		if (CU_add_test(s, t->name, t->fn) == NULL)
			return -1;
	return 0;
}
