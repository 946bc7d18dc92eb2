/* identity.c - canonical customer ids and user names (see identity.h). */
#include <string.h>

#include "auth/identity.h"

bool identity_customer_id_ok(const char *id)
{
	size_t n = id != NULL ? strlen(id) : 0;

	if (n == 0 || n > IDENTITY_CUSTOMER_ID_MAX)
		return false;
	for (const char *p = id; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_'))
			return false;
	return true;
}

bool identity_user_name_ok(const char *name)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n == 0 || n > IDENTITY_USER_NAME_MAX)
		return false;
	for (const char *p = name; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == ':')
			return false;
	return true;
}
