-- 013_webhooks.sql - HTTPS endpoints told when a pipeline's run ends, and
-- the log of every event sent to them.
--
-- webhooks: at most 10 per pipeline (checked by the API); secret_enc is
-- the whole "whsec_<base64>" text sealed as connection passwords are
-- (AES-256-GCM under connection_key_file, the webhook id as associated
-- data), opened only by `sluice work` to sign events and never answered
-- after the create: a copy of the database alone cannot sign an event.  Deleting the pipeline deletes its
-- webhooks; deleting a webhook deletes its deliveries.
CREATE TABLE webhooks (
	id           CHAR(32)      NOT NULL,
	pipeline_id  VARCHAR(64)   NOT NULL,
	customer_id  CHAR(36)      NOT NULL,
	url          VARCHAR(2048) NOT NULL,
	description  VARCHAR(255)  NULL,
	secret_enc   VARBINARY(128) NOT NULL,
	created_at   DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	PRIMARY KEY (id),
	KEY webhooks_pipeline_idx (pipeline_id, created_at, id),
	CONSTRAINT fk_webhooks_pipeline FOREIGN KEY (pipeline_id)
		REFERENCES pipelines (id) ON DELETE CASCADE,
	CONSTRAINT webhooks_id_chk CHECK (id COLLATE utf8mb4_bin REGEXP '^[0-9a-f]{32}$')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- webhook_deliveries: one per webhook per finished run, written in the
-- transaction that ends the run.  id is the webhook-id header
-- ("msg_" + 32 hex), the same on every attempt.  body is the event as sent,
-- fixed when the run ended, so every attempt signs the same bytes.
-- next_attempt_at is set only while PENDING.
CREATE TABLE webhook_deliveries (
	id               CHAR(36)     NOT NULL,
	webhook_id       CHAR(32)     NOT NULL,
	customer_id      CHAR(36)     NOT NULL,
	run_id           CHAR(32)     NOT NULL,
	event_type       VARCHAR(64)  NOT NULL DEFAULT 'pipeline_run.finished',
	body             TEXT         NOT NULL,
	status           VARCHAR(16)  NOT NULL DEFAULT 'PENDING',
	attempts         INT          NOT NULL DEFAULT 0,
	response_status  INT          NULL,
	error            VARCHAR(512) NULL,
	created_at       DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	last_attempt_at  DATETIME(3)  NULL,
	next_attempt_at  DATETIME(3)  NULL DEFAULT CURRENT_TIMESTAMP(3),
	delivered_at     DATETIME(3)  NULL,
	PRIMARY KEY (id),
	KEY webhook_deliveries_webhook_idx (webhook_id, created_at, id),
	CONSTRAINT fk_webhook_deliveries_webhook FOREIGN KEY (webhook_id)
		REFERENCES webhooks (id) ON DELETE CASCADE,
	CONSTRAINT webhook_deliveries_status_chk CHECK (status IN
		('PENDING', 'SUCCEEDED', 'FAILED')),
	CONSTRAINT webhook_deliveries_attempts_chk CHECK (attempts >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
