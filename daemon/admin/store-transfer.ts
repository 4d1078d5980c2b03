import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { copyFile, lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import type { AccountRecord, ApiKeyRecord, Settings } from '../../src/model/account.ts';
import type { ConversionRecord } from '../../src/model/conversion.ts';
import { ACTIVE_STATUSES } from '../../src/model/status.ts';
import { isConversionId } from '../../src/model/ids.ts';
import { LocalBlobStore, type BlobKind, type BlobStore } from '../../src/store/blob-store.ts';
import { openStore, type StorePlace } from '../../src/service/open-store.ts';
import { acquireDataDirLock, DataDirLockedError } from '../../src/store/data-dir-lock.ts';
import type { DeliveryRecord, Store } from '../../src/store/types.ts';
import { AdminError } from './operations.ts';

/**
 * Moving a box: `convd store export DIR` writes a stopped daemon's lowdb
 * store as one JSON record per line (`store.ndjson`: accounts, keys, settings, conversions,
 * deliveries) and, with `--with-files`, the files conversions still need (results of succeeded
 * ones, inputs of queued or running ones) under `files/`; `convd store import DIR` reads that
 * into PostgreSQL (and the files into a data dir's blobs), so that the first box becomes the first
 * node with its keys, balances and history. Import writes each record by id (an insert or a
 * replacement), so running it twice changes nothing the second time.
 */

const FORMAT = 'convd-store-export';
const VERSION = 1;
const RECORDS_FILE = 'store.ndjson';
const FILES_DIR = 'files';
/** Conversions read per page of an account's history. */
const PAGE = 500;

type Line =
  | { type: 'header'; format: string; version: number; exported_at: string; with_files: boolean }
  | { type: 'account'; doc: AccountRecord }
  | { type: 'key'; doc: ApiKeyRecord }
  | { type: 'settings'; doc: Settings }
  | { type: 'conversion'; doc: ConversionRecord }
  | { type: 'delivery'; doc: DeliveryRecord };

export interface TransferReport {
  accounts: number;
  keys: number;
  conversions: number;
  deliveries: number;
  files: number;
}

const emptyReport = (): TransferReport => ({ accounts: 0, keys: 0, conversions: 0, deliveries: 0, files: 0 });

/** The files a conversion still needs after a move: its result, or its input while it waits to run. */
function neededFile(record: ConversionRecord): BlobKind | null {
  if (record.status === 'succeeded') return 'results';
  if (ACTIVE_STATUSES.has(record.status) && record.input.kind === 'file') return 'inputs';
  return null;
}

/** Exports the lowdb store of `dataDir` (no daemon may hold it) into the empty or new directory `out`. */
export async function exportStore(dataDir: string, out: string, withFiles: boolean): Promise<TransferReport> {
  if (!existsSync(join(dataDir, 'store'))) throw new AdminError(`no convd data dir at ${dataDir} (no daemon has run with it)`, 4);
  const existed = existsSync(out);
  if (existed && (await readdir(out)).length > 0) throw new AdminError(`${out} is not empty: export into a new directory`, 2);
  const release = await acquireDataDirLock(dataDir).catch((error: unknown) => {
    if (error instanceof DataDirLockedError) throw new AdminError(`a daemon holds ${dataDir}: stop it first (the export must not miss its last writes)`, 1);
    throw error;
  });
  // The data dir's lowdb files, whatever database the configuration names: that is the box being moved.
  const { store } = await openStore({ dataDir }, { role: 'command' });
  const blobs = withFiles ? await LocalBlobStore.open(join(dataDir, 'blobs')) : null;
  const report = emptyReport();
  try {
    await mkdir(join(out, FILES_DIR), { recursive: true, mode: 0o700 });
    const partial = join(out, `${RECORDS_FILE}.partial`);
    const file = createWriteStream(partial, { mode: 0o600 });
    const write = async (line: Line) => {
      if (!file.write(`${JSON.stringify(line)}\n`)) await once(file, 'drain');
    };
    await write({ type: 'header', format: FORMAT, version: VERSION, exported_at: new Date().toISOString(), with_files: withFiles });
    await write({ type: 'settings', doc: await store.getSettings() });
    for (const account of await store.listAccounts()) {
      await write({ type: 'account', doc: account });
      report.accounts++;
      for (const key of await store.listApiKeys(account.id)) {
        await write({ type: 'key', doc: key });
        report.keys++;
      }
      for (let before: string | undefined; ;) {
        const page = await store.listConversions({ accountId: account.id, before, limit: PAGE });
        for (const record of page) {
          await write({ type: 'conversion', doc: record });
          report.conversions++;
          const kind = neededFile(record);
          if (blobs && kind && (await blobs.exists(kind, record.id))) {
            await mkdir(join(out, FILES_DIR, kind), { recursive: true, mode: 0o700 });
            await pipeline(await blobs.openRead(kind, record.id), createWriteStream(join(out, FILES_DIR, kind, record.id), { mode: 0o600 }));
            report.files++;
          }
        }
        if (page.length < PAGE) break;
        before = page[page.length - 1]!.id;
      }
    }
    for (const delivery of await store.listDeliveries({})) {
      await write({ type: 'delivery', doc: delivery });
      report.deliveries++;
    }
    file.end();
    await once(file, 'close');
    // Named only when whole: an export cut short is never taken for one.
    await rename(partial, join(out, RECORDS_FILE));
    return report;
  } catch (error) {
    // A failed export leaves nothing a retry would stumble on (the directory was empty or new).
    if (existed) {
      for (const name of await readdir(out).catch(() => [])) await rm(join(out, name), { recursive: true, force: true });
    } else {
      await rm(out, { recursive: true, force: true });
    }
    throw error;
  } finally {
    await store.close();
    await release();
  }
}

/**
 * The PostgreSQL store an import writes into, holding the daemons' node lock alone for as long as
 * it is open: refused while any daemon runs on the database (a node without a bucket holds the
 * lock alone, the nodes of a cluster hold it shared), and no daemon starts there meanwhile.
 */
export async function openImportTarget(place: StorePlace & { databaseUrl: string }): Promise<Store> {
  try {
    return (await openStore(place, { role: 'import' })).store;
  } catch (error) {
    const { DatabaseInUseError } = await import('../../src/store/postgres/postgres-store.ts');
    if (!(error instanceof DatabaseInUseError)) throw error;
    throw new AdminError(error.holder === 'cluster'
      ? 'convd nodes of a cluster (this database and a bucket) run on this database: stop every node before the import (it must not write under running daemons)'
      : 'a convd daemon (or another import) runs on this database: stop it before the import (it must not write under a running daemon)', 1);
  }
}

/**
 * Imports an export into `target` (the PostgreSQL store, opened by `openImportTarget` so that no
 * daemon runs on it meanwhile) and its files into `blobs` (a data dir's). Every record is written
 * by its id: a second import of the same export changes nothing. A conversion keeps one delivery
 * per event: a second one in the export under another id is left out (the first is kept).
 */
export async function importStore(source: string, target: Store, blobs: BlobStore | null): Promise<TransferReport> {
  const { recordsPath } = await checkExport(source);
  const report = emptyReport();
  const lines = createInterface({ input: createReadStream(recordsPath, 'utf8'), crlfDelay: Infinity });
  let header: Extract<Line, { type: 'header' }> | null = null;
  let number = 0;
  for await (const text of lines) {
    number++;
    if (text.trim() === '') continue;
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      throw new AdminError(`${RECORDS_FILE} line ${number} is not JSON: the export is damaged`, 2);
    }
    if (!header) {
      if (line.type !== 'header' || line.format !== FORMAT) throw new AdminError(`${RECORDS_FILE} is not a convd store export`, 2);
      if (line.version > VERSION) throw new AdminError(`the export is of version ${line.version}, newer than this convd reads (${VERSION})`, 2);
      header = line;
      continue;
    }
    switch (line.type) {
      case 'settings':
        await target.putSettings(line.doc);
        break;
      case 'account':
        await target.putAccount(line.doc);
        report.accounts++;
        break;
      case 'key':
        await target.putApiKey(line.doc);
        report.keys++;
        break;
      case 'conversion':
        await putConversion(target, line.doc);
        report.conversions++;
        if (blobs && header.with_files) report.files += await importFile(source, blobs, line.doc);
        break;
      case 'delivery':
        // Added if its conversion has none for the event, then written whole by its id (a second
        // import brings the newer state of the same delivery); another id's twin is left out.
        if ((await target.addDelivery(line.doc)).id !== line.doc.id) break;
        await target.putDelivery(line.doc);
        report.deliveries++;
        break;
      default:
        throw new AdminError(`${RECORDS_FILE} line ${number} has an unknown type`, 2);
    }
  }
  if (!header) throw new AdminError(`${RECORDS_FILE} is empty`, 2);
  return report;
}

/**
 * Reads the whole export once before any database is opened: every line JSON of a known type,
 * every conversion id valid, so a damaged export is refused without a partial import. Says
 * whether it holds files.
 */
export async function checkExport(source: string): Promise<{ recordsPath: string; withFiles: boolean }> {
  const recordsPath = join(source, RECORDS_FILE);
  if (!existsSync(recordsPath)) throw new AdminError(`${source} holds no ${RECORDS_FILE}: not a finished convd store export`, 2);
  const lines = createInterface({ input: createReadStream(recordsPath, 'utf8'), crlfDelay: Infinity });
  let header: Partial<Extract<Line, { type: 'header' }>> | null = null;
  let number = 0;
  for await (const text of lines) {
    number++;
    if (text.trim() === '') continue;
    let line: Partial<Line> & { doc?: { id?: unknown } };
    try {
      line = JSON.parse(text) as typeof line;
    } catch {
      throw new AdminError(`${RECORDS_FILE} line ${number} is not JSON: the export is damaged`, 2);
    }
    if (!header) {
      const first = line as Partial<Extract<Line, { type: 'header' }>>;
      if (first.type !== 'header' || first.format !== FORMAT) throw new AdminError(`${RECORDS_FILE} is not a convd store export`, 2);
      if (typeof first.version !== 'number' || first.version > VERSION) throw new AdminError(`the export is of version ${String(first.version)}, newer than this convd reads (${VERSION})`, 2);
      header = first;
      continue;
    }
    if (!line.type || !RECORD_TYPES.has(line.type) || typeof line.doc !== 'object' || line.doc === null) {
      throw new AdminError(`${RECORDS_FILE} line ${number} is not a record this convd knows: the export is damaged`, 2);
    }
    if (line.type === 'conversion' && (typeof line.doc.id !== 'string' || !isConversionId(line.doc.id))) {
      throw new AdminError(`${RECORDS_FILE} line ${number} holds a conversion with an invalid id`, 2);
    }
  }
  if (!header) throw new AdminError(`${RECORDS_FILE} is empty`, 2);
  return { recordsPath, withFiles: header.with_files === true };
}

const RECORD_TYPES = new Set(['settings', 'account', 'key', 'conversion', 'delivery']);

async function putConversion(target: Store, record: ConversionRecord): Promise<void> {
  // Ids name files: an export edited by hand gets no say in paths.
  if (typeof record.id !== 'string' || !isConversionId(record.id)) throw new AdminError(`${RECORDS_FILE} holds a conversion with an invalid id`, 2);
  if (await target.getConversion(record.id)) await target.updateConversion(record.id, record);
  else await target.insertConversion(record);
}

async function importFile(source: string, blobs: BlobStore, record: ConversionRecord): Promise<number> {
  const kind = neededFile(record);
  if (!kind) return 0;
  const from = join(source, FILES_DIR, kind, record.id);
  // A regular file only: a link in an export edited by hand must not carry another file of this
  // machine into the store (and so to whoever holds the conversion's key).
  const info = await lstat(from).catch(() => null);
  if (!info) return 0;
  if (!info.isFile()) throw new AdminError(`${FILES_DIR}/${kind}/${record.id} is not a regular file: the export is refused`, 2);
  // Adopting moves a file: a copy is adopted, the export stays whole for another try.
  const copy = blobs.spoolPath();
  await copyFile(from, copy);
  try {
    if (kind === 'results') await blobs.adoptResult(record.id, copy);
    else await blobs.adoptInput(record.id, copy);
  } finally {
    await blobs.discardSpool(copy);
  }
  return 1;
}
