/* test_webhooks.c - webhook signatures (the Standard Webhooks test vector,
 * checked independently with `openssl dgst -sha256 -mac HMAC`), the retry
 * back-off, and which addresses count as loopback, private or link-local. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "suites.h"
#include "platform/webhooks.h"

static void test_sign_vector(void)
{
	const char *body = "{\"test\": 2432232314}";
	char sig[100];

	CU_ASSERT_EQUAL_FATAL(webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330LL, body, strlen(body),
	    sig, sizeof sig), 0);
	CU_ASSERT_STRING_EQUAL(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
	/* Another timestamp signs otherwise. */
	CU_ASSERT_EQUAL(webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	    "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331LL, body, strlen(body),
	    sig, sizeof sig), 0);
	CU_ASSERT_STRING_NOT_EQUAL(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

static void test_sign_bad_secret(void)
{
	char sig[100];

	CU_ASSERT_EQUAL(webhook_sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_x", 1,
	                             "{}", 2, sig, sizeof sig), -1);   /* no prefix */
	CU_ASSERT_EQUAL(webhook_sign("whsec_", "msg_x", 1, "{}", 2, sig, sizeof sig), -1);
	CU_ASSERT_EQUAL(webhook_sign("whsec_!!!!", "msg_x", 1, "{}", 2, sig,
	                             sizeof sig), -1);
	CU_ASSERT_EQUAL(webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_x",
	                             1, "{}", 2, sig, 10), -1);          /* too small */
}

static void test_retry_delay(void)
{
	CU_ASSERT_EQUAL(webhook_retry_delay(30, 1), 30);
	CU_ASSERT_EQUAL(webhook_retry_delay(30, 2), 60);
	CU_ASSERT_EQUAL(webhook_retry_delay(30, 3), 120);
	CU_ASSERT_EQUAL(webhook_retry_delay(30, 7), 1920);
	CU_ASSERT_EQUAL(webhook_retry_delay(30, 8), WEBHOOK_RETRY_MAX_S);
	CU_ASSERT_EQUAL(webhook_retry_delay(30, 50), WEBHOOK_RETRY_MAX_S);
	CU_ASSERT_EQUAL(webhook_retry_delay(86400, 1), WEBHOOK_RETRY_MAX_S);
	CU_ASSERT_EQUAL(webhook_retry_delay(1, 3), 4);
}

static int is_public(const char *text)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };

	if (inet_pton(AF_INET, text, &a4.sin_addr) == 1)
		return webhook_addr_public((struct sockaddr *)&a4);
	if (inet_pton(AF_INET6, text, &a6.sin6_addr) == 1)
		return webhook_addr_public((struct sockaddr *)&a6);
	return -1;
}

static void test_addresses(void)
{
	static const char *const refused[] = {
		"127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255",
		"172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1",
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254",
	};
	static const char *const allowed[] = {
		"93.184.216.34", "8.8.8.8", "172.15.255.255", "172.32.0.1",
		"100.63.255.255", "100.128.0.1", "11.0.0.1", "169.253.0.1",
		"2606:4700::1111", "::ffff:8.8.8.8",
	};

	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		CU_ASSERT_EQUAL(is_public(refused[i]), 0);
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		CU_ASSERT_EQUAL(is_public(allowed[i]), 1);
}

int suite_webhooks(void)
{
	static const struct test_case tests[] = {
		{ "Standard Webhooks signature vector", test_sign_vector },
		{ "unusable secrets", test_sign_bad_secret },
		{ "retry back-off", test_retry_delay },
		{ "loopback, private and link-local addresses", test_addresses },
		{ NULL, NULL },
	};

	return suite_add("webhooks", tests);
}
