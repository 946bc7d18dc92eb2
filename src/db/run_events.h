/* run_events.h - what the end of a pipeline run sets off, written in the
 * transaction that ends it (runner/ when a run finishes or is abandoned,
 * platform/ when a queued run is cancelled), so that a process killed right
 * after the COMMIT loses nothing: today one webhook delivery per webhook of
 * the run's pipeline, each a queued item of WEBHOOK_KIND (sent by
 * platform/webhook_deliver.c). */
#ifndef SLUICE_RUN_EVENTS_H
#define SLUICE_RUN_EVENTS_H

struct db;

#define WEBHOOK_KIND "webhook_deliver"
#define WEBHOOK_EVENT "pipeline_run.finished"

/* Inside the transaction that ended run_id (its status final and its
 * finished_at set): one PENDING delivery per webhook of its pipeline, its
 * event body built from the run's row, each queued.  How many, or < 0
 * enum db_err. */
int run_events_record(struct db *db, const char *run_id);

#endif
