/** One file through a running convd: multipart submission with `wait`, polling past it, download. */
import type { ConversionWarning } from '../../src/model/conversion.ts';
import { ACTIVE_STATUSES, type ConversionStatus } from '../../src/model/status.ts';
import type { BenchDaemon } from './daemon.ts';
import { json, multipartBody, send } from './http.ts';

interface Conversion {
  id: string;
  status: ConversionStatus;
  error?: { code?: string; message?: string } | null;
  warnings?: ConversionWarning[];
}

export type Converted = { ok: true; data: Buffer; warnings: ConversionWarning[] } | { ok: false; error: string };

export async function convertFile(daemon: BenchDaemon, name: string, type: string, data: Buffer, target: string): Promise<Converted> {
  const auth = { authorization: `Bearer ${daemon.apiKey}` };
  const { contentType, body } = multipartBody({ target, wait: '30' }, name, type, data);
  const created = await send(daemon, 'POST', '/v1/conversions', { ...auth, 'content-type': contentType }, body);
  if (created.status !== 200 && created.status !== 201 && created.status !== 202) {
    return { ok: false, error: `submission answered ${created.status}: ${created.body.toString('utf8').slice(0, 300)}` };
  }
  let conversion = json<Conversion>(created);
  // The daemon's own time limit ends every conversion, so the waiting needs no limit of its own.
  while (ACTIVE_STATUSES.has(conversion.status)) {
    conversion = json<Conversion>(await send(daemon, 'GET', `/v1/conversions/${conversion.id}?wait=30`, auth));
  }
  if (conversion.status !== 'succeeded') {
    return { ok: false, error: `${conversion.status}: ${conversion.error?.code ?? ''} ${conversion.error?.message ?? ''}`.trim() };
  }
  const download = await send(daemon, 'GET', `/v1/conversions/${conversion.id}/download`, auth);
  if (download.status !== 200) return { ok: false, error: `download answered ${download.status}` };
  return { ok: true, data: download.body, warnings: conversion.warnings ?? [] };
}
