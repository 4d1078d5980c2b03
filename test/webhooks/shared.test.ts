/**
 * Webhook deliveries with several nodes on one PostgreSQL store: two deliverers (two nodes)
 * both resuming pending deliveries send each attempt once (claims); when the node that scheduled
 * a retry stops (dies), the other sends it once its claim runs out; restarted under its old id, it
 * sends it itself at its time, not after its claim. The receiver sees exactly one request per
 * attempt, every one with the same delivery id. No node reads the pending deliveries others hold:
 * each looks with one claim that returns only what it took.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { toPublicConversion } from '../../src/model/conversion.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { WebhookDeliverer, type DeliveryStore } from '../../src/webhooks/deliverer.ts';
import { freshDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { conversion } from '../helpers/store-records.ts';
import { waitUntil } from '../helpers/ops-support.ts';

const CLAIM_MS = 400;
/** The first retry after 1 min x this: about 1.2 s, so that both nodes have it scheduled when it is due. */
const SCALE = 0.02;

describe('webhook deliveries shared by two nodes', () => {
  let database: TestDatabase;
  let store: PostgresStore;
  let receiver: Server;
  let port = 0;
  /** Delivery ids of the requests, in order; a path answers 500 to its first request, then 200. */
  const seen = new Map<string, string[]>();
  before(async () => {
    database = await freshDatabase();
    store = await PostgresStore.open({ url: database.url, poolSize: 6 });
    receiver = createServer((request, response) => {
      const path = request.url ?? '/';
      const ids = seen.get(path) ?? [];
      ids.push(String(request.headers['x-service-delivery']));
      seen.set(path, ids);
      request.resume();
      response.writeHead(ids.length === 1 ? 500 : 200).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    port = (receiver.address() as { port: number }).port;
  });
  after(async () => {
    receiver?.close();
    await store?.close();
    await database?.drop();
  });

  const node = (name: string, claimMs = CLAIM_MS, through: DeliveryStore = store) => new WebhookDeliverer({
    store: through, secretFor: async () => 'whsec_shared', allowInsecure: true, scheduleScale: SCALE, timeoutMs: 2000,
    shared: { node: name, claimMs },
  });
  const enqueue = (deliverer: WebhookDeliverer, path: string) => {
    const record = conversion('acc_hooks', { status: 'succeeded' });
    return deliverer.enqueue({
      conversionId: record.id, accountId: 'acc_hooks', url: `http://127.0.0.1:${port}${path}`, event: 'conversion.succeeded',
      data: toPublicConversion(record, 'https://convd.example/v1'),
    });
  };

  it('both alive: the failed first attempt and the retry are each sent once', async () => {
    const [a, b] = [node('A'), node('B')];
    await Promise.all([a.start(), b.start()]);
    try {
      const made = await enqueue(a, '/both');
      const done = await waitUntil('delivered', async () => {
        const current = await store.getDelivery(made.id);
        return current?.status === 'delivered' ? current : undefined;
      }, 10_000);
      // Both nodes have looked at it several times by now.
      await new Promise((resolve) => setTimeout(resolve, 3 * CLAIM_MS));
      assert.equal(done.attempts.length, 2);
      assert.deepEqual(seen.get('/both'), [made.id, made.id], 'one request per attempt, one delivery id');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('the node that scheduled the retry dies: the other sends it once its claim runs out', async () => {
    const [a, b] = [node('A2'), node('B2')];
    await a.start();
    const made = await enqueue(a, '/dies');
    await waitUntil('the first attempt recorded', async () => ((await store.getDelivery(made.id))?.attempts.length === 1 ? true : undefined), 10_000);
    await a.stop();
    await b.start();
    try {
      const done = await waitUntil('delivered by the survivor', async () => {
        const current = await store.getDelivery(made.id);
        return current?.status === 'delivered' ? current : undefined;
      }, 10_000);
      assert.equal(done.attempts.length, 2);
      assert.deepEqual(seen.get('/dies'), [made.id, made.id]);
    } finally {
      await b.stop();
    }
  });

  it('restarted under its old id, the node sends its retry at its time, not once its claim has run out', async () => {
    // A claim far longer than the wait for the retry: another node would send it only after it.
    const longClaim = 6000;
    const first = node('R', longClaim);
    await first.start();
    const made = await enqueue(first, '/restart');
    await waitUntil('the first attempt recorded', async () => ((await store.getDelivery(made.id))?.attempts.length === 1 ? true : undefined), 10_000);
    await first.stop();
    const again = node('R', longClaim);
    await again.start();
    try {
      const done = await waitUntil('delivered by the restarted node', async () => {
        const current = await store.getDelivery(made.id);
        return current?.status === 'delivered' ? current : undefined;
      }, 10_000);
      const [attempt, retry] = done.attempts.map((a) => Date.parse(a.at));
      // The retry's wait is about 1.2 s; a claim left to run out would add 6 s to it.
      assert.ok(retry! - attempt! < longClaim, `the retry came ${retry! - attempt!} ms after the first attempt`);
      assert.deepEqual(seen.get('/restart'), [made.id, made.id]);
    } finally {
      await again.stop();
    }
  });

  it('no node reads the pending deliveries another holds: each look is one claim that returns what it took', async () => {
    // 40 retries a live node holds (due in an hour, claimed until after that).
    const holder = 'node-holding';
    const later = Date.now() + 3_600_000;
    for (let i = 0; i < 40; i++) {
      const record = conversion('acc_hooks_held', { status: 'failed' });
      const added = await store.addDelivery({
        id: `dlv_held_${i}`, conversion_id: record.id, account_id: 'acc_hooks_held', event: 'conversion.failed', url: `http://127.0.0.1:${port}/held`,
        body: '{}', status: 'pending', attempts: [], next_attempt_at: new Date(later).toISOString(), created_at: new Date().toISOString(),
      });
      await store.claimDelivery(added.id, holder, later + 60_000);
    }
    let listed = 0;
    let claims = 0;
    let returned = 0;
    const watched: DeliveryStore = {
      getDelivery: (id) => store.getDelivery(id),
      addDelivery: (record) => store.addDelivery(record),
      putDelivery: (record) => store.putDelivery(record),
      flush: () => store.flush(),
      claimDelivery: (...args) => store.claimDelivery(...args),
      listDeliveries: (filter) => (listed++, store.listDeliveries(filter)),
      claimPendingDeliveries: async (...args) => {
        claims++;
        const taken = await store.claimPendingDeliveries(...args);
        returned += taken.length;
        return taken;
      },
    };
    const [a, b] = [node('L1', CLAIM_MS, watched), node('L2', CLAIM_MS, watched)];
    await Promise.all([a.start(), b.start()]);
    try {
      await new Promise((resolve) => setTimeout(resolve, 5 * CLAIM_MS + 100));
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    assert.equal(listed, 0, 'no list of the pending deliveries');
    assert.ok(claims >= 2 * 5, `${claims} looks in five periods of two nodes`);
    assert.equal(returned, 0, 'nothing came back: every pending delivery is held by a live node or not due');
    assert.equal(seen.get('/held'), undefined);
  });
});
