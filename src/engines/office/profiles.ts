import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { removeOrphanedDirs } from '../process/orphaned-dirs.ts';

/**
 * LibreOffice profiles, one per instance, in the system's temp directory, named after the process
 * that made them (`convd-office-<pid>-XXXXXX`). An instance that ends removes its own; a process
 * killed outright (`kill -9`, a crash, the OOM killer) cannot, so the next pool removes the
 * profiles whose maker is gone.
 */
const PREFIX = 'convd-office-';
const MADE_BY = /^convd-office-(\d+)-/;

export function makeProfile(): Promise<string> {
  return mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`));
}

/**
 * The name of the pipe an instance with this profile accepts UNO calls on; bridge.py computes the
 * same (`convd_` and the first 16 hex digits of the SHA-1 of the profile's path), so that the
 * pipe's file can be found from the profile alone once the instance is gone.
 */
export function pipeNameOf(profile: string): string {
  return `convd_${createHash('sha1').update(profile).digest('hex').slice(0, 16)}`;
}

/**
 * The socket files an instance leaves when it is killed (a clean exit removes them): LibreOffice
 * makes them in /tmp (or /var/tmp where /tmp cannot be written), whatever TMPDIR says:
 * `OSL_PIPE_<uid>_<our pipe name>` and its single-instance pipe, `OSL_PIPE_<uid>_SingleOfficeIPC_`
 * and the MD5 of the profile's URL in UTF-16, each byte in hex without leading zeros (as
 * LibreOffice's desktop/source/app/officeipcthread.cxx writes it).
 */
export function pipeFilesOf(profile: string): string[] {
  const uid = process.getuid?.() ?? 0;
  const digest = createHash('md5').update(Buffer.from(pathToFileURL(profile).href, 'utf16le')).digest();
  const singleInstance = `SingleOfficeIPC_${Array.from(digest, (byte) => byte.toString(16)).join('')}`;
  return ['/tmp', '/var/tmp'].flatMap((dir) => [pipeNameOf(profile), singleInstance].map((name) => join(dir, `OSL_PIPE_${uid}_${name}`)));
}

/** A profile and the pipe files of its instance, gone. */
export async function removeProfile(profile: string): Promise<void> {
  await Promise.all([profile, ...pipeFilesOf(profile)].map((path) => rm(path, { recursive: true, force: true })));
}

/** Removes the profiles (and pipe files) of processes that no longer run; returns how many. */
export function removeOrphanedProfiles(): Promise<number> {
  return removeOrphanedDirs(MADE_BY, removeProfile);
}
