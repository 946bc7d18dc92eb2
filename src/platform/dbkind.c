/* dbkind.c - JDBC plugins, their database kinds and allowed column types. */
#include <string.h>

#include "platform/dbkind.h"
#include "util/str.h"

static const struct {
	const char *plugin;
	enum dbkind kind;
} plugins[] = {
	{ "postgres",  DBKIND_A },
	{ "mysql",     DBKIND_B },
	{ "mariadb",   DBKIND_B },
	{ "oracle",    DBKIND_C },
	{ "sqlserver", DBKIND_D },
};

static const char *const types_none[] = { NULL };
static const char *const types_a[] = {
	"timestamp with time zone", "timestamp without time zone", "date",
	"integer", "bigint", "smallint", "serial", "bigserial", NULL
};
static const char *const types_b[] = {
	"datetime", "timestamp", "date", "int", "bigint", "smallint",
	"mediumint", "tinyint", NULL
};
static const char *const types_c[] = {
	"TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH LOCAL TIME ZONE",
	"DATE", "NUMBER", NULL
};
static const char *const types_d[] = {
	"datetime", "datetime2", "smalldatetime", "date", "int", "bigint",
	"smallint", "tinyint", NULL
};

enum dbkind dbkind_of_plugin(const char *plugin)
{
	if (plugin == NULL)
		return DBKIND_NONE;
	for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++)
		if (strcmp(plugin, plugins[i].plugin) == 0)
			return plugins[i].kind;
	return DBKIND_NONE;
}

const char *const *dbkind_types(enum dbkind k)
{
	switch (k) {
	case DBKIND_A: return types_a;
	case DBKIND_B: return types_b;
	case DBKIND_C: return types_c;
	case DBKIND_D: return types_d;
	default:       return types_none;
	}
}

const char *dbkind_type_find(enum dbkind k, const char *type)
{
	if (type == NULL)
		return NULL;
	for (const char *const *t = dbkind_types(k); *t != NULL; t++)
		if (str_eq_nocase(*t, type))
			return *t;
	return NULL;
}

bool dbkind_type_allowed(enum dbkind k, const char *type)
{
	return dbkind_type_find(k, type) != NULL;
}

const char *dbkind_types_joined(enum dbkind k, char *buf, size_t cap)
{
	size_t len = 0;

	if (cap == 0)
		return buf;
	buf[0] = '\0';
	for (const char *const *t = dbkind_types(k); *t != NULL; t++) {
		size_t n = strlen(*t) + (len > 0 ? 2 : 0);

		if (len + n + 1 > cap)
			break;
		if (len > 0)
			memcpy(buf + len, ", ", 2);
		memcpy(buf + len + n - strlen(*t), *t, strlen(*t) + 1);
		len += n;
	}
	return buf;
}
