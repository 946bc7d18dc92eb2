/* test_identity.c - the canonical identities (auth/identity.c) and the
 * shared table of failed Basic checks (auth/throttle.c). */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"
#include "auth/identity.h"
#include "auth/throttle.h"

static void test_customer_id(void)
{
	static const char *const ok[] = {
		"0022bf24-f817-445e-be5a-0468cb69336b", "42", "acme_eu", "a",
		"abcdefghijklmnopqrstuvwxyz0123456789",                 /* 36 */
	};
	static const char *const bad[] = {
		"", "0022BF24-F817-445E-BE5A-0468CB69336B",              /* upper case */
		"0022bf24-f817-445e-be5a-0468cb69336b ",                 /* trailing space */
		" 42", "d\xc3\xa9mo",                                    /* NFC accent */
		"de\xcc\x81mo",                                          /* NFD accent */
		"a.b", "a/b", "a b", "abcdefghijklmnopqrstuvwxyz0123456789x",   /* 37 */
		"acme\xef\xbc\xa1",                                      /* fullwidth A */
	};

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		CU_ASSERT_TRUE(identity_customer_id_ok(ok[i]));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CU_ASSERT_FALSE(identity_customer_id_ok(bad[i]));
	CU_ASSERT_FALSE(identity_customer_id_ok(NULL));
}

static void test_user_name(void)
{
	char max[IDENTITY_USER_NAME_MAX + 2];

	CU_ASSERT_TRUE(identity_user_name_ok("demo"));
	CU_ASSERT_TRUE(identity_user_name_ok("DEMO"));          /* another user, a valid name */
	CU_ASSERT_TRUE(identity_user_name_ok("d\xc3\xa9m\xc3\xb6"));
	CU_ASSERT_FALSE(identity_user_name_ok("demo "));
	CU_ASSERT_FALSE(identity_user_name_ok(" demo"));
	CU_ASSERT_FALSE(identity_user_name_ok("de:mo"));
	CU_ASSERT_FALSE(identity_user_name_ok("de\tmo"));
	CU_ASSERT_FALSE(identity_user_name_ok(""));
	memset(max, 'u', IDENTITY_USER_NAME_MAX);
	max[IDENTITY_USER_NAME_MAX] = '\0';
	CU_ASSERT_TRUE(identity_user_name_ok(max));
	max[IDENTITY_USER_NAME_MAX] = 'u';
	max[IDENTITY_USER_NAME_MAX + 1] = '\0';
	CU_ASSERT_FALSE(identity_user_name_ok(max));
}

static void test_address_key(void)
{
	char buf[64];

	throttle_address_key("192.0.2.7", buf, sizeof buf);
	CU_ASSERT_STRING_EQUAL(buf, "192.0.2.7");
	throttle_address_key("2001:db8:1:2:3:4:5:6", buf, sizeof buf);
	CU_ASSERT_STRING_EQUAL(buf, "2001:db8:1:2::/64");
	throttle_address_key("2001:db8:1:2:ffff::1", buf, sizeof buf);
	CU_ASSERT_STRING_EQUAL(buf, "2001:db8:1:2::/64");
	throttle_address_key("::ffff:192.0.2.7", buf, sizeof buf);
	CU_ASSERT_STRING_EQUAL(buf, "192.0.2.7");
	throttle_address_key(NULL, buf, sizeof buf);
	CU_ASSERT_STRING_EQUAL(buf, "-");
	throttle_address_key("unix:", buf, sizeof buf);
	CU_ASSERT_STRING_EQUAL(buf, "unix:");
}

/* max attempts go, the next waits about one refill period; giving one
 * back lets one more go; another key is not touched; a child process
 * (a forked worker) counts in the same table. */
static void test_throttle(void)
{
	pid_t pid;
	int st = -1;

	CU_ASSERT_EQUAL(throttle_init(THROTTLE_SLOTS), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(throttle_take(THROTTLE_USER, "t-user", 3, 60), 0);
	CU_ASSERT_TRUE(throttle_take(THROTTLE_USER, "t-user", 3, 60) >= 59);
	CU_ASSERT_TRUE(throttle_take(THROTTLE_USER, "t-user", 3, 60) <= 60);
	CU_ASSERT_EQUAL(throttle_take(THROTTLE_ADDRESS, "t-user", 3, 60), 0);
	CU_ASSERT_EQUAL(throttle_take(THROTTLE_USER, "t-other", 3, 60), 0);
	throttle_give_back(THROTTLE_USER, "t-user", 60);
	CU_ASSERT_EQUAL(throttle_take(THROTTLE_USER, "t-user", 3, 60), 0);
	CU_ASSERT_TRUE(throttle_take(THROTTLE_USER, "t-user", 3, 60) > 0);

	pid = fork();
	if (pid == 0)
		_exit(throttle_take(THROTTLE_ADDRESS, "t-shared", 1, 60) == 0 ? 0 : 1);
	CU_ASSERT_TRUE(pid > 0);
	if (pid > 0)
		waitpid(pid, &st, 0);
	CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CU_ASSERT_TRUE(throttle_take(THROTTLE_ADDRESS, "t-shared", 1, 60) > 0);
}

int suite_identity(void)
{
	static const struct test_case tests[] = {
		{ "canonical customer ids", test_customer_id },
		{ "user names", test_user_name },
		{ "throttle address keys", test_address_key },
		{ "throttle buckets, shared across fork", test_throttle },
		{ NULL, NULL },
	};
	return suite_add("identity", tests);
}
