/* connectors_pending.c - TEMPORARY: the connector symbols until the real
 * connectors are merged, so the runner links and can be tested.  Whoever
 * merges the jdbc, singer and file_storage connectors deletes this file
 * (and its line in Makefile.am); it must not reach main. */
#include <stdio.h>

#include "runner/connector.h"

static int pending(char *err, size_t errlen)
{
	snprintf(err, errlen, "connector not built yet");
	return -1;
}

int singer_extract_load(const struct job_spec *job, struct task_env *env,
                        char *err, size_t errlen)
{
	(void)job;
	(void)env;
	return pending(err, errlen);
}

int file_storage_extract_load(const struct job_spec *job, struct task_env *env,
                              char *err, size_t errlen)
{
	(void)job;
	(void)env;
	return pending(err, errlen);
}

