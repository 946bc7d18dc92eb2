/* pipelines.c - (being written) */
#include "platform/platform.h"

const struct route platform_pipeline_routes[] = {
	ROUTES_END
};
