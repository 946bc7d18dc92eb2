/* runs.c - (being written) */
#include "platform/platform.h"

const struct route platform_run_routes[] = {
	ROUTES_END
};
