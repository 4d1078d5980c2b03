/**
 * The schema of the PostgreSQL store, as numbered steps applied once each and in order
 * (migrate.ts). A step is never edited once released: a change of schema is a new step.
 *
 * Every record is kept whole as `doc` (the same JSON the lowdb store writes), so that a field
 * added to a record needs no migration; the columns that queries filter, sort or sum on are
 * generated from it (always in step with it) and indexed. The one column of its own is
 * `idem_key`: the idempotency key while it is live. A key older than 24 hours is cleared there
 * when a new conversion takes it, so that the unique index holds only keys in force.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'conversions, accounts, keys, settings, deliveries',
    sql: `
CREATE TABLE convd_conversions (
  id text PRIMARY KEY,
  doc jsonb NOT NULL,
  idem_key text,
  account_id text GENERATED ALWAYS AS (doc->>'account_id') STORED NOT NULL,
  status text GENERATED ALWAYS AS (doc->>'status') STORED NOT NULL,
  created_at text GENERATED ALWAYS AS (doc->>'created_at') STORED NOT NULL,
  finished_at text GENERATED ALWAYS AS (doc->>'finished_at') STORED,
  charged_at text GENERATED ALWAYS AS (doc->>'charged_at') STORED,
  expires_at text GENERATED ALWAYS AS (doc->'result'->>'expires_at') STORED,
  credits integer GENERATED ALWAYS AS ((doc->>'credits')::integer) STORED NOT NULL,
  reserved_credits integer GENERATED ALWAYS AS ((doc->>'reserved_credits')::integer) STORED NOT NULL
);
CREATE INDEX convd_conversions_account ON convd_conversions (account_id, id);
CREATE INDEX convd_conversions_account_status ON convd_conversions (account_id, status, id);
CREATE UNIQUE INDEX convd_conversions_idempotency ON convd_conversions (account_id, idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX convd_conversions_active ON convd_conversions (status, id) WHERE status IN ('queued', 'fetching', 'processing');
CREATE INDEX convd_conversions_expiring ON convd_conversions (expires_at) WHERE status = 'succeeded';
CREATE INDEX convd_conversions_charged ON convd_conversions (account_id, charged_at) WHERE charged_at IS NOT NULL;
CREATE INDEX convd_conversions_finished ON convd_conversions (finished_at) WHERE status IN ('failed', 'cancelled', 'expired');

CREATE TABLE convd_accounts (
  id text PRIMARY KEY,
  doc jsonb NOT NULL,
  created_at text GENERATED ALWAYS AS (doc->>'created_at') STORED NOT NULL
);

CREATE TABLE convd_api_keys (
  id text PRIMARY KEY,
  doc jsonb NOT NULL,
  account_id text GENERATED ALWAYS AS (doc->>'account_id') STORED NOT NULL,
  hash text GENERATED ALWAYS AS (doc->>'hash') STORED NOT NULL UNIQUE
);
CREATE INDEX convd_api_keys_account ON convd_api_keys (account_id, id);

CREATE TABLE convd_settings (
  id integer PRIMARY KEY CHECK (id = 1),
  doc jsonb NOT NULL
);

CREATE TABLE convd_deliveries (
  id text PRIMARY KEY,
  doc jsonb NOT NULL,
  conversion_id text GENERATED ALWAYS AS (doc->>'conversion_id') STORED NOT NULL,
  status text GENERATED ALWAYS AS (doc->>'status') STORED NOT NULL,
  created_at text GENERATED ALWAYS AS (doc->>'created_at') STORED NOT NULL
);
CREATE INDEX convd_deliveries_conversion ON convd_deliveries (conversion_id);
CREATE INDEX convd_deliveries_pending ON convd_deliveries (status, created_at) WHERE status = 'pending';
`,
  },
  {
    version: 2,
    name: 'the queue: claims with leases',
    sql: `
ALTER TABLE convd_conversions ADD COLUMN lease_node text, ADD COLUMN lease_until timestamptz;
CREATE INDEX convd_conversions_queued ON convd_conversions (id) WHERE status = 'queued';
CREATE INDEX convd_conversions_leases ON convd_conversions (lease_node) WHERE lease_node IS NOT NULL;
`,
  },
  {
    version: 3,
    name: 'webhook deliveries claimed per attempt',
    sql: `
ALTER TABLE convd_deliveries ADD COLUMN lease_node text, ADD COLUMN lease_until timestamptz;
`,
  },
  {
    version: 4,
    name: 'requests per minute shared by the nodes',
    sql: `
CREATE UNLOGGED TABLE convd_rate_buckets (
  key text PRIMARY KEY,
  tokens double precision NOT NULL,
  updated_ms double precision NOT NULL,
  last_allowed boolean NOT NULL
);
`,
  },
  {
    version: 5,
    name: 'sign-in links and sessions of the web face',
    // expires_at is written beside the doc rather than generated from it: text to timestamptz
    // is not immutable (it reads the session's time zone), so it cannot be a generated column.
    sql: `
CREATE TABLE convd_web_tokens (
  hash text PRIMARY KEY,
  doc jsonb NOT NULL,
  kind text GENERATED ALWAYS AS (doc->>'kind') STORED NOT NULL,
  account_id text GENERATED ALWAYS AS (doc->>'account_id') STORED NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX convd_web_tokens_account ON convd_web_tokens (account_id, kind);
CREATE INDEX convd_web_tokens_expires ON convd_web_tokens (expires_at);
`,
  },
  {
    version: 6,
    name: 'one webhook delivery per conversion and event; ended conversions by end time',
    // Deliveries were made by "look it up, then insert", so two nodes could each make one for the
    // same end (two ids: the receiver got the event twice). Of such twins the one that reached the
    // receiver is kept, else the oldest (then the smaller id), before the unique index is made.
    // The event is an expression of the index rather than a generated column: adding a stored
    // column would rewrite the whole table. Start-up recovery reads the conversions that ended
    // lately (webhooks to offer again) through the index on finished_at, not every ended one.
    sql: `
DELETE FROM convd_deliveries d
  USING (
    SELECT id, row_number() OVER (
      PARTITION BY conversion_id, doc->>'event'
      ORDER BY (status = 'delivered') DESC, created_at, id) AS rank
    FROM convd_deliveries) ranked
  WHERE d.id = ranked.id AND ranked.rank > 1;
CREATE UNIQUE INDEX convd_deliveries_event ON convd_deliveries (conversion_id, (doc->>'event'));
DROP INDEX convd_deliveries_conversion;
CREATE INDEX convd_conversions_ended ON convd_conversions (finished_at) WHERE finished_at IS NOT NULL;
`,
  },
  {
    version: 7,
    name: 'an account\'s latest webhook deliveries',
    // The web pages' account page lists an account's latest deliveries (an expression index, as in step 6).
    sql: `
CREATE INDEX convd_deliveries_account ON convd_deliveries ((doc->>'account_id'), created_at DESC, id DESC);
`,
  },
  {
    version: 8,
    name: 'due webhook deliveries; accounts by name; rate tokens taken in batches',
    // The nodes of a cluster claim the pending deliveries that are due, in one statement, through
    // the first index (not every pending one, read by every node, as before); sign-in looks an
    // account's name up through the second. A node takes a batch of a bucket's tokens at once:
    // the statement returns how many through the new column (a constant default: no rewrite).
    sql: `
CREATE INDEX convd_deliveries_due ON convd_deliveries ((doc->>'next_attempt_at')) WHERE status = 'pending';
CREATE INDEX convd_accounts_name ON convd_accounts ((doc->>'name'));
ALTER TABLE convd_rate_buckets ADD COLUMN last_taken double precision NOT NULL DEFAULT 0;
`,
  },
];
