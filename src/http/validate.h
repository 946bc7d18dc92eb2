/* validate.h - one way to check what a client sent.
 *
 * A handler describes its JSON body or its query string as a table of
 * fields, each with a type, bounds and where its typed value goes, and calls
 * validate_json or validate_query once.  The validator knows nothing of HTTP
 * answers: it fills a struct verror, and the area's error table turns that
 * into the area's body shape (platform, storage and retrieval answer in
 * different shapes, as their specs say).
 *
 * Bounds are inclusive: a string of max characters passes, max + 1 fails.
 *
 *   static const struct vfield fields[] = {
 *       { "name", V_STR, V_REQUIRED, 1, 255, NULL, NULL, VOFF(struct in, name) },
 *       { "port", V_INT, V_REQUIRED, 1, 65535, NULL, NULL, VOFF(struct in, port) },
 *       VFIELDS_END
 *   };
 *   if (validate_json(fields, body, &in, &e) != 0)
 *       return platform_reply_verror(r, &e);
 */
#ifndef SLUICE_VALIDATE_H
#define SLUICE_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct req;

enum vtype {
	V_STR,      /* const char *: min..max characters (bytes with V_BYTES) */
	V_INT,      /* long long: min..max; in a query, a decimal integer */
	V_NUM,      /* double: min..max; JSON integers are numbers too */
	V_BOOL,     /* bool; in a query, true/false/1/0 */
	V_ENUM,     /* int: the index of the value in choices */
	V_OBJ,      /* struct json_object * (borrowed); max bytes of its JSON
	             * text when max > 0 */
	V_ARR,      /* struct json_object * (borrowed); min..max elements */
	V_CHECK,    /* whatever check stores; check decides */
};

enum vflag {
	V_REQUIRED = 1 << 0,   /* absent (or null) is an error */
	V_BYTES    = 1 << 1,   /* V_STR counted in bytes, not characters */
	V_NONBLANK = 1 << 2,   /* V_STR of only white space (isspace) fails */
	V_NOCASE   = 1 << 3,   /* V_ENUM compared without regard to ASCII case */
	V_NULL     = 1 << 4,   /* null is a value (stored as NULL for V_STR,
	                        * V_OBJ, V_ARR; given to check), not absence */
	V_CFG_MAX  = 1 << 5,   /* max is a configured limit, set on a copy of the
	                        * table per request; the table's max is unused */
};

enum verr_code {
	VERR_NONE = 0,
	VERR_NOT_OBJECT,       /* the body is not a JSON object */
	VERR_UNKNOWN,          /* a field or query parameter not in the table */
	VERR_DUPLICATE,        /* a query parameter given twice */
	VERR_REQUIRED,         /* a V_REQUIRED field is absent or null */
	VERR_TYPE,             /* wrong JSON type, or a query value not of it */
	VERR_RANGE,            /* outside min..max (length, value or count) */
	VERR_NUL,              /* a string holds a NUL character */
	VERR_BLANK,            /* V_NONBLANK string of whitespace only */
	VERR_CHOICE,           /* V_ENUM value not among the choices */
	VERR_MALFORMED,        /* a query pair with a bad percent escape or %00 */
	VERR_INVALID,          /* refused by a V_CHECK function */
};

#define VERR_FIELD_MAX 64
#define VERR_MESSAGE_MAX 256

/* What was wrong, for the area's error table.  message is a whole sentence
 * naming the field, fit to send to the client. */
struct verror {
	enum verr_code code;
	char field[VERR_FIELD_MAX + 1];
	char message[VERR_MESSAGE_MAX];
};

/* A V_CHECK function: store the value v (a JSON value; for a query a JSON
 * string) at out, or write why not into msg (a sentence without the field
 * name, e.g. "must be one of l2, l1") and return -1. */
typedef int (*vcheck_fn)(struct json_object *v, void *out, char *msg, size_t len);

struct vfield {
	const char *name;
	enum vtype type;
	unsigned flags;                /* enum vflag */
	double min, max;
	const char *const *choices;    /* V_ENUM: NULL-terminated */
	vcheck_fn check;               /* V_CHECK */
	size_t off;                    /* of the value in the caller's struct */
};

#define VOFF(type, member) offsetof(type, member)
#define VFIELDS_END { NULL, V_STR, 0, 0, 0, NULL, NULL, 0 }

/* The table of a route that takes no field or parameter: any is refused. */
extern const struct vfield vfields_none[];

/* Which fields were given, bit i for the table's row i (at most 64 rows):
 * what PATCH needs to tell "absent" from "set to the default". */
typedef uint64_t vgiven;

/* Check obj against fields, ended by VFIELDS_END.  Every key must be a
 * field; every given field is checked and stored at (char *)out + off;
 * absent fields are left as the caller initialised them.  Fields are
 * checked in table order, so the first error is the same for the same
 * input.  0, or -1 with *e filled.  given may be NULL. */
int validate_json(const struct vfield *fields, struct json_object *obj,
                  void *out, vgiven *given, struct verror *e);

/* Every refusal instead of the first, for bodies that report them all:
 * fn(e, arg) is called for each, unknown keys first, then the rows in table
 * order (an absent required field where its row stands); fn returns 0 to go
 * on, -1 to stop.  With VALIDATE_OPEN keys not in the table are left to the
 * caller.  Returns how many refusals fn was given. */
#define VALIDATE_OPEN 1u
typedef int (*verror_fn)(const struct verror *e, void *arg);
size_t validate_json_each(const struct vfield *fields, struct json_object *obj,
                          void *out, unsigned opts, vgiven *given,
                          verror_fn fn, void *arg);

/* Put e under a path: e found in documents[3] becomes field
 * "documents[3].text", message "documents[3].text must ...", and an object
 * that was not one "documents[3] must be an object".  fmt is printf's. */
void verror_nest(struct verror *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The same for the query string of r: values are percent-decoded strings,
 * converted to the field's type; V_OBJ and V_ARR are not query types.  An
 * empty value ("?page=") is a value: it fails V_INT, V_NUM and V_BOOL.  The
 * strings stored live in r's arena. */
int validate_query(const struct vfield *fields, const struct req *r,
                   void *out, vgiven *given, struct verror *e);

/* Whether row name of fields was given. */
bool validate_given(const struct vfield *fields, vgiven given, const char *name);

/* A short lowercase name of code ("required", "out_of_range", ...), for
 * bodies that carry a machine-readable code. */
const char *verr_code_name(enum verr_code code);

#endif
