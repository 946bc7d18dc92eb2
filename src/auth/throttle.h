/* throttle.h - failed Basic checks, counted per user name and per client
 * address in one table that every serve worker shares.
 *
 * The serve master maps the table (throttle_init) before it forks, so all
 * workers, and the workers of every reload, see the same counts.  Each key
 * is a bucket of `max` attempts that refills one attempt every `refill_s`
 * seconds (GCRA: one timestamp per key).  An attempt takes from both the
 * user name's and the address's bucket before any PBKDF2 runs; a correct
 * password gives them back.  Past the budget the caller answers 429 with
 * Retry-After, at the price of a lock, a keyed hash and a few probes.
 *
 * Without throttle_init (unit tests, admin commands) every attempt may go. */
#ifndef SLUICE_THROTTLE_H
#define SLUICE_THROTTLE_H

#include <stddef.h>

enum throttle_kind { THROTTLE_USER, THROTTLE_ADDRESS };

#define THROTTLE_SLOTS 16384        /* keys remembered at once (256 KiB) */

/* Map the shared table of slots entries.  0, or -1 (errno set). */
int throttle_init(size_t slots);

/* Take one attempt from key's bucket: 0 when taken, else the whole seconds
 * (>= 1) until one is free again (nothing taken). */
int throttle_take(enum throttle_kind kind, const char *key, int max, int refill_s);
/* Give back an attempt taken (a check that turned out right). */
void throttle_give_back(enum throttle_kind kind, const char *key, int refill_s);

/* The bucket key of a client address: an IPv4 address as it is, an IPv6
 * address by its /64 (one host usually holds a whole /64), an IPv4-mapped
 * one as IPv4; anything else as given.  Into buf (at least 64 bytes). */
void throttle_address_key(const char *addr, char *buf, size_t cap);

#endif
