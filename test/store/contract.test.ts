/**
 * One contract, two stores: every case runs against the LowdbStore (files in a temp dir) and the
 * PostgresStore (a database of its own on the machine's PostgreSQL). Records, paging, idempotency
 * keys and their expiry, the sums the limits and credits are checked with, pruning, accounts,
 * keys (and an account's password hash), accounts by name, the charges of many accounts in one
 * read, settings, deliveries (one per conversion and event,
 * even when 30 callers, or 30 enqueues through three webhook deliverers, add it over three
 * nodes), the conversions that ended since an instant (start-up recovery's webhooks), the web
 * face's links and sessions (a link taken once, even by 20 callers over three nodes), and
 * `exclusive`: submissions racing for an account's last places and credits pass exactly as many
 * as fit, through one store or (PostgreSQL) three of them, as three nodes would. PostgreSQL
 * alone: a failed `exclusive` leaves nothing behind, nodes that migrate at once apply each schema
 * step once, step 6 keeps one of a database's twin deliveries, the recent ends are read
 * through an index, the due webhook deliveries are claimed each by one node in one statement
 * (a node's own at its restart), and they and an account's name are found through indexes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { ApiKeyRecord } from '../../src/model/account.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { conversionIdFloor } from '../../src/model/ids.ts';
import { toPublicConversion } from '../../src/model/conversion.ts';
import { LowdbStore } from '../../src/store/lowdb-store.ts';
import { migrate } from '../../src/store/postgres/migrate.ts';
import { MIGRATIONS } from '../../src/store/postgres/migrations.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { DeliveryRecord, Store, WebTokenRecord } from '../../src/store/types.ts';
import { WebhookDeliverer } from '../../src/webhooks/deliverer.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { account, conversion, DAY, HOUR, webToken } from '../helpers/store-records.ts';

const ids = (records: { id: string }[]) => records.map((r) => r.id);
/** A conversion id of the instant `ms`, made apart from the service's monotonic factory (which would clamp a past instant to its last). */
let idSuffix = 0;
const idAt = (ms: number) => `${conversionIdFloor(ms)}${String(++idSuffix).padStart(16, '0')}`;

interface Backend {
  name: string;
  /** A store for one case, and (PostgreSQL) more stores on the same data, as other nodes. */
  open(): Promise<{ store: Store; peers(n: number): Promise<Store[]>; close(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'lowdb',
    async open() {
      const dir = await mkdtemp(join(tmpdir(), 'convd-contract-'));
      const store = await LowdbStore.open({ dir, shards: 4 });
      return {
        store,
        // One process holds a data dir: its "nodes" are the same store.
        peers: async (n) => Array.from({ length: n }, () => store),
        async close() {
          await store.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    async open() {
      const database: TestDatabase = await freshDatabase();
      const store = await PostgresStore.open({ url: database.url, poolSize: 4 });
      const others: Store[] = [];
      return {
        store,
        async peers(n) {
          const made = await Promise.all(Array.from({ length: n }, () => PostgresStore.open({ url: database.url, poolSize: 4 })));
          others.push(...made);
          return made;
        },
        async close() {
          await Promise.all([store, ...others].map((s) => s.close()));
          await database.drop();
        },
      };
    },
  },
];

for (const backend of backends) {
  describe(`Store contract: ${backend.name}`, () => {
    let store: Store;
    let peers: (n: number) => Promise<Store[]>;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, peers, close } = await backend.open());
    });
    after(async () => {
      await close?.();
    });

    it('inserts, reads and patches a conversion; undefined removes a field; id and owner never change', async () => {
      const record = conversion('acc_rw', { secret_options: { password: 'x' } });
      await store.insertConversion(record);
      await store.flush();
      assert.deepEqual(await store.getConversion(record.id), record);
      const updated = await store.updateConversion(record.id, { status: 'processing', progress: 40, secret_options: undefined, id: 'cnv_other', account_id: 'acc_thief' });
      assert.equal(updated?.status, 'processing');
      assert.equal(updated?.progress, 40);
      assert.equal(updated?.account_id, 'acc_rw');
      assert.equal(updated?.id, record.id);
      assert.equal(updated?.secret_options, undefined);
      assert.deepEqual(await store.getConversion(record.id), updated);
      assert.equal(await store.updateConversion('cnv_missing', { status: 'failed' }), undefined);
      assert.equal(await store.getConversion('cnv_missing'), undefined);
      await assert.rejects(store.insertConversion(record), 'a second insert of the same id');
    });

    it('a progress write (whileActive, deferred) that arrives after the end changes nothing; before it, it applies', async () => {
      const record = conversion('acc_progress', { status: 'processing', progress: 10 });
      await store.insertConversion(record);
      assert.equal((await store.updateConversion(record.id, { progress: 50 }, { deferred: true, whileActive: true }))?.progress, 50);
      await store.updateConversion(record.id, { status: 'succeeded', progress: 100 });
      const late = await store.updateConversion(record.id, { progress: 60 }, { deferred: true, whileActive: true });
      assert.deepEqual([late?.status, late?.progress], ['succeeded', 100]);
      await store.flush();
      assert.deepEqual([(await store.getConversion(record.id))?.status, (await store.getConversion(record.id))?.progress], ['succeeded', 100]);
      assert.equal(await store.updateConversion('cnv_missing', { progress: 1 }, { whileActive: true }), undefined);
    });

    it('pages newest first by `before`, by status, one account only', async () => {
      const inserted: string[] = [];
      for (let i = 0; i < 25; i++) {
        const record = conversion('acc_page', { status: i % 3 === 0 ? 'failed' : 'succeeded' });
        inserted.push(record.id);
        await store.insertConversion(record);
        await store.insertConversion(conversion('acc_page_other'));
      }
      const first = ids(await store.listConversions({ accountId: 'acc_page', limit: 10 }));
      const second = ids(await store.listConversions({ accountId: 'acc_page', before: first.at(-1), limit: 10 }));
      const third = ids(await store.listConversions({ accountId: 'acc_page', before: second.at(-1), limit: 10 }));
      assert.deepEqual([...first, ...second, ...third], [...inserted].reverse());
      const failed = ids(await store.listConversions({ accountId: 'acc_page', status: 'failed', limit: 100 }));
      assert.equal(failed.length, 9);
      assert.deepEqual(await store.listConversions({ accountId: 'acc_nobody', limit: 5 }), []);
    });

    it('finds idempotency keys per account for 24 hours; an expired key may be taken again', async () => {
      const fresh = conversion('acc_idem', { idempotency_key: 'same', request_fingerprint: 'fp-a', created_at: new Date(Date.now() - HOUR).toISOString() });
      const old = conversion('acc_idem_old', { idempotency_key: 'same', created_at: new Date(Date.now() - 25 * HOUR).toISOString() });
      await store.insertConversion(fresh);
      await store.insertConversion(old);
      assert.equal((await store.findByIdempotencyKey('acc_idem', 'same'))?.request_fingerprint, 'fp-a');
      assert.equal(await store.findByIdempotencyKey('acc_idem_old', 'same'), undefined, 'older than 24 h');
      assert.equal(await store.findByIdempotencyKey('acc_idem_none', 'same'), undefined, 'another account');
      const again = conversion('acc_idem_old', { idempotency_key: 'same' });
      await store.insertConversion(again);
      assert.equal((await store.findByIdempotencyKey('acc_idem_old', 'same'))?.id, again.id);
      assert.equal((await store.getConversion(old.id))?.idempotency_key, 'same', 'the old record keeps its key');
      // An import writes a history newest first: an expired twin of a live key comes after it.
      const live = conversion('acc_idem_import', { idempotency_key: 'twice' });
      const expired = conversion('acc_idem_import', { idempotency_key: 'twice', created_at: new Date(Date.now() - 30 * HOUR).toISOString() });
      await store.insertConversion(live);
      await store.insertConversion(expired);
      assert.equal((await store.findByIdempotencyKey('acc_idem_import', 'twice'))?.id, live.id);
    });

    it('counts what the limits and the balance are checked with', async () => {
      const a = 'acc_sums';
      const since = new Date(Date.now() - 2 * HOUR).toISOString();
      const records = [
        conversion(a, { status: 'queued', reserved_credits: 2 }),
        conversion(a, { status: 'processing', reserved_credits: 3 }),
        conversion(a, { status: 'fetching', reserved_credits: 1 }),
        conversion(a, { status: 'succeeded', reserved_credits: 0, credits: 4, charged_at: new Date().toISOString(), result: { filename: 'x.webp', size: 7_000_000_000, mime: 'image/webp', expires_at: new Date(Date.now() - 1000).toISOString() } }),
        conversion(a, { status: 'failed', reserved_credits: 0, credits: 0 }),
        conversion(a, { status: 'expired', reserved_credits: 0, credits: 5, charged_at: new Date(Date.now() - 3 * HOUR).toISOString(), result: { filename: 'y.webp', size: 5, mime: 'image/webp', expires_at: new Date(Date.now() - 2 * HOUR).toISOString() } }),
      ];
      const bytesBefore = await store.resultBytes();
      for (const record of records) await store.insertConversion(record);
      assert.equal(await store.resultBytes() - bytesBefore, 7_000_000_000, 'the succeeded result only (past 32 bits): an expired one cannot be downloaded');
      assert.equal(await store.countActive(a), 3);
      assert.deepEqual(await store.creditSums(a, since), { charged: 4, reserved: 6 });
      assert.deepEqual(await store.creditSums('acc_nobody', since), { charged: 0, reserved: 0 });
      const newestMs = Date.parse(records.at(-1)!.created_at);
      assert.equal(await store.createdAtOfNewest(a, 1), newestMs);
      assert.equal(await store.createdAtOfNewest(a, 2), Date.parse(records.at(-2)!.created_at));
      assert.equal(await store.createdAtOfNewest(a, 99), undefined);
      assert.equal(await store.countCreatedSince(a, Date.parse(records[3]!.created_at)), 3);
      const active = ids(await store.conversionsWithStatus(['queued', 'fetching', 'processing'])).filter((id) => ids(records).includes(id));
      assert.deepEqual(active, ids(records.slice(0, 3)), 'oldest first');
      const expiring = ids(await store.conversionsExpiringBy(new Date().toISOString()));
      assert.ok(expiring.includes(records[3]!.id));
      assert.ok(!ids(await store.conversionsExpiringBy(new Date(Date.now() - 60_000).toISOString())).includes(records[3]!.id));
    });

    it('engineTimeSince: the engine time of the account\'s conversions created since, ended or not', async () => {
      const a = 'acc_engine_time';
      // Before the records helper's clock: making these does not move the id factory past it.
      const hourAgo = Date.now() - 3 * HOUR;
      const at = (ms: number, overrides: Partial<ConversionRecord>) => conversion(overrides.account_id ?? a, { id: idAt(ms), created_at: new Date(ms).toISOString(), ...overrides });
      const before = at(hourAgo - 60_000, { engine_ms: 50_000, status: 'failed' });
      const within = [
        at(hourAgo + 60_000, { engine_ms: 1200, status: 'succeeded' }),
        at(hourAgo + 120_000, { engine_ms: 800, status: 'cancelled' }),
        at(hourAgo + 180_000, { status: 'processing' }),
      ];
      const other = at(hourAgo + 60_000, { account_id: 'acc_engine_other', engine_ms: 9000 });
      for (const record of [before, ...within, other]) await store.insertConversion(record);
      assert.equal(await store.engineTimeSince(a, hourAgo), 2000);
      assert.equal(await store.engineTimeSince(a, hourAgo - 120_000), 52_000);
      assert.equal(await store.engineTimeSince('acc_nobody', hourAgo), 0);
    });

    it('prunes only ended history outside the credit period, with its finished deliveries', async () => {
      const now = Date.now();
      const periodStart = new Date(now - 10 * DAY).toISOString();
      const cutoff = new Date(now - 2 * DAY).toISOString();
      const old = new Date(now - 20 * DAY).toISOString();
      const inPeriod = new Date(now - 5 * DAY).toISOString();
      await store.putAccount(account('acc_prune', periodStart));
      const ended = (status: 'failed' | 'cancelled' | 'expired' | 'succeeded', at: string, extra = {}) =>
        conversion('acc_prune', { status, reserved_credits: 0, finished_at: at, created_at: at, ...extra });
      const doomed = [ended('failed', old), ended('cancelled', old), ended('expired', old, { credits: 1, charged_at: old })];
      const kept = [
        ended('expired', inPeriod, { credits: 1, charged_at: inPeriod }),
        ended('failed', new Date(now - DAY).toISOString()),
        ended('succeeded', old),
        conversion('acc_prune', { status: 'queued', created_at: old }),
      ];
      for (const record of [...doomed, ...kept]) await store.insertConversion(record);
      await store.putDelivery(delivery('dlv_done', doomed[0]!.id, 'delivered'));
      await store.putDelivery(delivery('dlv_pending', doomed[1]!.id, 'pending'));
      assert.equal(await store.pruneFinishedBefore(cutoff), doomed.length);
      for (const record of doomed) assert.equal(await store.getConversion(record.id), undefined);
      assert.deepEqual(ids(await store.listConversions({ accountId: 'acc_prune', limit: 100 })).sort(), ids(kept).sort());
      assert.equal(await store.getDelivery('dlv_done'), undefined);
      assert.ok(await store.getDelivery('dlv_pending'), 'a delivery still to be sent stays');
      assert.equal(await store.pruneFinishedBefore(cutoff), 0);
    });

    it('keeps accounts, keys (found by hash), settings and deliveries', async () => {
      const acc = account('acc_keys', new Date().toISOString());
      await store.putAccount(acc);
      await store.putAccount({ ...acc, credits_base: 7 });
      assert.equal((await store.getAccount('acc_keys'))?.credits_base, 7);
      assert.ok((await store.listAccounts()).some((a) => a.id === 'acc_keys'));
      const key: ApiKeyRecord = { id: 'key_1', account_id: 'acc_keys', hash: 'h'.repeat(64), prefix: 'ck_abc', scopes: ['read'], created_at: new Date().toISOString(), revoked_at: null };
      await store.putApiKey(key);
      assert.deepEqual(await store.findApiKeyByHash(key.hash), key);
      await store.putApiKey({ ...key, revoked_at: new Date().toISOString() });
      assert.ok((await store.getApiKey('key_1'))?.revoked_at);
      assert.deepEqual(ids(await store.listApiKeys('acc_keys')), ['key_1']);
      assert.equal(await store.findApiKeyByHash('nope'), undefined);

      assert.deepEqual((await store.getSettings()).maintenance, { enabled: false, retry_after: 300 });
      await store.putSettings({ maintenance: { enabled: true, retry_after: 60 } });
      assert.deepEqual((await store.getSettings()).maintenance, { enabled: true, retry_after: 60 });
      await store.putSettings({ maintenance: { enabled: false, retry_after: 300 } });

      await store.putDelivery(delivery('dlv_a', 'cnv_x', 'pending'));
      await store.putDelivery(delivery('dlv_b', 'cnv_y', 'failed'));
      await store.putDelivery({ ...delivery('dlv_a', 'cnv_x', 'delivered'), attempts: [{ at: new Date().toISOString(), status_code: 200, error: null, duration_ms: 5 }] });
      assert.equal((await store.getDelivery('dlv_a'))?.attempts.length, 1);
      assert.deepEqual(ids(await store.listDeliveries({ conversionId: 'cnv_x' })), ['dlv_a']);
      assert.deepEqual(ids(await store.listDeliveries({ status: 'failed' })).filter((id) => id.startsWith('dlv_b')), ['dlv_b']);
    });

    it('accountsNamed: the accounts of exactly that name, by id, at most the limit; a rename moves an account', async () => {
      const since = new Date().toISOString();
      const [first, second, other] = [account('acc_named_2', since), account('acc_named_1', since), account('acc_named_3', since)];
      await store.putAccount({ ...first, name: 'Team Blue' });
      await store.putAccount({ ...second, name: 'Team Blue' });
      await store.putAccount({ ...other, name: 'team blue' });
      assert.deepEqual(ids(await store.accountsNamed('Team Blue', 5)), ['acc_named_1', 'acc_named_2']);
      assert.deepEqual(ids(await store.accountsNamed('Team Blue', 1)), ['acc_named_1']);
      assert.deepEqual(ids(await store.accountsNamed('team blue', 5)), ['acc_named_3'], 'exactly that name');
      assert.deepEqual(ids(await store.accountsNamed('Team', 5)), []);
      await store.putAccount({ ...second, name: 'Team Green' });
      assert.deepEqual(ids(await store.accountsNamed('Team Blue', 5)), ['acc_named_2']);
      assert.deepEqual(ids(await store.accountsNamed('Team Green', 5)), ['acc_named_1']);
      assert.equal((await store.accountsNamed('Team Green', 5))[0]?.credits_base, second.credits_base, 'the whole record');
    });

    it('chargedSince: each account\'s charges since its own instant, for many at once', async () => {
      const now = Date.now();
      const charge = (accountId: string, credits: number, agoMs: number) => store.insertConversion(conversion(accountId, {
        status: 'succeeded', reserved_credits: 0, credits, charged_at: new Date(now - agoMs).toISOString(),
      }));
      await charge('acc_charged_a', 3, HOUR);
      await charge('acc_charged_a', 4, 3 * HOUR);
      await charge('acc_charged_b', 5, HOUR);
      await charge('acc_charged_b', 6, 3 * HOUR);
      await store.insertConversion(conversion('acc_charged_b', { status: 'processing', reserved_credits: 9 }));
      const charged = await store.chargedSince([
        { accountId: 'acc_charged_a', sinceIso: new Date(now - 2 * HOUR).toISOString() },
        { accountId: 'acc_charged_b', sinceIso: new Date(now - 4 * HOUR).toISOString() },
        { accountId: 'acc_charged_none', sinceIso: new Date(now - 4 * HOUR).toISOString() },
      ]);
      assert.deepEqual([...charged].sort(), [['acc_charged_a', 3], ['acc_charged_b', 11], ['acc_charged_none', 0]]);
      assert.equal(charged.get('acc_charged_a'), (await store.creditSums('acc_charged_a', new Date(now - 2 * HOUR).toISOString())).charged, 'as the balance of one account');
      assert.deepEqual(await store.chargedSince([]), new Map());
    });

    it('recentDeliveries: an account\'s latest first, at most the limit, no other account\'s', async () => {
      const base = Date.parse('2026-11-20T00:00:00Z');
      for (let i = 0; i < 5; i++) {
        await store.putDelivery({ ...delivery(`dlv_recent_${i}`, `cnv_recent_${i}`, 'delivered'), account_id: 'acc_recent', created_at: new Date(base + i * 1000).toISOString() });
      }
      await store.putDelivery({ ...delivery('dlv_recent_other', 'cnv_recent_other', 'delivered'), account_id: 'acc_other_recent', created_at: new Date(base + 9000).toISOString() });
      assert.deepEqual(ids(await store.recentDeliveries('acc_recent', 3)), ['dlv_recent_4', 'dlv_recent_3', 'dlv_recent_2']);
      assert.deepEqual(ids(await store.recentDeliveries('acc_nobody', 3)), []);
    });

    it('deliveries: one per conversion and event, however many add it at once (over three nodes where there are three)', async () => {
      const nodes = await peers(3);
      const ended = conversion('acc_add', { status: 'succeeded' });
      for (let round = 0; round < 3; round++) {
        const event = round === 2 ? 'conversion.failed' : 'conversion.succeeded';
        const conversionId = round === 1 ? conversion('acc_add').id : ended.id;
        const offered = Array.from({ length: 30 }, (_, i) => ({ ...delivery(`dlv_add_${round}_${i}`, conversionId, 'pending'), event } satisfies DeliveryRecord));
        const kept = await Promise.all(offered.map((record, i) => nodes[i % 3]!.addDelivery(record)));
        assert.equal(new Set(ids(kept)).size, 1, `round ${round}: every caller is told of the same delivery`);
        assert.deepEqual(kept[0], offered.find((record) => record.id === kept[0]!.id), 'one of those offered, whole');
        assert.deepEqual(ids((await store.listDeliveries({ conversionId })).filter((d) => d.event === event)), [kept[0]!.id]);
      }
      // Two events of one conversion: two deliveries.
      assert.equal((await store.listDeliveries({ conversionId: ended.id })).length, 2);
      // The kept one is still written by its id; a later add finds it as it is now.
      const [first] = await store.listDeliveries({ conversionId: ended.id });
      await store.putDelivery({ ...first!, status: 'delivered', next_attempt_at: null });
      const late = await store.addDelivery({ ...first!, id: 'dlv_add_late' });
      assert.equal(late.id, first!.id);
      assert.equal(late.status, 'delivered');
      assert.equal(await store.getDelivery('dlv_add_late'), undefined);
    });

    it('webhooks: 30 enqueues of one end through three deliverers (over three nodes where there are three) make one delivery', async () => {
      const nodes = await peers(3);
      // Not started: an enqueue only persists its delivery (nothing is sent anywhere).
      const deliverers = nodes.map((node) => new WebhookDeliverer({ store: node, secretFor: async () => 'whsec_test', allowInsecure: false }));
      for (let round = 0; round < 3; round++) {
        const record = conversion('acc_enqueue', { status: 'succeeded', reserved_credits: 0, finished_at: new Date().toISOString() });
        const input = {
          conversionId: record.id, accountId: 'acc_enqueue', url: 'https://hooks.example.com/convd', event: 'conversion.succeeded' as const,
          data: toPublicConversion(record, 'https://convd.example/v1'),
        };
        const made = await Promise.all(Array.from({ length: 30 }, (_, i) => deliverers[i % 3]!.enqueue(input)));
        assert.equal(new Set(ids(made)).size, 1, `round ${round}: every enqueue returns the same delivery`);
        assert.deepEqual(ids(await store.listDeliveries({ conversionId: record.id })), [made[0]!.id], `round ${round}: one delivery in the store`);
      }
    });

    it('conversionsEndedSince: the ends at or after the instant, of the states asked, in the order they ended', async () => {
      const now = Date.now();
      const at = (ms: number) => new Date(now - ms).toISOString();
      const since = at(HOUR);
      const ended = (status: 'succeeded' | 'failed' | 'cancelled' | 'expired', finishedAt: string) =>
        conversion('acc_ended', { status, reserved_credits: 0, finished_at: finishedAt });
      const before = ended('succeeded', at(2 * HOUR));
      const atInstant = ended('failed', since);
      const halfHour = ended('succeeded', at(30 * 60_000));
      const tenMinutes = ended('failed', at(10 * 60_000));
      const cancelled = ended('cancelled', at(5 * 60_000));
      const expired = ended('expired', at(4 * 60_000));
      const running = conversion('acc_ended', { status: 'processing' });
      // Made last, ended in between: the order is the end's, not the id's.
      const twentyMinutes = ended('succeeded', at(20 * 60_000));
      const later = conversion('acc_ended', { status: 'processing' });
      for (const record of [before, atInstant, halfHour, tenMinutes, cancelled, expired, running, twentyMinutes, later]) await store.insertConversion(record);
      // One that ends now, by an update (PostgreSQL: the generated column follows the doc).
      await store.updateConversion(later.id, { status: 'succeeded', finished_at: at(1000) });
      const mine = (found: { id: string; account_id: string }[]) => ids(found.filter((record) => record.account_id === 'acc_ended'));
      assert.deepEqual(mine(await store.conversionsEndedSince(since, ['succeeded', 'failed'])), ids([atInstant, halfHour, twentyMinutes, tenMinutes, later]));
      assert.deepEqual(mine(await store.conversionsEndedSince(since, ['cancelled', 'expired'])), ids([cancelled, expired]));
      assert.deepEqual(mine(await store.conversionsEndedSince(at(0), ['succeeded', 'failed'])), []);
      const [whole] = await store.conversionsEndedSince(at(2 * HOUR), ['succeeded']);
      assert.deepEqual(whole, before, 'whole records');
    });

    it("keeps an account's password hash whole, and drops it with a record written without one", async () => {
      const acc = { ...account('acc_password', new Date().toISOString()), password_hash: 'scrypt$16384$8$1$c2FsdA==$aGFzaA==' };
      await store.putAccount(acc);
      assert.deepEqual(await store.getAccount(acc.id), acc);
      assert.equal((await store.listAccounts()).find((a) => a.id === acc.id)?.password_hash, acc.password_hash);
      const { password_hash: _dropped, ...without } = acc;
      await store.putAccount(without);
      assert.equal((await store.getAccount(acc.id))?.password_hash, undefined, 'a put replaces the whole record');
    });

    it('web tokens: put, get and replace by hash; taken once; also inside exclusive', async () => {
      const session = webToken('acc_web', 'session');
      await store.putWebToken(session);
      await store.flush();
      assert.deepEqual(await store.getWebToken(session.hash), session);
      const longer = { ...session, expires_at: new Date(Date.now() + 2 * HOUR).toISOString(), csrf: 'other' };
      await store.putWebToken(longer);
      assert.deepEqual(await store.getWebToken(session.hash), longer, 'replaced, not added');
      assert.equal(await store.getWebToken('0'.repeat(64)), undefined);

      const link = webToken('acc_web', 'login_link');
      await store.putWebToken(link);
      assert.equal((await store.getWebToken(link.hash))?.csrf, undefined);
      assert.deepEqual(await store.takeWebToken(link.hash), link);
      assert.equal(await store.takeWebToken(link.hash), undefined, 'a link is taken once');
      assert.equal(await store.getWebToken(link.hash), undefined);
      assert.deepEqual(await store.getWebToken(session.hash), longer, 'the other token stays');

      // A store bound to a transaction (PostgreSQL) uses its connection: written at the commit.
      const inTx = webToken('acc_web', 'login_link');
      const taken = await store.exclusive('web:acc_web', async (tx) => {
        await tx.putWebToken(inTx);
        assert.deepEqual(await tx.getWebToken(inTx.hash), inTx);
        return tx.takeWebToken(inTx.hash);
      });
      assert.deepEqual(taken, inTx);
      assert.equal(await store.getWebToken(inTx.hash), undefined);
      assert.equal(await store.deleteWebTokens('acc_web', 'session'), 1);
    });

    it('web tokens: 20 callers racing for one link (over three nodes where there are three) get it once', async () => {
      const nodes = await peers(3);
      for (let round = 0; round < 3; round++) {
        const link = webToken('acc_web_race', 'login_link');
        await store.putWebToken(link);
        const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => nodes[i % 3]!.takeWebToken(link.hash)));
        const winners = taken.filter((found): found is WebTokenRecord => found !== undefined);
        assert.equal(winners.length, 1, `round ${round}: exactly one caller has the link`);
        assert.deepEqual(winners[0], link);
      }
    });

    it("web tokens: deleteWebTokens removes that account's tokens of that kind only", async () => {
      const mine = [webToken('acc_web_del', 'session'), webToken('acc_web_del', 'session'), webToken('acc_web_del', 'session')];
      const myLink = webToken('acc_web_del', 'login_link');
      const theirs = webToken('acc_web_del_other', 'session');
      for (const token of [...mine, myLink, theirs]) await store.putWebToken(token);
      assert.equal(await store.deleteWebTokens('acc_web_del', 'session'), 3);
      for (const token of mine) assert.equal(await store.getWebToken(token.hash), undefined);
      assert.deepEqual(await store.getWebToken(myLink.hash), myLink, 'a link is not a session');
      assert.deepEqual(await store.getWebToken(theirs.hash), theirs, "another account's session");
      assert.equal(await store.deleteWebTokens('acc_web_del', 'session'), 0);
      assert.equal(await store.deleteWebTokens('acc_web_del', 'login_link'), 1);
      assert.equal(await store.deleteWebTokens('acc_web_del_other', 'session'), 1);
    });

    it('web tokens: pruneWebTokens removes those expired before the instant only', async () => {
      const now = Date.now();
      const at = (ms: number) => new Date(now + ms).toISOString();
      const instant = at(-30 * 60_000);
      const expired = [webToken('acc_web_prune', 'session', { expires_at: at(-2 * HOUR) }), webToken('acc_web_prune', 'login_link', { expires_at: at(-HOUR) })];
      const kept = [
        webToken('acc_web_prune', 'session', { expires_at: instant }), // at the instant, not before it
        webToken('acc_web_prune', 'session', { expires_at: at(-60_000) }),
        webToken('acc_web_prune', 'login_link', { expires_at: at(HOUR) }),
      ];
      for (const token of [...expired, ...kept]) await store.putWebToken(token);
      assert.equal(await store.pruneWebTokens(instant), expired.length);
      for (const token of expired) assert.equal(await store.getWebToken(token.hash), undefined);
      for (const token of kept) assert.deepEqual(await store.getWebToken(token.hash), token);
      assert.equal(await store.pruneWebTokens(instant), 0);
      assert.equal(await store.pruneWebTokens(at(2 * HOUR)), kept.length);
    });

    it('exclusive: 30 submissions racing (over three nodes where there are three) for the credits of 10 pass 10', async () => {
      const accountId = 'acc_race';
      await store.putAccount(account(accountId, new Date(Date.now() - DAY).toISOString()));
      const nodes = await peers(3);
      const submit = (node: Store) => node.exclusive(`account:${accountId}`, async (tx) => {
        const { charged, reserved } = await tx.creditSums(accountId, new Date(Date.now() - DAY).toISOString());
        if (10 - charged - reserved < 1) return false;
        // A little time inside the lock, so that unlocked checks would surely interleave.
        await new Promise((resolve) => setTimeout(resolve, 2));
        await tx.insertConversion(conversion(accountId, { reserved_credits: 1 }));
        return true;
      });
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(nodes[i % 3]!)));
      assert.equal(outcomes.filter(Boolean).length, 10);
      assert.equal(await store.countActive(accountId), 10);
      assert.equal((await store.creditSums(accountId, new Date(Date.now() - DAY).toISOString())).reserved, 10);
    });
  });
}

describe('PostgresStore only', () => {
  let database: TestDatabase;
  before(async () => {
    database = await freshDatabase();
  });
  after(async () => {
    await database?.drop();
  });

  it('three nodes migrating at once apply each step once; a schema newer than this convd is refused', async () => {
    const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: database.url, max: 2 }));
    try {
      const reports = await Promise.all(pools.map((pool) => migrate(pool)));
      const newest = Math.max(...MIGRATIONS.map((m) => m.version));
      assert.deepEqual(reports.map((r) => r.applied.length).sort(), [0, 0, MIGRATIONS.length]);
      assert.ok(reports.every((r) => r.version === newest));
      const { rows } = await pools[0]!.query<{ version: number }>('SELECT version FROM convd_schema_migrations ORDER BY version');
      assert.deepEqual(rows.map((r) => r.version), MIGRATIONS.map((m) => m.version));
      await pools[0]!.query('INSERT INTO convd_schema_migrations (version, name) VALUES ($1, $2)', [newest + 1, 'from a newer convd']);
      await assert.rejects(migrate(pools[1]!), /newer than this convd knows/);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('schema step 6 keeps one delivery of each conversion and event a database holds twice (the delivered one, else the oldest)', async () => {
    const older = await freshDatabase();
    const pool = new pg.Pool({ connectionString: older.url, max: 2 });
    try {
      await migrate(pool, MIGRATIONS.filter((step) => step.version < 6));
      const twin = (id: string, conversionId: string, event: DeliveryRecord['event'], status: DeliveryRecord['status'], createdAt: string) =>
        ({ ...delivery(id, conversionId, status), event, created_at: createdAt });
      const t = (s: number) => new Date(Date.parse('2025-01-01T00:00:00.000Z') + s * 1000).toISOString();
      const rows = [
        twin('dlv_a1', 'cnv_a', 'conversion.succeeded', 'pending', t(2)),
        twin('dlv_a0', 'cnv_a', 'conversion.succeeded', 'failed', t(1)), // the oldest of three, none delivered
        twin('dlv_a2', 'cnv_a', 'conversion.succeeded', 'pending', t(3)),
        twin('dlv_a3', 'cnv_a', 'conversion.failed', 'pending', t(9)), // another event: kept
        twin('dlv_b0', 'cnv_b', 'conversion.failed', 'pending', t(1)),
        twin('dlv_b1', 'cnv_b', 'conversion.failed', 'delivered', t(2)), // reached the receiver: kept
        twin('dlv_c0', 'cnv_c', 'conversion.succeeded', 'delivered', t(5)), // alone
      ];
      for (const row of rows) await pool.query('INSERT INTO convd_deliveries (id, doc) VALUES ($1, $2)', [row.id, JSON.stringify(row)]);
      assert.deepEqual((await migrate(pool)).applied, MIGRATIONS.filter((step) => step.version >= 6).map((step) => step.version));
      const left = await pool.query<{ id: string }>('SELECT id FROM convd_deliveries ORDER BY id');
      assert.deepEqual(left.rows.map((row) => row.id), ['dlv_a0', 'dlv_a3', 'dlv_b1', 'dlv_c0']);
      await assert.rejects(pool.query('INSERT INTO convd_deliveries (id, doc) VALUES ($1, $2)', ['dlv_a9', JSON.stringify(twin('dlv_a9', 'cnv_a', 'conversion.succeeded', 'pending', t(20)))]), /duplicate key/);
    } finally {
      await pool.end();
      await older.drop();
    }
  });

  it('the conversions that ended lately are read through an index, not by a look at every row', async () => {
    const other = await freshDatabase();
    const store = await PostgresStore.open({ url: other.url, poolSize: 2 });
    const client = new pg.Client({ connectionString: other.url });
    await client.connect();
    try {
      for (let i = 0; i < 50; i++) {
        await store.insertConversion(conversion('acc_plan', { status: 'succeeded', reserved_credits: 0, finished_at: new Date(Date.now() - i * HOUR).toISOString() }));
      }
      await client.query('ANALYZE convd_conversions');
      // A table this small is read whole whenever that is allowed: with it forbidden, only an
      // index on the end time keeps the plan off a sequential scan.
      await client.query('SET enable_seqscan = off');
      const plan = (await client.query<{ 'QUERY PLAN': string }>(
        "EXPLAIN SELECT doc FROM convd_conversions WHERE finished_at >= $1 AND status = ANY($2::text[]) ORDER BY finished_at, id",
        [new Date(Date.now() - HOUR).toISOString(), ['succeeded', 'failed']],
      )).rows.map((row) => row['QUERY PLAN']).join('\n');
      assert.match(plan, /Index Scan using convd_conversions_ended|Bitmap Index Scan on convd_conversions_ended/, plan);
      assert.doesNotMatch(plan, /Seq Scan/, plan);
    } finally {
      await client.end();
      await store.close();
      await other.drop();
    }
  });

  it('a delivery\'s attempt is claimed by one node, and not on a stale read after another node sent it', async () => {
    const other = await freshDatabase();
    const [a, b] = await Promise.all([PostgresStore.open({ url: other.url, poolSize: 2 }), PostgresStore.open({ url: other.url, poolSize: 2 })]);
    try {
      const record = await a.addDelivery(delivery('dlv_claim', 'cnv_claim', 'pending'));
      const soon = Date.now() + 200;
      assert.equal(await a.claimDelivery!(record.id, 'node-a', soon, 0), true);
      assert.equal(await b.claimDelivery!(record.id, 'node-b', soon, 0), false, 'a live claim of node-a');
      // node-a sends it; node-b read the delivery before that write and tries once node-a's claim is over.
      await a.putDelivery({ ...record, status: 'delivered', attempts: [{ at: new Date().toISOString(), status_code: 204, error: null, duration_ms: 3 }] });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(await b.claimDelivery!(record.id, 'node-b', Date.now() + 1000, 0), false, 'delivered: never sent again');
      // A retry: pending with one attempt made, its claim run out.
      await a.putDelivery({ ...record, status: 'pending', attempts: [{ at: new Date().toISOString(), status_code: 500, error: null, duration_ms: 3 }] });
      assert.equal(await b.claimDelivery!(record.id, 'node-b', Date.now() + 1000, 0), false, 'a stale count of attempts');
      assert.equal(await b.claimDelivery!(record.id, 'node-b', Date.now() + 1000, 1), true, 'the read that is current');
      assert.equal(await a.claimDelivery!(record.id, 'node-a', Date.now() + 1000), false, 'held by node-b');
    } finally {
      await Promise.all([a.close(), b.close()]);
      await other.drop();
    }
  });

  it('claimPendingDeliveries: the due deliveries no live node holds, each to one node; with `own`, every pending one the node holds', async () => {
    const other = await freshDatabase();
    const nodes = await Promise.all([0, 1, 2].map(() => PostgresStore.open({ url: other.url, poolSize: 2 })));
    const [a, b] = nodes as [PostgresStore, PostgresStore];
    try {
      const now = Date.now();
      const at = (ms: number) => new Date(ms).toISOString();
      const add = async (id: string, status: DeliveryRecord['status'], nextMs: number | null, holder?: [string, number]) => {
        await a.addDelivery({ ...delivery(id, `cnv_${id}`, status), next_attempt_at: nextMs === null ? null : at(nextMs) });
        if (holder) assert.equal(await a.claimDelivery!(id, holder[0], holder[1]), true);
      };
      await add('dlv_due', 'pending', now - 1000);
      await add('dlv_held', 'pending', now - 1000, ['node-x', now + 60_000]);
      await add('dlv_held_out', 'pending', now - 1000, ['node-x', now - 500]);
      await add('dlv_later', 'pending', now + HOUR);
      await add('dlv_sent', 'delivered', null);
      await add('dlv_own_later', 'pending', now + HOUR, ['node-a', now + HOUR + 60_000]);
      const claim = { dueBy: at(now), untilMs: now + 5000, limit: 10 };
      assert.deepEqual(ids(await a.claimPendingDeliveries('node-a', claim)).sort(), ['dlv_due', 'dlv_held_out'], 'due, held by no live node');
      assert.deepEqual(ids(await b.claimPendingDeliveries('node-b', claim)), [], 'node-a holds them now');
      assert.deepEqual(ids(await a.claimPendingDeliveries('node-a', { ...claim, own: true })).sort(), ['dlv_due', 'dlv_held_out', 'dlv_own_later'],
        'a restart under the same id: its own, due or not');
      assert.equal(await b.claimDelivery!('dlv_own_later', 'node-b', now + HOUR), false, 'its claim kept as long as it was');
      assert.deepEqual(ids(await b.claimPendingDeliveries('node-x', { ...claim, own: true })), ['dlv_held']);

      // Three nodes claiming at once: each of 30 due deliveries goes to one of them.
      for (let i = 0; i < 30; i++) await add(`dlv_many_${i}`, 'pending', now - 2000);
      const taken = await Promise.all(nodes.map((node, i) => node.claimPendingDeliveries(`node-${i}`, { ...claim, limit: 12 })));
      const all = taken.flatMap((records) => ids(records)).filter((id) => id.startsWith('dlv_many_'));
      assert.equal(all.length, new Set(all).size, 'none twice');
      const rest = await a.claimPendingDeliveries('node-0', { ...claim, limit: 100 });
      assert.equal(all.length + rest.length, 30, 'every one, once');
    } finally {
      await Promise.all(nodes.map((node) => node.close()));
      await other.drop();
    }
  });

  it('a node\'s due webhook deliveries and sign-in\'s name are found through an index, not by a look at every row', async () => {
    const other = await freshDatabase();
    const store = await PostgresStore.open({ url: other.url, poolSize: 2 });
    const client = new pg.Client({ connectionString: other.url });
    await client.connect();
    try {
      for (let i = 0; i < 50; i++) {
        await store.putAccount({ ...account(`acc_index_${i}`, new Date().toISOString()), name: `name ${i}` });
        await store.addDelivery({ ...delivery(`dlv_index_${i}`, `cnv_index_${i}`, i % 2 ? 'pending' : 'delivered'), next_attempt_at: new Date(Date.now() + (i - 25) * HOUR).toISOString() });
      }
      await client.query('ANALYZE');
      await client.query('SET enable_seqscan = off');
      const explain = async (text: string, values: unknown[]) =>
        (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values)).rows.map((row) => row['QUERY PLAN']).join('\n');
      const byName = await explain("SELECT doc FROM convd_accounts WHERE doc->>'name' = $1 ORDER BY id LIMIT $2", ['name 7', 2]);
      assert.match(byName, /Index Scan using convd_accounts_name|Bitmap Index Scan on convd_accounts_name/, byName);
      assert.doesNotMatch(byName, /Seq Scan/, byName);
      const due = await explain(`SELECT id FROM convd_deliveries
          WHERE status = 'pending' AND doc->>'next_attempt_at' <= $1 AND (lease_node IS NULL OR lease_until < now())
          ORDER BY doc->>'next_attempt_at' LIMIT $2 FOR UPDATE SKIP LOCKED`, [new Date().toISOString(), 100]);
      assert.match(due, /Index Scan using convd_deliveries_due|Bitmap Index Scan on convd_deliveries_due/, due);
      assert.doesNotMatch(due, /Seq Scan/, due);
      assert.deepEqual(ids(await store.accountsNamed('name 7', 2)), ['acc_index_7']);
    } finally {
      await client.end();
      await store.close();
      await other.drop();
    }
  });

  it('a NUL character, which jsonb cannot hold, is stored as U+FFFD rather than failing the write', async () => {
    const other = await freshDatabase();
    const store = await PostgresStore.open({ url: other.url, poolSize: 2 });
    try {
      const record = conversion('acc_nul', { original_name: 'a\u0000b.png', options: { header_html: '<p>\u0000</p>' } });
      await store.insertConversion(record);
      const failed = await store.updateConversion(record.id, { status: 'failed', error: { code: 'conversion_failed', message: 'engine said \u0000' } });
      assert.equal(failed?.error?.message, 'engine said \uFFFD');
      assert.equal((await store.getConversion(record.id))?.original_name, 'a\uFFFDb.png');
    } finally {
      await store.close();
      await other.drop();
    }
  });

  it('a failed exclusive leaves nothing behind; the lock is free again after it', async () => {
    const other = await freshDatabase();
    const store = await PostgresStore.open({ url: other.url, poolSize: 2 });
    try {
      const record = conversion('acc_rollback');
      await assert.rejects(store.exclusive('account:acc_rollback', async (tx) => {
        await tx.insertConversion(record);
        throw new Error('limit reached after the insert');
      }), /limit reached/);
      assert.equal(await store.getConversion(record.id), undefined, 'rolled back');
      const done = await store.exclusive('account:acc_rollback', async (tx) => {
        await tx.insertConversion(record);
        return tx.getConversion(record.id);
      });
      assert.equal(done?.id, record.id);
      assert.equal((await store.getConversion(record.id))?.id, record.id, 'committed');

      // What others may read runs after the commit, never after a rollback.
      const seen: (string | undefined)[] = [];
      const later = conversion('acc_rollback');
      await store.exclusive('account:acc_rollback', async (tx) => {
        await tx.insertConversion(later);
        tx.afterCommit!(() => void store.getConversion(later.id).then((found) => seen.push(found?.id)));
      });
      const dropped = conversion('acc_rollback');
      let ran = false;
      await assert.rejects(store.exclusive('account:acc_rollback', async (tx) => {
        await tx.insertConversion(dropped);
        tx.afterCommit!(() => (ran = true));
        throw new Error('after all, no');
      }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(seen, [later.id], 'the callback read the committed row from another connection');
      assert.equal(ran, false, 'nothing runs for a rolled-back transaction');
    } finally {
      await store.close();
      await other.drop();
    }
  });
});

function delivery(id: string, conversionId: string, status: DeliveryRecord['status']): DeliveryRecord {
  return {
    id, conversion_id: conversionId, account_id: 'acc_prune', event: 'conversion.failed', url: 'https://example.com/hook',
    body: '{}', status, attempts: [], next_attempt_at: null, created_at: new Date().toISOString(),
  };
}
