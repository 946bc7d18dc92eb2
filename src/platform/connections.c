/* connections.c - (being written) */
#include "platform/platform.h"

const struct route platform_connection_routes[] = {
	ROUTES_END
};
