/* throttle.c - the shared table of failed Basic checks (see throttle.h).
 *
 * An anonymous MAP_SHARED mapping made by the serve master before fork:
 * a robust process-shared mutex (a worker killed while holding it does not
 * wedge the others), a random key, and open-addressed slots of
 * {64-bit keyed hash of the key, GCRA "theoretical arrival time"}.  A slot
 * whose time has passed holds nothing any more and is taken over by the
 * next key that needs room; when a probe window is full of live keys, the
 * one closest to running out is replaced. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "auth/throttle.h"
#include "util/shm.h"

#define PROBES 8
#define KEY_MAX 512                       /* bytes of a key that count */

struct entry {
	uint64_t key;                         /* 0 = never used */
	int64_t tat_ms;                       /* free again at this monotonic time */
};

struct table {
	pthread_mutex_t lock;
	unsigned char secret[32];
	size_t nslots;
	struct entry slot[];
};

static struct table *tab;

int throttle_init(size_t slots)
{
	size_t size = sizeof *tab + slots * sizeof tab->slot[0];
	struct table *t;

	if (tab != NULL)
		return 0;
	if (slots == 0) {
		errno = EINVAL;
		return -1;
	}
	if ((t = shm_map(size)) == NULL)
		return -1;
	t->nslots = slots;
	if (RAND_bytes(t->secret, sizeof t->secret) != 1 || shm_mutex_init(&t->lock) != 0) {
		munmap(t, size);
		errno = EIO;
		return -1;
	}
	tab = t;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* HMAC-SHA256(secret, kind || key), 64 bits of it, never 0: neither the
 * slot nor a collision can be steered from outside. */
static uint64_t key_hash(enum throttle_kind kind, const char *key)
{
	unsigned char buf[1 + KEY_MAX], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t n = strnlen(key, KEY_MAX);
	uint64_t h = 0;

	buf[0] = (unsigned char)kind;
	memcpy(buf + 1, key, n);
	if (HMAC(EVP_sha256(), tab->secret, (int)sizeof tab->secret, buf, 1 + n,
	         md, &mdlen) == NULL || mdlen < 8)
		return 1;
	for (int i = 0; i < 8; i++)
		h = h << 8 | md[i];
	return h != 0 ? h : 1;
}

/* How much a slot still holds: nothing (free or spent) ranks first, then
 * the one that runs out soonest. */
static int64_t live_until(const struct entry *e, int64_t now)
{
	return e->key == 0 || e->tat_ms <= now ? INT64_MIN : e->tat_ms;
}

/* h's slot; with make, a new one (the emptiest of the probe window) when
 * it has none.  NULL when absent and !make. */
static struct entry *slot_of(uint64_t h, int64_t now, int make)
{
	size_t start = (size_t)(h % tab->nslots);
	struct entry *room = NULL;

	for (size_t i = 0; i < PROBES && i < tab->nslots; i++) {
		struct entry *e = &tab->slot[(start + i) % tab->nslots];

		if (e->key == h)
			return e;
		if (room == NULL || live_until(e, now) < live_until(room, now))
			room = e;
	}
	if (!make)
		return NULL;
	room->key = h;
	room->tat_ms = now;
	return room;
}

int throttle_take(enum throttle_kind kind, const char *key, int max, int refill_s)
{
	int64_t now, period = (int64_t)refill_s * 1000, tat, wait;
	struct entry *e;
	uint64_t h;

	if (tab == NULL || key == NULL || max < 1 || refill_s < 1)
		return 0;
	h = key_hash(kind, key);
	now = now_ms();
	shm_mutex_lock(&tab->lock);
	e = slot_of(h, now, 1);
	tat = e->tat_ms > now ? e->tat_ms : now;
	/* Taking makes the bucket tat + period; it may hold max periods. */
	wait = tat + period - now - (int64_t)max * period;
	if (wait <= 0)
		e->tat_ms = tat + period;
	shm_mutex_unlock(&tab->lock);
	return wait <= 0 ? 0 : (int)((wait + 999) / 1000);
}

void throttle_give_back(enum throttle_kind kind, const char *key, int refill_s)
{
	struct entry *e;
	int64_t now;
	uint64_t h;

	if (tab == NULL || key == NULL || refill_s < 1)
		return;
	h = key_hash(kind, key);
	now = now_ms();
	shm_mutex_lock(&tab->lock);
	if ((e = slot_of(h, now, 0)) != NULL && e->tat_ms > now)
		e->tat_ms -= (int64_t)refill_s * 1000;
	shm_mutex_unlock(&tab->lock);
}

void throttle_address_key(const char *addr, char *buf, size_t cap)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (addr == NULL || addr[0] == '\0') {
		snprintf(buf, cap, "-");
		return;
	}
	if (inet_pton(AF_INET6, addr, &a6) == 1) {
		if (IN6_IS_ADDR_V4MAPPED(&a6)) {
			memcpy(&a4, &a6.s6_addr[12], 4);
			if (inet_ntop(AF_INET, &a4, buf, (socklen_t)cap) != NULL)
				return;
		}
		memset(&a6.s6_addr[8], 0, 8);
		if (inet_ntop(AF_INET6, &a6, buf, (socklen_t)cap) != NULL &&
		    strlen(buf) + 3 < cap) {
			strcat(buf, "/64");
			return;
		}
	}
	snprintf(buf, cap, "%s", addr);
}
