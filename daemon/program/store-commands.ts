import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { AdminError } from '../admin/operations.ts';
import type { BlobStore } from '../../src/store/blob-store.ts';
import { configOption, databaseOption, dataDirOption, storePlaceOf, transfer } from './admin-run.ts';

interface ImportOptions { databaseUrl?: string; dataDir?: string; blobUrl?: string; config?: string; json?: boolean }

export function registerStore(program: Command): void {
  const storeCommand = program.command('store').description('move a box: its lowdb store out to a directory, and into PostgreSQL');
  storeCommand.command('export <dir>').description('write the stopped daemon\'s store (and with --with-files the results and waiting inputs) into a new directory')
    .option('--with-files', 'copy the results of succeeded conversions and the inputs of waiting ones too')
    .addOption(dataDirOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((dir: string, o: { withFiles?: boolean; dataDir?: string; config?: string; json?: boolean }) => transfer(o, async () => {
      const { exportStore } = await import('../admin/store-transfer.ts');
      return exportStore((await storePlaceOf({ dataDir: o.dataDir, config: o.config })).dataDir, dir, o.withFiles === true);
    }));
  storeCommand.command('import <dir>').description('read an export into the PostgreSQL database (no daemon may run on it meanwhile); again changes nothing')
    .addOption(databaseOption()).option('--data-dir <dir>', 'the new node\'s data dir, for the exported files (created if missing)')
    .option('--blob-url <url>', 'the bucket for the exported files instead (s3://bucket/prefix?endpoint=…; env CONVD_BLOB_URL)')
    .addOption(configOption()).option('--json', 'print JSON')
    .action((dir: string, o: ImportOptions) => transfer(o, () => importExport(dir, o)));
}

export function registerMigrate(program: Command): void {
  program.command('migrate').description('apply the PostgreSQL schema\'s missing steps (a daemon does so at start too)')
    .addOption(databaseOption()).addOption(configOption()).option('--json', 'print JSON')
    .action((o: { databaseUrl?: string; config?: string; json?: boolean }) => transfer(o, async () => {
      const { databaseUrl } = await storePlaceOf(o);
      if (!databaseUrl) throw new AdminError('migrate which database? name it with --database-url (or CONVD_DATABASE_URL)', 2);
      const { migrateDatabase } = await import('../../src/store/postgres/migrate.ts');
      return migrateDatabase(databaseUrl);
    }));
}

/** `convd store import`: an export into the database, its files into a data dir or a bucket. */
async function importExport(dir: string, o: ImportOptions): Promise<object> {
  // Its --data-dir is the new node's, for the files: the store is the database.
  const place = await storePlaceOf({ databaseUrl: o.databaseUrl, config: o.config });
  const { databaseUrl } = place;
  if (!databaseUrl) throw new AdminError('import into which database? name it with --database-url (or CONVD_DATABASE_URL)', 2);
  const { checkExport, importStore, openImportTarget } = await import('../admin/store-transfer.ts');
  const checked = await checkExport(dir);
  const blobTarget = o.blobUrl ?? process.env.CONVD_BLOB_URL ?? o.dataDir;
  if (checked.withFiles && !blobTarget) throw new AdminError('the export holds files: say where they go with --data-dir DIR or --blob-url URL', 2);
  const { LocalBlobStore } = await import('../../src/store/blob-store.ts');
  const blobUrl = o.blobUrl ?? process.env.CONVD_BLOB_URL;
  const target = await openImportTarget({ ...place, databaseUrl });
  // A bucket's uploads go through a scratch directory of their own, removed after.
  const scratch = blobUrl ? await mkdtemp(join(tmpdir(), 'convd-import-')) : null;
  try {
    let blobs: BlobStore | null = null;
    if (blobUrl && scratch) blobs = await (await import('../../src/store/s3/s3-blob-store.ts')).S3BlobStore.open(blobUrl, scratch);
    else if (o.dataDir) blobs = await LocalBlobStore.open(join(o.dataDir, 'blobs'));
    return await importStore(dir, target, blobs);
  } finally {
    await target.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}
