/* kinds.c - the one table of work kinds `sluice work` knows.
 *
 * Each kind names its entry point (and the give-up of its area, which
 * settles the area's rows when the item's attempts ran out in crashes or
 * hangs), the config keys of its slots (children at once) and its
 * deadline, and the waiter's kind of a request that may wait on its items
 * (woken when an item's outcome is recorded), and whether its children
 * linger for more items of theirs (nudged when one is queued).  A new kind
 * is a row here, an entry point in its area and two keys in util/config.c. */
#include <stddef.h>

#include "platform/webhooks.h"
#include "retrieval/retrieval.h"
#include "runner/runner.h"
#include "storage/storage.h"
#include "storage/tables.h"
#include "util/config.h"
#include "work/work.h"

#define LIMITS(slots, deadline) \
	offsetof(struct config, slots), offsetof(struct config, deadline)

const struct work_kind work_kinds[] = {
	{ "rag_question", rag_question_work, rag_question_give_up,
	  LIMITS(work_rag_question_slots, work_rag_question_deadline_s), NULL, true },
	{ "rag_ingest", rag_ingest_work, rag_ingest_give_up,
	  LIMITS(work_rag_ingest_slots, work_rag_ingest_deadline_s), NULL, false },
	{ "storage_infer", storage_infer_work, storage_infer_give_up,
	  LIMITS(work_storage_infer_slots, work_storage_infer_deadline_s), "refresh", false },
	{ "storage_link_load", storage_link_load_work, storage_link_load_give_up,
	  LIMITS(work_storage_link_load_slots, work_storage_link_load_deadline_s), NULL, false },
	{ "runner_sweep", runner_sweep_work, NULL,
	  LIMITS(work_runner_sweep_slots, work_runner_sweep_deadline_s), NULL, false },
	{ WEBHOOK_KIND, webhook_deliver_work, webhook_deliver_give_up,
	  LIMITS(work_webhook_deliver_slots, work_webhook_deliver_deadline_s), NULL, false },
#ifdef SLUICE_TEST_HOOKS
	{ "test_sleep", work_test_sleep, NULL,
	  LIMITS(work_test_slots, work_test_deadline_s), NULL, false },
	{ "test_crash", work_test_crash, NULL,
	  LIMITS(work_test_slots, work_test_deadline_s), NULL, false },
	{ "test_hang", work_test_hang, NULL,
	  LIMITS(work_test_slots, work_test_deadline_s), NULL, false },
#endif
};

const size_t work_nkinds = sizeof work_kinds / sizeof work_kinds[0];

int work_kind_slots(const struct config *cfg, const struct work_kind *k)
{
	return *(const int *)(const void *)((const char *)cfg + k->slots_off);
}

int work_kind_deadline_s(const struct config *cfg, const struct work_kind *k)
{
	return *(const int *)(const void *)((const char *)cfg + k->deadline_off);
}
