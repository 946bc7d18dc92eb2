/* jobs.c - (being written) */
#include "platform/platform.h"

const struct route platform_job_routes[] = {
	ROUTES_END
};
