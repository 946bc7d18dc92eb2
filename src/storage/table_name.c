/* table_name.c - MariaDB + Snowflake table-name rules, the lower snake case
 * form of a name and suggestions for an invalid one.
 *
 * Sources of the rules (see table_name.h):
 *   MariaDB: "Identifier Names" (unquoted: [0-9a-zA-Z$_] and U+0080..U+FFFF,
 *   at most 64 characters, may begin with a digit but not consist only of
 *   digits) and "Reserved Words" (the main list, including words reserved
 *   from a later version on, so that a name stays valid after an upgrade;
 *   the Oracle-mode list and the historical exceptions are warnings).
 *   Snowflake: "Identifier requirements" (unquoted: start with a letter or
 *   '_', then letters, '_', digits and '$'; at most 255 characters; stored
 *   in upper case) and "Reserved & limited keywords". */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/table_name.h"
#include "util/str.h"

/* --- word lists (upper case, sorted by strcmp for bsearch) ------------------ */

static const char *const mariadb_reserved[] = {
	"ACCESSIBLE", "ADD", "ALL", "ALTER", "ANALYZE", "AND", "AS", "ASC",
	"ASENSITIVE", "BEFORE", "BETWEEN", "BIGINT", "BINARY", "BLOB", "BOTH",
	"BY", "CALL", "CASCADE", "CASE", "CHANGE", "CHAR", "CHARACTER",
	"CHECK", "COLLATE", "COLUMN", "CONDITION", "CONSTRAINT", "CONTINUE",
	"CONVERT", "CREATE", "CROSS", "CURRENT_DATE", "CURRENT_ROLE",
	"CURRENT_TIME", "CURRENT_TIMESTAMP", "CURRENT_USER", "CURSOR",
	"DATABASE", "DATABASES", "DAY_HOUR", "DAY_MICROSECOND", "DAY_MINUTE",
	"DAY_SECOND", "DEC", "DECIMAL", "DECLARE", "DEFAULT", "DELAYED",
	"DELETE", "DELETE_DOMAIN_ID", "DESC", "DESCRIBE", "DETERMINISTIC",
	"DISTINCT", "DISTINCTROW", "DIV", "DOUBLE", "DO_DOMAIN_IDS", "DROP",
	"DUAL", "EACH", "ELSE", "ELSEIF", "ENCLOSED", "ESCAPED", "EXCEPT",
	"EXISTS", "EXIT", "EXPLAIN", "FALSE", "FETCH", "FLOAT", "FLOAT4",
	"FLOAT8", "FOR", "FORCE", "FOREIGN", "FROM", "FULLTEXT", "GENERAL",
	"GRANT", "GROUP", "HAVING", "HIGH_PRIORITY", "HOUR_MICROSECOND",
	"HOUR_MINUTE", "HOUR_SECOND", "IF", "IGNORE", "IGNORE_DOMAIN_IDS",
	"IGNORE_SERVER_IDS", "IN", "INDEX", "INFILE", "INNER", "INOUT",
	"INSENSITIVE", "INSERT", "INT", "INT1", "INT2", "INT3", "INT4",
	"INT8", "INTEGER", "INTERSECT", "INTERVAL", "INTO", "IS", "ITERATE",
	"JOIN", "KEY", "KEYS", "KILL", "LEADING", "LEAVE", "LEFT", "LIKE",
	"LIMIT", "LINEAR", "LINES", "LOAD", "LOCALTIME", "LOCALTIMESTAMP",
	"LOCK", "LONG", "LONGBLOB", "LONGTEXT", "LOOP", "LOW_PRIORITY",
	"MASTER_HEARTBEAT_PERIOD", "MASTER_SSL_VERIFY_SERVER_CERT", "MATCH",
	"MAXVALUE", "MEDIUMBLOB", "MEDIUMINT", "MEDIUMTEXT", "MIDDLEINT",
	"MINUTE_MICROSECOND", "MINUTE_SECOND", "MOD", "MODIFIES", "NATURAL",
	"NOT", "NO_WRITE_TO_BINLOG", "NULL", "NUMERIC", "OFFSET", "ON",
	"OPTIMIZE", "OPTION", "OPTIONALLY", "OR", "ORDER", "OUT", "OUTER",
	"OUTFILE", "OVER", "PAGE_CHECKSUM", "PARSE_VCOL_EXPR", "PARTITION",
	"PRECISION", "PRIMARY", "PROCEDURE", "PURGE", "RANGE", "READ",
	"READS", "READ_WRITE", "REAL", "RECURSIVE", "REFERENCES",
	"REF_SYSTEM_ID", "REGEXP", "RELEASE", "RENAME", "REPEAT", "REPLACE",
	"REQUIRE", "RESIGNAL", "RESTRICT", "RETURN", "RETURNING", "REVOKE",
	"RIGHT", "RLIKE", "ROWS", "ROW_NUMBER", "SCHEMA", "SCHEMAS",
	"SECOND_MICROSECOND", "SELECT", "SENSITIVE", "SEPARATOR", "SET",
	"SHOW", "SIGNAL", "SLOW", "SMALLINT", "SPATIAL", "SPECIFIC", "SQL",
	"SQLEXCEPTION", "SQLSTATE", "SQLWARNING", "SQL_BIG_RESULT",
	"SQL_CALC_FOUND_ROWS", "SQL_SMALL_RESULT", "SSL", "STARTING",
	"STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES",
	"STRAIGHT_JOIN", "TABLE", "TERMINATED", "THEN", "TINYBLOB", "TINYINT",
	"TINYTEXT", "TO", "TRAILING", "TRIGGER", "TRUE", "UNDO", "UNION",
	"UNIQUE", "UNLOCK", "UNSIGNED", "UPDATE", "USAGE", "USE", "USING",
	"UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP", "VALUES", "VARBINARY",
	"VARCHAR", "VARCHARACTER", "VARYING", "VECTOR", "WHEN", "WHERE",
	"WHILE", "WINDOW", "WITH", "WRITE", "XOR", "YEAR_MONTH", "ZEROFILL"
};

static const char *const snowflake_reserved[] = {
	"ACCOUNT", "ALL", "ALTER", "AND", "ANY", "AS", "BETWEEN", "BY",
	"CASE", "CAST", "CHECK", "COLUMN", "CONNECT", "CONNECTION",
	"CONSTRAINT", "CREATE", "CROSS", "CURRENT", "CURRENT_DATE",
	"CURRENT_TIME", "CURRENT_TIMESTAMP", "CURRENT_USER", "DATABASE",
	"DELETE", "DISTINCT", "DROP", "ELSE", "EXISTS", "FALSE", "FOLLOWING",
	"FOR", "FROM", "FULL", "GRANT", "GROUP", "GSCLUSTER", "HAVING",
	"ILIKE", "IN", "INCREMENT", "INNER", "INSERT", "INTERSECT", "INTO",
	"IS", "ISSUE", "JOIN", "LATERAL", "LEFT", "LIKE", "LOCALTIME",
	"LOCALTIMESTAMP", "MINUS", "NATURAL", "NOT", "NULL", "OF", "ON", "OR",
	"ORDER", "ORGANIZATION", "QUALIFY", "REGEXP", "REVOKE", "RIGHT",
	"RLIKE", "ROW", "ROWS", "SAMPLE", "SCHEMA", "SELECT", "SET", "SOME",
	"START", "TABLE", "TABLESAMPLE", "THEN", "TO", "TRIGGER", "TRUE",
	"TRY_CAST", "UNION", "UNIQUE", "UPDATE", "USING", "VALUES", "VIEW",
	"WHEN", "WHENEVER", "WHERE", "WINDOW", "WITH"
};

/* MariaDB "Reserved Words", Oracle mode: reserved only with sql_mode=ORACLE. */
static const char *const mariadb_oracle_reserved[] = {
	"BODY", "ELSIF", "GOTO", "HISTORY", "MINUS", "OTHERS", "PACKAGE",
	"PERIOD", "RAISE", "ROWNUM", "ROWTYPE", "SYSDATE", "SYSTEM",
	"SYSTEM_TIME", "VERSIONING", "WITHOUT"
};

/* MariaDB "Reserved Words", exceptions: keywords allowed unquoted for
 * historical reasons. */
static const char *const mariadb_exceptions[] = {
	"ACTION", "BIT", "DATE", "ENUM", "NO", "TEXT", "TIME", "TIMESTAMP"
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define WORD_MAX 40                 /* longer than any listed word */

static int cmp_word(const void *key, const void *elem)
{
	return strcmp((const char *)key, *(const char *const *)elem);
}

/* len bytes of word, upper-cased into buf; -1 when it cannot be a word. */
static int upper_word(const char *word, size_t len, char buf[WORD_MAX])
{
	if (len == 0 || len >= WORD_MAX)
		return -1;
	for (size_t i = 0; i < len; i++) {
		char c = word[i];

		if (c == '\0')
			return -1;
		buf[i] = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
	}
	buf[len] = '\0';
	return 0;
}

static bool in_list(const char *const *list, size_t n, const char *word, size_t len)
{
	char buf[WORD_MAX];

	if (upper_word(word, len, buf) != 0)
		return false;
	return bsearch(buf, list, n, sizeof *list, cmp_word) != NULL;
}

int table_name_reserved(const char *word, size_t len)
{
	int t = 0;

	if (in_list(mariadb_reserved, NELEM(mariadb_reserved), word, len))
		t |= TABLE_NAME_MARIADB;
	if (in_list(snowflake_reserved, NELEM(snowflake_reserved), word, len))
		t |= TABLE_NAME_SNOWFLAKE;
	return t;
}

bool table_name_oracle_reserved(const char *word, size_t len)
{
	return in_list(mariadb_oracle_reserved, NELEM(mariadb_oracle_reserved), word, len);
}

bool table_name_mariadb_exception(const char *word, size_t len)
{
	return in_list(mariadb_exceptions, NELEM(mariadb_exceptions), word, len);
}

size_t table_name_reserved_list(int target, const char *const **words)
{
	if (target == TABLE_NAME_MARIADB) {
		*words = mariadb_reserved;
		return NELEM(mariadb_reserved);
	}
	if (target == TABLE_NAME_SNOWFLAKE) {
		*words = snowflake_reserved;
		return NELEM(snowflake_reserved);
	}
	*words = NULL;
	return 0;
}

/* --- characters ------------------------------------------------------------- */

/* Decode one UTF-8 character of s[0..n): its code point, and its length in
 * *adv; -1 (with *adv = 1) for an invalid sequence: a stray continuation
 * byte, a truncated or overlong form, a surrogate, or past U+10FFFF. */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *adv)
{
	unsigned cp;
	size_t len = str_utf8_next(s, n, &cp);

	*adv = len ? len : 1;
	return len ? (int32_t)cp : -1;
}

static bool is_upper(int32_t c) { return c >= 'A' && c <= 'Z'; }
static bool is_lower(int32_t c) { return c >= 'a' && c <= 'z'; }
static bool is_digit(int32_t c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int32_t c) { return is_upper(c) || is_lower(c); }

/* Allowed in an unquoted name by both targets (the first character aside). */
static bool both_ok(int32_t c)
{
	return is_alpha(c) || is_digit(c) || c == '_' || c == '$';
}

/* How a character is shown in a message: 'x', ' ' (space), 'é' (U+00E9),
 * or U+0009 for a control character. */
static void show_char(int32_t c, char *buf, size_t cap)
{
	if (c == ' ') {
		snprintf(buf, cap, "' ' (space)");
	} else if (c > 0x20 && c < 0x7f) {
		snprintf(buf, cap, "'%c'", (char)c);
	} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0xa0) || c == 0xad ||
	           (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
	           c == 0xfeff) {
		/* controls and invisible spaces: the code point alone */
		snprintf(buf, cap, "U+%04X", (unsigned)c);
	} else {
		char u[5];
		size_t n;

		if (c < 0x800) {
			u[0] = (char)(0xc0 | (c >> 6));
			u[1] = (char)(0x80 | (c & 0x3f));
			n = 2;
		} else if (c < 0x10000) {
			u[0] = (char)(0xe0 | (c >> 12));
			u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
			u[2] = (char)(0x80 | (c & 0x3f));
			n = 3;
		} else {
			u[0] = (char)(0xf0 | (c >> 18));
			u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
			u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
			u[3] = (char)(0x80 | (c & 0x3f));
			n = 4;
		}
		u[n] = '\0';
		snprintf(buf, cap, "'%s' (U+%04X)", u, (unsigned)c);
	}
}

/* A set of up to CHARS_SHOWN distinct characters for one message. */
#define CHARS_SHOWN 5

struct charset {
	int32_t c[CHARS_SHOWN];
	size_t n;
	bool more;
};

static void charset_add(struct charset *s, int32_t c)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->c[i] == c)
			return;
	if (s->n < CHARS_SHOWN)
		s->c[s->n++] = c;
	else
		s->more = true;
}

static void charset_show(const struct charset *s, char *buf, size_t cap)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n && off < cap; i++) {
		char one[32];

		show_char(s->c[i], one, sizeof one);
		off += (size_t)snprintf(buf + off, cap - off, "%s%s", i > 0 ? ", " : "", one);
	}
	if (s->more && off < cap)
		snprintf(buf + off, cap - off, " and more");
}

/* --- messages ----------------------------------------------------------------- */

static void add_msg(char (*list)[TABLE_NAME_MSG_MAX], size_t *n, size_t max,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_msg(char (*list)[TABLE_NAME_MSG_MAX], size_t *n, size_t max,
                    const char *fmt, ...)
{
	va_list ap;

	if (*n >= max)
		return;
	va_start(ap, fmt);
	vsnprintf(list[*n], TABLE_NAME_MSG_MAX, fmt, ap);
	va_end(ap);
	(*n)++;
}

#define ERR(out, ...) add_msg((out)->errors, &(out)->nerrors, TABLE_NAME_ERRORS_MAX, __VA_ARGS__)
#define WARN(out, ...) add_msg((out)->warnings, &(out)->nwarnings, TABLE_NAME_WARNINGS_MAX, __VA_ARGS__)

static const char *targets_text(int t)
{
	return t == (TABLE_NAME_MARIADB | TABLE_NAME_SNOWFLAKE) ? "MariaDB and Snowflake"
	     : t == TABLE_NAME_MARIADB ? "MariaDB" : "Snowflake";
}

/* --- the rules ---------------------------------------------------------------- */

/* The rules alone: errors into out (NULL: only the verdict). */
static bool check_rules(const char *name, size_t len, const char *what,
                        struct table_name_check *out)
{
	const unsigned char *s = (const unsigned char *)name;
	struct charset neither = { .n = 0 }, mariadb_only = { .n = 0 };
	size_t chars = 0, digits = 0, adv;
	int32_t first = -1;
	bool bad_utf8 = false, ok = true;
	char shown[200];
	int reserved;

	if (len == 0) {
		if (out != NULL)
			ERR(out, "%s is empty", what);
		return false;
	}
	for (size_t i = 0; i < len; i += adv) {
		int32_t c = utf8_next(s + i, len - i, &adv);

		if (c < 0) {
			bad_utf8 = true;
			break;
		}
		if (chars++ == 0)
			first = c;
		if (is_digit(c))
			digits++;
		if (both_ok(c))
			continue;
		/* MariaDB takes U+0080..U+FFFF unquoted; Snowflake ASCII only. */
		if (c >= 0x80 && c <= 0xffff)
			charset_add(&mariadb_only, c);
		else
			charset_add(&neither, c);
	}
	if (bad_utf8) {
		if (out != NULL)
			ERR(out, "%s is not valid UTF-8", what);
		return false;
	}
	if (chars > TABLE_NAME_MAX_MARIADB) {
		ok = false;
		if (out != NULL)
			ERR(out, "%s is %zu characters long: MariaDB allows at most %d%s",
			    what, chars, TABLE_NAME_MAX_MARIADB,
			    chars > TABLE_NAME_MAX_SNOWFLAKE
			        ? " and Snowflake at most 255" : "");
	}
	if (is_digit(first) || first == '$') {
		ok = false;
		if (out != NULL)
			ERR(out, "%s starts with %s: Snowflake requires a letter or "
			    "an underscore first", what,
			    first == '$' ? "'$'" : "a digit");
	}
	if (digits == chars) {
		ok = false;
		if (out != NULL)
			ERR(out, "%s consists only of digits: MariaDB does not allow "
			    "that in an unquoted name", what);
	}
	if (neither.n > 0) {
		ok = false;
		if (out != NULL) {
			charset_show(&neither, shown, sizeof shown);
			ERR(out, "%s contains %s: neither MariaDB nor Snowflake allows %s "
			    "in an unquoted name (letters, digits, '_' and '$' only)",
			    what, shown, neither.n > 1 ? "these" : "it");
		}
	}
	if (mariadb_only.n > 0) {
		ok = false;
		if (out != NULL) {
			charset_show(&mariadb_only, shown, sizeof shown);
			ERR(out, "%s contains %s: MariaDB allows %s unquoted but "
			    "Snowflake allows only ASCII letters, digits, '_' and '$'",
			    what, shown, mariadb_only.n > 1 ? "these" : "it");
		}
	}
	if ((reserved = table_name_reserved(name, len)) != 0) {
		ok = false;
		if (out != NULL) {
			char w[WORD_MAX];

			upper_word(name, len, w);
			ERR(out, "%s is a reserved word in %s: %s", what,
			    targets_text(reserved), w);
		}
	}
	return ok;
}

bool table_name_valid(const char *name)
{
	return name != NULL && check_rules(name, strlen(name), "name", NULL);
}

/* --- lower snake case ----------------------------------------------------------- */

/* Latin-1 letters written with ASCII ones, for suggestions ("café" ->
 * "cafe"); NULL for a code point without one. */
static const char *latin1_ascii(int32_t c)
{
	static const char *const tab[64] = {
		"a", "a", "a", "a", "a", "a", "ae", "c",         /* C0 */
		"e", "e", "e", "e", "i", "i", "i", "i",          /* C8 */
		"d", "n", "o", "o", "o", "o", "o", NULL,         /* D0, D7 = x */
		"o", "u", "u", "u", "u", "y", "th", "ss",        /* D8 */
		"a", "a", "a", "a", "a", "a", "ae", "c",         /* E0 */
		"e", "e", "e", "e", "i", "i", "i", "i",          /* E8 */
		"d", "n", "o", "o", "o", "o", "o", NULL,         /* F0, F7 = / */
		"o", "u", "u", "u", "u", "y", "th", "y",         /* F8 */
	};

	return c >= 0xc0 && c <= 0xff ? tab[c - 0xc0] : NULL;
}

#define SNAKE_CPS 256               /* code points looked at */
#define SNAKE_BUF 512

/* The lower snake case of name into out (SNAKE_BUF bytes): letters
 * lower-cased with '_' where a lower-case letter or digit meets an upper-
 * case one ("salesData" -> "sales_data") and before the last capital of an
 * acronym ("HTTPServer" -> "http_server"); Latin-1 letters spelt in ASCII;
 * everything else one '_'; runs of '_' as one, none at the end, one at the
 * start only when name starts with '_'.  Only ASCII comes out. */
static void snake(const char *name, size_t len, char out[SNAKE_BUF])
{
	const unsigned char *s = (const unsigned char *)name;
	int32_t cps[SNAKE_CPS];
	size_t n = 0, o = 0, adv;

	for (size_t i = 0; i < len && n < SNAKE_CPS; i += adv)
		cps[n++] = utf8_next(s + i, len - i, &adv);   /* -1 for a bad byte */

	for (size_t i = 0; i < n && o + 4 < SNAKE_BUF; i++) {
		int32_t c = cps[i], prev = i > 0 ? cps[i - 1] : -1;
		int32_t next = i + 1 < n ? cps[i + 1] : -1;
		const char *t;

		if (is_upper(c)) {
			if (o > 0 && (is_lower(prev) || is_digit(prev) ||
			              (is_upper(prev) && is_lower(next))))
				out[o++] = '_';
			out[o++] = (char)(c - 'A' + 'a');
		} else if (is_lower(c) || is_digit(c)) {
			out[o++] = (char)c;
		} else if ((t = latin1_ascii(c)) != NULL) {
			for (; *t != '\0'; t++)
				out[o++] = *t;
		} else {
			out[o++] = '_';
		}
	}
	out[o] = '\0';

	/* Collapse runs of '_', trim the end, keep one leading '_' only when
	 * the name had one. */
	{
		size_t w = 0;

		for (size_t r = 0; r < o; r++) {
			if (out[r] == '_' && (w == 0 ? !(len > 0 && name[0] == '_')
			                             : out[w - 1] == '_'))
				continue;
			out[w++] = out[r];
		}
		while (w > 1 && out[w - 1] == '_')
			w--;
		if (w == 1 && out[0] == '_' && !(len > 0 && name[0] == '_'))
			w = 0;
		out[w] = '\0';
	}
}

/* Cut s to at most max bytes (ASCII), without a trailing '_'. */
static void cut(char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		n = max;
	while (n > 1 && s[n - 1] == '_')
		n--;
	s[n] = '\0';
}

/* Make an ASCII candidate valid when a simple change does: "t_" before a
 * leading digit, cut to length, suffix after a reserved word.  The result
 * may still be invalid (the caller checks). */
static void repair(char *cand, size_t cap, const char *suffix)
{
	char tmp[SNAKE_BUF + 8];

	if (cand[0] == '\0')
		return;
	if (!is_alpha((unsigned char)cand[0]) && cand[0] != '_') {
		snprintf(tmp, sizeof tmp, "t_%s", cand);
		snprintf(cand, cap, "%s", tmp);
	}
	cut(cand, TABLE_NAME_MAX_MARIADB);
	if (table_name_reserved(cand, strlen(cand)) != 0) {
		cut(cand, TABLE_NAME_MAX_MARIADB - strlen(suffix));
		snprintf(tmp, sizeof tmp, "%s%s", cand, suffix);
		snprintf(cand, cap, "%s", tmp);
	}
}

int table_name_normalize(const char *name, char out[TABLE_NAME_BUF])
{
	char buf[SNAKE_BUF];

	if (!table_name_valid(name))
		return -1;
	snake(name, strlen(name), buf);
	repair(buf, sizeof buf, "_table");
	if (!table_name_valid(buf))
		return -1;                /* cannot happen for a valid name */
	memcpy(out, buf, strlen(buf) + 1);       /* valid: at most 64 bytes */
	return 0;
}

/* --- suggestions ----------------------------------------------------------------- */

static void suggest(struct table_name_check *out, const char *cand)
{
	if (out->nsuggestions >= TABLE_NAME_SUGGESTIONS_MAX || !table_name_valid(cand))
		return;
	for (size_t i = 0; i < out->nsuggestions; i++)
		if (strcmp(out->suggestions[i], cand) == 0)
			return;
	memcpy(out->suggestions[out->nsuggestions++], cand, strlen(cand) + 1);
}

static void make_suggestions(const char *name, size_t len, bool schema,
                             struct table_name_check *out)
{
	const char *suffix = schema ? "_schema" : "_table";
	const char *fallback = schema ? "new_schema" : "new_table";
	char base[SNAKE_BUF], cand[SNAKE_BUF + 16];
	size_t lead = 0;

	snake(name, len, base);

	/* 1. leading digits moved to the end: "2024_sales" -> "sales_2024" */
	while (is_digit((unsigned char)base[lead]))
		lead++;
	if (lead > 0 && base[lead] != '\0') {
		const char *rest = base + lead;

		while (*rest == '_')
			rest++;
		if (*rest != '\0') {
			snprintf(cand, sizeof cand, "%s_%.*s", rest, (int)lead, base);
			repair(cand, sizeof cand, suffix);
			suggest(out, cand);
		}
	}

	/* 2. the name itself, cleaned up */
	if (base[0] != '\0') {
		snprintf(cand, sizeof cand, "%s", base);
		repair(cand, sizeof cand, suffix);
		suggest(out, cand);
	}

	/* 3. with a suffix (unless it has it already), and with a prefix */
	if (base[0] != '\0') {
		size_t bl = strlen(base), sl = strlen(suffix);

		if (!(bl >= sl - 1 && strcmp(base + bl - (sl - 1), suffix + 1) == 0)) {
			snprintf(cand, sizeof cand, "%s", base);
			cut(cand, TABLE_NAME_MAX_MARIADB - sl);
			strcat(cand, suffix);
			repair(cand, sizeof cand, suffix);
			suggest(out, cand);
		}
		snprintf(cand, sizeof cand, "%s_%s", schema ? "s" : "t", base);
		repair(cand, sizeof cand, suffix);
		suggest(out, cand);
	}
	if (out->nsuggestions == 0)
		suggest(out, fallback);
}

/* --- the whole check --------------------------------------------------------------- */

void table_name_check(const char *name, size_t len, const char *what,
                      struct table_name_check *out)
{
	bool schema = what != NULL && strncmp(what, "schema", 6) == 0;
	size_t chars = 0, adv;

	memset(out, 0, sizeof *out);
	if (what == NULL)
		what = "table_name";
	out->valid = check_rules(name, len, what, out);
	if (!out->valid) {
		make_suggestions(name, len, schema, out);
		return;
	}

	/* Valid: ASCII only from here on, no NUL. */
	chars = len;
	table_name_normalize(name, out->normalized);
	for (size_t i = 0; i < len; i += adv) {
		adv = 1;
		if (is_upper((unsigned char)name[i])) {
			char folded[TABLE_NAME_BUF];

			for (size_t k = 0; k < len; k++)
				folded[k] = is_lower((unsigned char)name[k])
				    ? (char)(name[k] - 'a' + 'A') : name[k];
			folded[len] = '\0';
			WARN(out, "%s has upper-case letters: Snowflake stores an unquoted "
			     "name in upper case (%s) while MariaDB keeps it as written "
			     "and compares table names case-sensitively on Linux", what,
			     folded);
			break;
		}
	}
	if (chars > TABLE_NAME_NEAR_LIMIT)
		WARN(out, "%s is %zu characters long, close to MariaDB's limit of %d",
		     what, chars, TABLE_NAME_MAX_MARIADB);
	if (memchr(name, '$', len) != NULL)
		WARN(out, "%s contains '$': MariaDB and Snowflake accept it unquoted, "
		     "but most other SQL databases (PostgreSQL, SQL Server, standard "
		     "SQL) need such a name quoted", what);
	if (table_name_oracle_reserved(name, len)) {
		char w[WORD_MAX];

		upper_word(name, len, w);
		WARN(out, "%s is a reserved word in MariaDB's Oracle mode "
		     "(sql_mode=ORACLE): %s", what, w);
	}
	if (table_name_mariadb_exception(name, len)) {
		char w[WORD_MAX];

		upper_word(name, len, w);
		WARN(out, "%s is a MariaDB keyword that is allowed unquoted only for "
		     "historical reasons: %s", what, w);
	}
}
