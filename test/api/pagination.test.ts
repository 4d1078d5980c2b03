/**
 * GET /conversions over real HTTP: newest first, the `status` filter, `limit`, and the cursor;
 * every page item a whole conversion object; pages stable while new conversions are inserted
 * between (and during) page requests: no duplicates, no gaps among the older ones.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, newAccount, png, submitFile, waitForEnd, type Client, type ListPage, type PublicConversion } from '../helpers/api-support.ts';
import { startDaemon, type DaemonHandle } from '../helpers/daemon.ts';

/** Follows next_cursor from the first page; returns every page. */
async function allPages(client: Client, query: string): Promise<ListPage[]> {
  const pages: ListPage[] = [];
  let cursor: string | null = null;
  do {
    const got: { status: number; body: ListPage } = await call<ListPage>(client, `/conversions?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    pages.push(got.body);
    cursor = got.body.next_cursor;
    assert.ok(pages.length < 100, 'the cursor walk ends');
  } while (cursor);
  return pages;
}

function assertNewestFirst(ids: string[]): void {
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! > ids[i]!, `order at ${i}: ${ids[i - 1]} then ${ids[i]}`);
}

describe('listing conversions over HTTP', () => {
  let daemon: DaemonHandle;
  let client: Client;
  let image: Buffer;
  /** In submission order (oldest first). */
  const made: PublicConversion[] = [];

  before(async () => {
    daemon = await startDaemon();
    // The unmetered bootstrap account: inserting while paging must not meet a concurrency limit.
    client = daemon;
    image = await png(8, 8);
    // 25 conversions: every fifth one fails (its input is no image). Sent one after the other,
    // so submission order is creation order.
    for (let i = 0; i < 25; i++) {
      const data = i % 5 === 4 ? Buffer.from(`broken ${i}`) : image;
      const got = await submitFile(client, { target: 'webp' }, { data, name: `item-${i}.png` });
      assert.equal(got.status, 202);
      made.push(got.body);
    }
    for (const conversion of made) await waitForEnd(client, conversion.id);
  });
  after(() => daemon.dispose());

  it('is newest first, 20 per page by default, with whole conversion objects', async () => {
    const got = await call<ListPage>(client, '/conversions');
    assert.equal(got.status, 200);
    assert.deepEqual(Object.keys(got.body).sort(), ['data', 'next_cursor']);
    assert.equal(got.body.data.length, 20);
    assert.equal(typeof got.body.next_cursor, 'string');
    assert.deepEqual(got.body.data.map((c) => c.id), made.slice(5).reverse().map((c) => c.id));
    for (const item of got.body.data) {
      const single = await call(client, `/conversions/${item.id}`);
      assert.deepEqual(item, single.body, 'a list item is the conversion object itself');
    }
  });

  it('the cursor walks every conversion once, with any page size', async () => {
    for (const limit of [1, 7, 25, 100]) {
      const pages = await allPages(client, `limit=${limit}`);
      const ids = pages.flatMap((p) => p.data.map((c) => c.id));
      assert.deepEqual(ids, made.map((c) => c.id).reverse(), `limit=${limit}`);
      for (const page of pages.slice(0, -1)) assert.equal(page.data.length, limit);
      assert.equal(pages.at(-1)!.next_cursor, null);
    }
  });

  it('the status filter applies across pages', async () => {
    const failedIds = made.filter((_, i) => i % 5 === 4).map((c) => c.id).reverse();
    const pages = await allPages(client, 'status=failed&limit=2');
    assert.deepEqual(pages.map((p) => p.data.length), [2, 2, 1]);
    const failed = pages.flatMap((p) => p.data);
    assert.deepEqual(failed.map((c) => c.id), failedIds);
    assert.ok(failed.every((c) => c.status === 'failed' && c.error?.code === 'input_invalid'));

    const succeeded = (await allPages(client, 'status=succeeded&limit=6')).flatMap((p) => p.data);
    assert.equal(succeeded.length, 20);
    assert.ok(succeeded.every((c) => c.status === 'succeeded'));
    assertNewestFirst(succeeded.map((c) => c.id));

    for (const status of ['queued', 'fetching', 'processing', 'cancelled', 'expired']) {
      const none = await call<ListPage>(client, `/conversions?status=${status}`);
      assert.deepEqual(none.body, { data: [], next_cursor: null }, status);
    }
  });

  it('only the caller’s conversions are listed', async () => {
    const stranger = await newAccount(daemon, 'free');
    assert.deepEqual((await call<ListPage>(stranger, '/conversions')).body, { data: [], next_cursor: null });
    const theirs = await submitFile(stranger, { target: 'png', wait: '20' }, { data: image, name: 'theirs.png' });
    assert.deepEqual((await call<ListPage>(stranger, '/conversions')).body.data.map((c) => c.id), [theirs.body.id]);
    const mine = (await allPages(client, 'limit=100')).flatMap((p) => p.data.map((c) => c.id));
    assert.ok(!mine.includes(theirs.body.id));
    assert.equal(mine.length, made.length);
  });

  it('stays stable while conversions are inserted during the walk: no duplicates, no gaps', async () => {
    const before = (await allPages(client, 'limit=100')).flatMap((p) => p.data.map((c) => c.id));
    const inserted: string[] = [];
    const insert = async (n: number) => {
      const answers = await Promise.all(Array.from({ length: n }, (_, i) => submitFile(client, { target: 'png' }, { data: image, name: `new-${inserted.length}-${i}.png` })));
      for (const got of answers) {
        assert.equal(got.status, 202);
        inserted.push(got.body.id);
      }
    };

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      // Each page request races three new submissions.
      const [page]: [{ status: number; body: ListPage }, void] = await Promise.all([
        call<ListPage>(client, `/conversions?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
        insert(3),
      ]);
      assert.equal(page.status, 200);
      seen.push(...page.body.data.map((c) => c.id));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor && pages < 100);

    assert.equal(new Set(seen).size, seen.length, 'no conversion twice');
    assertNewestFirst(seen);
    const older = seen.filter((id) => before.includes(id));
    assert.deepEqual(older, before, 'every conversion that existed before the walk, in order');
    // New ones can only appear on the first page (inserted while it was read), never later.
    const lateNew = seen.slice(4).filter((id) => inserted.includes(id));
    assert.deepEqual(lateNew, []);
    for (const id of inserted) await waitForEnd(client, id);
  });
});
