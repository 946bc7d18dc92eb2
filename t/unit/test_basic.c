/* test_basic.c - PBKDF2 vectors, stored hash format, Basic header parsing
 * and the per-worker credential cache. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"
#include "auth/basic.h"
#include "util/base64url.h"

#define CHECK_CASE(cond, name) do {                                        \
	char m_[256];                                                       \
	snprintf(m_, sizeof m_, "%s [case %s]", #cond, (name));            \
	CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE, __LINE__, m_,  \
	    __FILE__, "", CU_FALSE);                                        \
} while (0)

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", in[i]);
	out[2 * n] = '\0';
}

/* RFC 7914 section 11, and the widely published SHA-256 set for
 * P = "password", S = "salt". */
static void test_pbkdf2_vectors(void)
{
	static const struct {
		const char *pw, *salt;
		unsigned iter;
		size_t dklen;
		const char *hex;
	} v[] = {
		{ "passwd", "salt", 1, 64,
		  "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
		  "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783" },
		{ "Password", "NaCl", 80000, 64,
		  "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
		  "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d" },
		{ "password", "salt", 1, 32,
		  "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b" },
		{ "password", "salt", 2, 32,
		  "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43" },
		{ "password", "salt", 4096, 32,
		  "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a" },
	};

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		unsigned char out[64];
		char hex[129];

		CHECK_CASE(pbkdf2_sha256(v[i].pw, strlen(v[i].pw),
		    (const unsigned char *)v[i].salt, strlen(v[i].salt), v[i].iter,
		    out, v[i].dklen) == 0, v[i].hex);
		to_hex(out, v[i].dklen, hex);
		CHECK_CASE(strcmp(hex, v[i].hex) == 0, v[i].hex);
	}
}

static void test_pbkdf2_bounds(void)
{
	unsigned char out[32];
	const unsigned char *s = (const unsigned char *)"salt";

	CU_ASSERT_EQUAL(pbkdf2_sha256("pw", 2, s, 4, 0, out, sizeof out), -1);
	CU_ASSERT_EQUAL(pbkdf2_sha256("pw", 2, s, 4, BASIC_MAX_ITERATIONS + 1,
	    out, sizeof out), -1);
	CU_ASSERT_EQUAL(pbkdf2_sha256("pw", 2, s, 4, 1, out, 0), -1);
	CU_ASSERT_EQUAL(pbkdf2_sha256("pw", 2, s, 4, 1, NULL, 32), -1);
	CU_ASSERT_EQUAL(pbkdf2_sha256(NULL, 2, s, 4, 1, out, sizeof out), -1);
	CU_ASSERT_EQUAL(pbkdf2_sha256("", 0, s, 4, 1, out, sizeof out), 0);
}

static void test_hash_roundtrip(void)
{
	char *a = basic_password_hash("correct horse", BASIC_MIN_ITERATIONS);
	char *b = basic_password_hash("correct horse", BASIC_MIN_ITERATIONS);
	char *e = basic_password_hash("", BASIC_MIN_ITERATIONS);
	const char *p;

	CU_ASSERT_FATAL(a != NULL && b != NULL && e != NULL);
	/* pbkdf2-sha256$1000$<24 chars: 16 bytes>$<44 chars: 32 bytes> */
	CU_ASSERT(strncmp(a, "pbkdf2-sha256$1000$", 19) == 0);
	p = a + 19;
	CU_ASSERT(strlen(p) == 24 + 1 + 44);
	CU_ASSERT(p[24] == '$');
	CU_ASSERT(strchr(a, '\n') == NULL);
	/* a fresh salt each time */
	CU_ASSERT(strcmp(a, b) != 0);

	CU_ASSERT_EQUAL(basic_password_verify("correct horse", a), 1);
	CU_ASSERT_EQUAL(basic_password_verify("correct horse", b), 1);
	CU_ASSERT_EQUAL(basic_password_verify("correct horsf", a), 0);
	CU_ASSERT_EQUAL(basic_password_verify("correct hors", a), 0);
	CU_ASSERT_EQUAL(basic_password_verify("correct horse ", a), 0);
	CU_ASSERT_EQUAL(basic_password_verify("", a), 0);
	CU_ASSERT_EQUAL(basic_password_verify("", e), 1);
	CU_ASSERT_EQUAL(basic_password_verify("x", e), 0);
	CU_ASSERT_EQUAL(basic_password_verify(NULL, a), -1);

	free(a);
	free(b);
	free(e);

	CU_ASSERT(basic_password_hash("pw", BASIC_MIN_ITERATIONS - 1) == NULL);
	CU_ASSERT(basic_password_hash("pw", BASIC_MAX_ITERATIONS + 1) == NULL);
	CU_ASSERT(basic_password_hash(NULL, BASIC_MIN_ITERATIONS) == NULL);
}

/* Stored strings built around a known salt and key; each case breaks one
 * field.  "S" and "H" in a case stand for the good salt and hash. */
static void test_verify_malformed(void)
{
	static const char *const shapes[] = {
		"",
		"pbkdf2-sha256",
		"pbkdf2-sha256$",
		"pbkdf2-sha256$1000",
		"pbkdf2-sha256$1000$S",
		"pbkdf2-sha256$1000$S$",
		"pbkdf2-sha512$1000$S$H",
		"PBKDF2-SHA256$1000$S$H",
		" pbkdf2-sha256$1000$S$H",
		"pbkdf2-sha256$$S$H",
		"pbkdf2-sha256$999$S$H",
		"pbkdf2-sha256$10000001$S$H",
		"pbkdf2-sha256$100000000$S$H",
		"pbkdf2-sha256$4294968296$S$H",
		"pbkdf2-sha256$01000$S$H",
		"pbkdf2-sha256$+1000$S$H",
		"pbkdf2-sha256$-1000$S$H",
		"pbkdf2-sha256$ 1000$S$H",
		"pbkdf2-sha256$1000 $S$H",
		"pbkdf2-sha256$1e3$S$H",
		"pbkdf2-sha256$0x3e8$S$H",
		"pbkdf2-sha256$1000$$H",
		"pbkdf2-sha256$1000$c2FsdA==$H",                 /* 4-byte salt */
		"pbkdf2-sha256$1000$c2FsdHNhbA==$H",             /* 7-byte salt */
		"pbkdf2-sha256$1000$c2FsdHNhbHRzYWx0c2FsdA$H",   /* no padding */
		"pbkdf2-sha256$1000$c2FsdHNh!HRzYWx0c2FsdA==$H",
		"pbkdf2-sha256$1000$c2FsdHNh-HRzYWx0c2FsdA==$H", /* url alphabet */
		"pbkdf2-sha256$1000$S$",
		"pbkdf2-sha256$1000$S$H$",
		"pbkdf2-sha256$1000$S$H\n",
		"pbkdf2-sha256$1000$S$H ",
		"pbkdf2-sha256$1000$S$$H",
		"pbkdf2-sha256$1000$S$AAAA",
		/* 31 and 33 bytes of hash */
		"pbkdf2-sha256$1000$S$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
		"pbkdf2-sha256$1000$S$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"pbkdf2-sha256$1000$S$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
		/* 44 characters that are not base64 */
		"pbkdf2-sha256$1000$S$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!=",
		"pbkdf2-sha256$1000$S$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
		NULL,
	};
	static const unsigned char salt[16] = "saltsaltsaltsalt";
	unsigned char key[32];
	char *s64, *h64, good[256];

	CU_ASSERT_FATAL(pbkdf2_sha256("pw", 2, salt, sizeof salt, 1000, key,
	    sizeof key) == 0);
	s64 = b64_encode(salt, sizeof salt);
	h64 = b64_encode(key, sizeof key);
	CU_ASSERT_FATAL(s64 != NULL && h64 != NULL);
	snprintf(good, sizeof good, "pbkdf2-sha256$1000$%s$%s", s64, h64);
	CU_ASSERT_EQUAL(basic_password_verify("pw", good), 1);
	CU_ASSERT_EQUAL(basic_password_verify("pW", good), 0);

	for (const char *const *sh = shapes; *sh != NULL; sh++) {
		char stored[512] = "";

		for (const char *c = *sh; *c != '\0'; c++) {
			if (*c == 'S' && c[-1] == '$')
				strcat(stored, s64);
			else if (*c == 'H' && c[-1] == '$')
				strcat(stored, h64);
			else
				strncat(stored, c, 1);
		}
		CHECK_CASE(basic_password_verify("pw", stored) == -1, *sh);
	}
	free(s64);
	free(h64);
}

/* Salts of 8 and 64 bytes are the accepted extremes; 65 is not. */
static void test_verify_salt_bounds(void)
{
	static const struct {
		size_t len;
		int want;
	} cases[] = { { 7, -1 }, { 8, 1 }, { 64, 1 }, { 65, -1 } };
	unsigned char salt[65], key[32];

	memset(salt, 0x5a, sizeof salt);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char stored[256], *s64, *h64, name[16];

		CU_ASSERT_FATAL(pbkdf2_sha256("pw", 2, salt, cases[i].len, 1000,
		    key, sizeof key) == 0);
		s64 = b64_encode(salt, cases[i].len);
		h64 = b64_encode(key, sizeof key);
		snprintf(stored, sizeof stored, "pbkdf2-sha256$1000$%s$%s", s64, h64);
		snprintf(name, sizeof name, "salt %zu", cases[i].len);
		CHECK_CASE(basic_password_verify("pw", stored) == cases[i].want, name);
		free(s64);
		free(h64);
	}
}

/* Headers are scheme + base64(cred[0..credlen)) + tail; cred == NULL
 * means the header is scheme alone, verbatim. */
struct hcase {
	const char *scheme;
	const char *cred;
	size_t credlen;                /* 0: strlen */
	const char *tail;
	const char *user, *password;   /* expected, when valid */
};

static char *build_header(const struct hcase *h)
{
	char *b64 = NULL, *out;
	size_t cap;

	if (h->cred != NULL) {
		b64 = b64_encode(h->cred, h->credlen != 0 ? h->credlen :
		    strlen(h->cred));
		CU_ASSERT_FATAL(b64 != NULL);
	}
	cap = strlen(h->scheme) + (b64 != NULL ? strlen(b64) : 0) +
	    strlen(h->tail) + 1;
	out = malloc(cap);
	CU_ASSERT_FATAL(out != NULL);
	snprintf(out, cap, "%s%s%s", h->scheme, b64 != NULL ? b64 : "", h->tail);
	free(b64);
	return out;
}

static void test_header_valid(void)
{
	static const struct hcase valid[] = {
		{ "Basic ", "alice:secret", 0, "", "alice", "secret" },
		{ "basic ", "alice:secret", 0, "", "alice", "secret" },
		{ "BASIC ", "alice:secret", 0, "", "alice", "secret" },
		{ "bAsIc ", "alice:secret", 0, "", "alice", "secret" },
		{ "Basic    ", "alice:secret", 0, "", "alice", "secret" },
		{ "Basic ", "alice:secret", 0, "  ", "alice", "secret" },
		{ "Basic ", "alice:a:b:c", 0, "", "alice", "a:b:c" },
		{ "Basic ", "alice::", 0, "", "alice", ":" },
		{ "Basic ", "alice:", 0, "", "alice", "" },
		{ "Basic ", "a:b", 0, "", "a", "b" },
		{ "Basic ", "\xc3\xa9mile:p\xc3\xa4ss word", 0, "",
		  "\xc3\xa9mile", "p\xc3\xa4ss word" },
		{ "Basic ", "bob:tab\there", 0, "", "bob", "tab\there" },
		{ NULL, NULL, 0, NULL, NULL, NULL },
	};

	for (const struct hcase *h = valid; h->scheme != NULL; h++) {
		char user[BASIC_MAX_USER + 1], pw[BASIC_MAX_PASSWORD + 1];
		char *hdr = build_header(h);

		CHECK_CASE(basic_header_parse(hdr, user, sizeof user, pw,
		    sizeof pw) == 0, hdr);
		CHECK_CASE(strcmp(user, h->user) == 0, hdr);
		CHECK_CASE(strcmp(pw, h->password) == 0, hdr);
		free(hdr);
	}
}

static void test_header_invalid(void)
{
	static const struct hcase invalid[] = {
		{ "", NULL, 0, "", NULL, NULL },
		{ "Basic", NULL, 0, "", NULL, NULL },
		{ "Basic ", NULL, 0, "", NULL, NULL },
		{ "Basic    ", NULL, 0, "", NULL, NULL },
		{ "", "alice:secret", 0, "", NULL, NULL },        /* no scheme */
		{ "Basic", "alice:secret", 0, "", NULL, NULL },   /* no space */
		{ "Basic\t", "alice:secret", 0, "", NULL, NULL },
		{ " Basic ", "alice:secret", 0, "", NULL, NULL },
		{ "Bearer ", "alice:secret", 0, "", NULL, NULL },
		{ "Bearer xyz", NULL, 0, "", NULL, NULL },
		{ "Basically ", "alice:secret", 0, "", NULL, NULL },
		{ "Digest ", "alice:secret", 0, "", NULL, NULL },
		{ "Basic ", "alicesecret", 0, "", NULL, NULL },   /* no colon */
		{ "Basic ", ":secret", 0, "", NULL, NULL },       /* empty user */
		{ "Basic ", ":", 0, "", NULL, NULL },
		{ "Basic ", "al\0ice:secret", 13, "", NULL, NULL },
		{ "Basic ", "alice:sec\0ret", 13, "", NULL, NULL },
		{ "Basic ", "al\nice:secret", 0, "", NULL, NULL },
		{ "Basic ", "al\x7f" "ice:secret", 0, "", NULL, NULL },
		{ "Basic ", "alice:secret", 0, " junk", NULL, NULL },
		{ "Basic ", "alice:secret", 0, "=", NULL, NULL },
		{ "Basic ", "alice:secret", 0, "\n", NULL, NULL },
		{ "Basic !!!!", NULL, 0, "", NULL, NULL },
		{ "Basic YWxpY2U6cw", NULL, 0, "", NULL, NULL },  /* unpadded */
		{ "Basic YWxp Y2U6c2VjcmV0", NULL, 0, "", NULL, NULL },
		{ "Basic YWxpY2U6c2VjcmV0-_==", NULL, 0, "", NULL, NULL },
		{ NULL, NULL, 0, NULL, NULL, NULL },
	};

	for (const struct hcase *h = invalid; h->scheme != NULL; h++) {
		char user[BASIC_MAX_USER + 1], pw[BASIC_MAX_PASSWORD + 1];
		char *hdr = build_header(h);

		memset(user, 'u', sizeof user);
		memset(pw, 'p', sizeof pw);
		CHECK_CASE(basic_header_parse(hdr, user, sizeof user, pw,
		    sizeof pw) == -1, hdr);
		CHECK_CASE(user[0] == '\0' && pw[0] == '\0', hdr);
		free(hdr);
	}
	{
		char user[16], pw[16];

		CU_ASSERT_EQUAL(basic_header_parse(NULL, user, sizeof user, pw,
		    sizeof pw), -1);
	}
}

/* User BASIC_MAX_USER and password BASIC_MAX_PASSWORD fit; one more of
 * either does not, and neither does a user too big for the caller. */
static void test_header_limits(void)
{
#define UCAP (BASIC_MAX_USER + 1)
#define PCAP (BASIC_MAX_PASSWORD + 1)
	static const struct {
		size_t ulen, plen, usercap, pwcap;
		int want;
	} cases[] = {
		{ BASIC_MAX_USER,     BASIC_MAX_PASSWORD,     UCAP, PCAP, 0 },
		{ BASIC_MAX_USER + 1, BASIC_MAX_PASSWORD,     UCAP + 1, PCAP, -1 },
		{ BASIC_MAX_USER,     BASIC_MAX_PASSWORD + 1, UCAP, PCAP + 1, -1 },
		/* the caps of the header, even when the caller has more room */
		{ BASIC_MAX_USER + 1, 0,                      UCAP * 2, PCAP, -1 },
		{ 1, BASIC_MAX_PASSWORD + 1,                  UCAP, PCAP * 2, -1 },
		{ 1, BASIC_MAX_PASSWORD + 2,                  UCAP, PCAP, -1 },
		/* and the caller's room, when it has less */
		{ 16, 8,                                      16, PCAP, -1 },
		{ 15, 8,                                      16, PCAP, 0 },
		{ 4, 16,                                      UCAP, 16, -1 },
		{ 4, 15,                                      UCAP, 16, 0 },
		{ 1, BASIC_MAX_PASSWORD * 4,                  UCAP, PCAP, -1 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = cases[i].ulen + 1 + cases[i].plen;
		char *cred = malloc(n + 1), *user = malloc(cases[i].usercap);
		char *pw = malloc(cases[i].pwcap), *hdr, name[64];
		struct hcase h = { "Basic ", NULL, 0, "", NULL, NULL };
		int rc;

		CU_ASSERT_FATAL(cred != NULL && user != NULL && pw != NULL);
		memset(cred, 'u', cases[i].ulen);
		cred[cases[i].ulen] = ':';
		memset(cred + cases[i].ulen + 1, 'p', cases[i].plen);
		cred[n] = '\0';
		h.cred = cred;
		hdr = build_header(&h);
		snprintf(name, sizeof name, "user %zu pw %zu caps %zu %zu",
		    cases[i].ulen, cases[i].plen, cases[i].usercap,
		    cases[i].pwcap);
		rc = basic_header_parse(hdr, user, cases[i].usercap, pw,
		    cases[i].pwcap);
		CHECK_CASE(rc == cases[i].want, name);
		if (rc == 0) {
			CHECK_CASE(strlen(user) == cases[i].ulen, name);
			CHECK_CASE(strlen(pw) == cases[i].plen, name);
		}
		free(hdr);
		free(cred);
		free(user);
		free(pw);
	}
#undef UCAP
#undef PCAP
}

/* A shared cache: what a forked process (a worker) puts, another reads. */
static void test_cache_shared(void)
{
	struct basic_cache *c = basic_cache_new_shared(64);
	long long id = -1;
	pid_t pid;
	int st = -1;

	CU_ASSERT_FATAL(c != NULL);
	pid = fork();
	if (pid == 0) {
		basic_cache_put(c, "erin", "pw", 21, 1000, 60);
		_exit(0);
	}
	CU_ASSERT_FATAL(pid > 0);
	waitpid(pid, &st, 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "erin", "pw", 1000, &id), 1);
	CU_ASSERT_EQUAL(id, 21);
	CU_ASSERT_EQUAL(basic_cache_get(c, "erin", "pW", 1000, &id), 0);
	basic_cache_free(c);
}

static void test_cache(void)
{
	struct basic_cache *c = basic_cache_new(64);
	long long id = -1;

	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1000, &id), 0);

	basic_cache_put(c, "alice", "pw", 7, 1000, 60);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1000, &id), 1);
	CU_ASSERT_EQUAL(id, 7);
	id = -1;
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1044, &id), 1);
	CU_ASSERT_EQUAL(id, 7);
	/* other password, other user, and the boundary of user and password */
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pW", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw ", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "bob", "pw", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alicep", "w", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alic", "epw", 1000, &id), 0);
	/* its last quarter: one caller is handed the renewal, and the next
	 * one only BASIC_RENEW_RETRY_S later; all of them are let in */
	id = -1;
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1045, &id), 2);
	CU_ASSERT_EQUAL(id, 7);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1045, &id), 1);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1046, &id), 1);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1045 + BASIC_RENEW_RETRY_S, &id), 2);
	/* ... while nobody renews it */
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1058, &id), 2);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1059, &id), 1);
	/* expiry is exclusive, and an expired entry is dropped */
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1060, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1059, &id), 0);

	/* ttl 0 or below caches nothing */
	basic_cache_put(c, "carol", "pw", 9, 1000, 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "carol", "pw", 999, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "carol", "pw", 1000, &id), 0);
	basic_cache_put(c, "carol", "pw", 9, 1000, -5);
	CU_ASSERT_EQUAL(basic_cache_get(c, "carol", "pw", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "carol", "pw", 990, &id), 0);

	/* put refreshes */
	basic_cache_put(c, "dave", "pw", 11, 1000, 10);
	basic_cache_put(c, "dave", "pw", 12, 1005, 10);
	CU_ASSERT_EQUAL(basic_cache_get(c, "dave", "pw", 1012, &id), 1);
	CU_ASSERT_EQUAL(id, 12);

	/* a renewal (a put) starts a new life, renewed from its last quarter */
	basic_cache_put(c, "frank", "pw", 14, 1000, 60);
	CU_ASSERT_EQUAL(basic_cache_get(c, "frank", "pw", 1050, &id), 2);
	basic_cache_put(c, "frank", "pw", 14, 1050, 60);
	CU_ASSERT_EQUAL(basic_cache_get(c, "frank", "pw", 1094, &id), 1);
	CU_ASSERT_EQUAL(basic_cache_get(c, "frank", "pw", 1095, &id), 2);
	CU_ASSERT_EQUAL(basic_cache_get(c, "frank", "pw", 1096, &id), 1);
	CU_ASSERT_EQUAL(basic_cache_get(c, "frank", "pw", 1109, &id), 2);
	CU_ASSERT_EQUAL(basic_cache_get(c, "frank", "pw", 1110, &id), 0);
	/* a short ttl is renewed in its last second */
	basic_cache_put(c, "grace", "pw", 15, 1000, 3);
	CU_ASSERT_EQUAL(basic_cache_get(c, "grace", "pw", 1001, &id), 1);
	CU_ASSERT_EQUAL(basic_cache_get(c, "grace", "pw", 1002, &id), 2);
	CU_ASSERT_EQUAL(basic_cache_get(c, "grace", "pw", 1003, &id), 0);
	/* a drop forgets the pair, and only the pair */
	basic_cache_put(c, "heidi", "pw", 16, 1000, 60);
	basic_cache_drop(c, "heidi", "pW");
	CU_ASSERT_EQUAL(basic_cache_get(c, "heidi", "pw", 1000, &id), 1);
	basic_cache_drop(c, "heidi", "pw");
	CU_ASSERT_EQUAL(basic_cache_get(c, "heidi", "pw", 1000, &id), 0);
	basic_cache_drop(c, "nobody", "pw");

	/* oversize credentials are simply not cached */
	{
		char big[BASIC_MAX_PASSWORD + 2];

		memset(big, 'x', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		basic_cache_put(c, "erin", big, 13, 1000, 60);
		CU_ASSERT_EQUAL(basic_cache_get(c, "erin", big, 1000, &id), 0);
	}
	basic_cache_free(c);
	basic_cache_free(NULL);
}

/* One slot: the newest entry wins, the older one misses. */
static void test_cache_overwrite(void)
{
	struct basic_cache *c = basic_cache_new(1);
	long long id = 0;

	CU_ASSERT_FATAL(c != NULL);
	basic_cache_put(c, "alice", "pw", 1, 1000, 60);
	basic_cache_put(c, "bob", "pw", 2, 1000, 60);
	CU_ASSERT_EQUAL(basic_cache_get(c, "alice", "pw", 1000, &id), 0);
	CU_ASSERT_EQUAL(basic_cache_get(c, "bob", "pw", 1000, &id), 1);
	CU_ASSERT_EQUAL(id, 2);
	basic_cache_free(c);

	CU_ASSERT(basic_cache_new(0) == NULL);
	CU_ASSERT_EQUAL(basic_cache_get(NULL, "a", "b", 0, &id), 0);
	basic_cache_put(NULL, "a", "b", 1, 0, 60);
	basic_cache_drop(NULL, "a", "b");
}

int suite_basic(void)
{
	static const struct test_case tests[] = {
		{ "PBKDF2-HMAC-SHA256 vectors", test_pbkdf2_vectors },
		{ "PBKDF2 argument bounds", test_pbkdf2_bounds },
		{ "hash/verify roundtrip", test_hash_roundtrip },
		{ "malformed stored hashes", test_verify_malformed },
		{ "stored salt length bounds", test_verify_salt_bounds },
		{ "header parse valid", test_header_valid },
		{ "header parse invalid", test_header_invalid },
		{ "header length limits", test_header_limits },
		{ "cache hit, miss, ttl", test_cache },
		{ "shared cache across fork", test_cache_shared },
		{ "cache slot overwrite", test_cache_overwrite },
		{ NULL, NULL },
	};

	return suite_add("basic", tests);
}
