/* test_hooks.h - pauses, spins and allocations the API tests ask for through
 * test-only config keys (runner_test_task_*, rag_test_*), so that a test can
 * kill a process in the middle of its work or watch a memory limit bite.
 *
 * They exist only in a build configured with --enable-test-hooks (the test
 * and bench stacks).  Without it the keys are unknown to the config parser
 * and TEST_HOOK_PAUSE expands to nothing, so a production binary holds
 * neither the code nor the key names (t/hooks/check proves it). */
#ifndef SLUICE_TEST_HOOKS_H
#define SLUICE_TEST_HOOKS_H

#ifdef SLUICE_TEST_HOOKS

/* Sleep ms milliseconds (none when ms <= 0), signals notwithstanding. */
void test_hook_pause(int ms);

/* Keep the CPU busy for ms milliseconds of this process's CPU time (none
 * when ms <= 0). */
void test_hook_spin(int ms);

/* Allocate and touch mb MiB one MiB at a time, then free it all.  0, or -1
 * when an allocation failed; *got is the MiB obtained. */
int test_hook_alloc(int mb, int *got);

/* Pause for the config key's milliseconds: cfg is a const struct config *. */
#define TEST_HOOK_PAUSE(cfg, key) test_hook_pause((cfg)->key)
/* Spin for the config key's milliseconds of CPU time. */
#define TEST_HOOK_SPIN(cfg, key) test_hook_spin((cfg)->key)
/* The config key's value when set (> 0), else dflt. */
#define TEST_HOOK_OR(cfg, key, dflt) ((cfg)->key > 0 ? (cfg)->key : (dflt))

#else

#define TEST_HOOK_PAUSE(cfg, key) ((void)0)
#define TEST_HOOK_SPIN(cfg, key) ((void)0)
#define TEST_HOOK_OR(cfg, key, dflt) ((void)(cfg), (dflt))

#endif
#endif
