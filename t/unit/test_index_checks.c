/* test_index_checks.c - the serve's table of index files checked whole
 * (index_checks.h), with forked processes for the master and its
 * workers: a file one worker checked is known to the others, and one
 * written in place is not; a worker opening a file another is checking
 * waits for its result; a checker killed midway, or a checksum that did
 * not match, leaves the file to be checked again.
 *
 * The table is mapped in a forked child of the test runner, as the serve
 * master maps it, so that the other suites' opens never see it.  That
 * child reports each failed step on stderr and in its exit status. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "suites.h"
#include "retrieval/index.h"
#include "retrieval/index_checks.h"
#include "util/timeutil.h"

#define DIM 8
#define ROWS 200

static char dir[64], path[128];
static int failures;

#define EXPECT(cond)                                                                   \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: not true: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                    \
		}                                                                      \
	} while (0)

/* A fresh directory for path, and its removal. */
static int make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/sluice-ixchk-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/ix.idx", dir);
	return 0;
}

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

static int write_index(void)
{
	float v[ROWS * DIM];
	const char *ids[ROWS];
	char names[ROWS][16], err[256];

	for (size_t i = 0; i < ROWS * DIM; i++)
		v[i] = (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
	for (size_t i = 0; i < ROWS; i++) {
		snprintf(names[i], sizeof names[i], "s%zu", i);
		ids[i] = names[i];
	}
	return rindex_write(path, ROWS, DIM, v, ids, NULL, NULL, NULL, err, sizeof err);
}

static struct rindex_file file_now(void)
{
	struct stat st;

	if (stat(path, &st) != 0)
		memset(&st, 0, sizeof st);
	return rindex_file_of(&st);
}

/* Run fn in a forked process; its exit status (0: every step held). */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int worker_opens(void)
{
	char err[256];
	struct rindex *ix = rindex_open(path, err, sizeof err);

	if (ix == NULL)
		fprintf(stderr, "open: %s\n", err);
	rindex_close(ix);
	return ix == NULL;
}

static int worker_knows(void)
{
	struct rindex_file f = file_now();

	return !index_checks_known(&f);
}

static int worker_refused(void)
{
	char err[256];
	struct rindex *ix = rindex_open(path, err, sizeof err);

	rindex_close(ix);
	return ix != NULL || strstr(err, "checksum") == NULL;
}

/* One worker opened it (checked it whole): another knows it.  Written in
 * place since: not known, and refused. */
static void known_to_others(void)
{
	struct timespec tick = { 0, 20 * 1000000L };
	unsigned char byte = 0;
	int fd;

	EXPECT(write_index() == 0);
	EXPECT(in_child(worker_opens) == 0);
	EXPECT(in_child(worker_knows) == 0);
	/* past the filesystem's timestamp tick, so ctime moves */
	nanosleep(&tick, NULL);
	fd = open(path, O_RDWR);
	EXPECT(fd >= 0 && pread(fd, &byte, 1, 4096) == 1);
	byte ^= 0x40;
	EXPECT(fd >= 0 && pwrite(fd, &byte, 1, 4096) == 1);
	if (fd >= 0)
		close(fd);
	EXPECT(in_child(worker_knows) != 0);
	EXPECT(in_child(worker_refused) == 0);
	EXPECT(in_child(worker_refused) == 0);   /* a bad file is never known */
	EXPECT(unlink(path) == 0);
}

static int ready[2];

static int worker_checks_slowly(void)
{
	struct rindex_file f = file_now();
	struct timespec slow = { 0, 300 * 1000000L };

	if (index_checks_known(&f))
		return 1;
	if (write(ready[1], "x", 1) != 1)
		return 2;
	nanosleep(&slow, NULL);
	index_checks_done(&f, true);
	return 0;
}

static int worker_killed_checking(void)
{
	struct rindex_file f = file_now();

	if (index_checks_known(&f))
		return 1;
	raise(SIGKILL);
	return 2;
}

/* A worker checking the file: the next waits for its result.  A checker
 * killed: the next checks it; a mismatch reported: checked again. */
static void waits_and_takes_over(void)
{
	struct rindex_file f;
	double t0;
	pid_t pid;
	char c;
	int status;

	EXPECT(write_index() == 0);
	f = file_now();
	EXPECT(pipe(ready) == 0);
	if ((pid = fork()) == 0)
		_exit(worker_checks_slowly());
	EXPECT(read(ready[0], &c, 1) == 1);
	t0 = time_mono_ms();
	EXPECT(index_checks_known(&f));          /* true only once the checker said so */
	EXPECT(time_mono_ms() - t0 >= 200.0);
	EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0);
	close(ready[0]);
	close(ready[1]);
	EXPECT(unlink(path) == 0);

	EXPECT(write_index() == 0);
	f = file_now();
	EXPECT(in_child(worker_killed_checking) == 128 + SIGKILL);
	EXPECT(!index_checks_known(&f));          /* this process checks it now */
	index_checks_done(&f, false);
	EXPECT(!index_checks_known(&f));          /* a mismatch is not remembered */
	index_checks_done(&f, true);
	EXPECT(index_checks_known(&f));
	EXPECT(unlink(path) == 0);
}

static int master(void)
{
	if (index_checks_init() != 0) {
		fprintf(stderr, "index_checks_init failed\n");
		return 1;
	}
	known_to_others();
	waits_and_takes_over();
	return failures > 0;
}

static void test_table(void)
{
	CU_ASSERT_EQUAL_FATAL(make_dir(), 0);
	CU_ASSERT_EQUAL(in_child(master), 0);
	remove_dir();
}

/* Without the table (sluice work, the tools) every open checks, and
 * nothing is known. */
static void test_no_table(void)
{
	struct rindex_file f;

	CU_ASSERT_EQUAL_FATAL(make_dir(), 0);
	CU_ASSERT_EQUAL(write_index(), 0);
	f = file_now();
	CU_ASSERT_FALSE(index_checks_known(&f));
	index_checks_done(&f, true);
	CU_ASSERT_FALSE(index_checks_known(&f));
	CU_ASSERT_EQUAL(unlink(path), 0);
	remove_dir();
}

int suite_index_checks(void)
{
	static const struct test_case tests[] = {
		{ "no table: nothing known, every open checks", test_no_table },
		{ "workers: checked once, waited for, taken over, rechecked when changed",
		  test_table },
		{ NULL, NULL },
	};

	return suite_add("index_checks", tests);
}
