/* connector.c - the task of a job to its connector.
 *
 * jdbc jobs go to the jdbc connector unless their plugin names a database
 * this build has no client library for (oracle, sqlserver): those fail at
 * once with "driver not available: <plugin>", before anything is touched.
 * singer and file_storage have one connector each.  The qualify task
 * exists only for jdbc incremental_with_qualify jobs. */
#include <stdio.h>
#include <string.h>

#include "runner/connector.h"
#include "runner/runner.h"

/* Plugins the job validation accepts but no driver is linked for. */
static const char *const no_driver[] = { "oracle", "sqlserver", NULL };

static int jdbc_driver_check(const struct job_spec *job, char *err, size_t errlen)
{
	for (const char *const *p = no_driver; *p != NULL; p++)
		if (job->plugin != NULL && strcmp(job->plugin, *p) == 0) {
			snprintf(err, errlen, "driver not available: %s", *p);
			return -1;
		}
	return 0;
}

int connector_driver_check(const struct job_spec *job, char *err, size_t errlen)
{
	if (job->connector != NULL && strcmp(job->connector, "jdbc") == 0)
		return jdbc_driver_check(job, err, errlen);
	return 0;
}

int connector_extract_load(const struct job_spec *job, struct task_env *env,
                           char *err, size_t errlen)
{
	const char *c = job->connector != NULL ? job->connector : "";

	if (strcmp(c, "jdbc") == 0) {
		if (jdbc_driver_check(job, err, errlen) != 0)
			return -1;
		return jdbc_extract_load(job, env, err, errlen);
	}
	if (strcmp(c, "singer") == 0)
		return singer_extract_load(job, env, err, errlen);
	if (strcmp(c, "file_storage") == 0)
		return file_storage_extract_load(job, env, err, errlen);
	snprintf(err, errlen, "unknown connector: %.32s", c);
	return -1;
}

int connector_qualify(const struct job_spec *job, struct task_env *env,
                      char *err, size_t errlen)
{
	const char *c = job->connector != NULL ? job->connector : "";

	if (strcmp(c, "jdbc") != 0) {
		snprintf(err, errlen, "the qualify task applies to jdbc jobs only "
		         "(connector %.32s)", c);
		return -1;
	}
	if (jdbc_driver_check(job, err, errlen) != 0)
		return -1;
	return jdbc_qualify(job, env, err, errlen);
}
