/** Submitting as one account and waiting for the end: the benches' own small client of /v1/conversions. */
import type { BenchDaemon } from './daemon.ts';
import { json, multipartBody, send } from './http.ts';

export interface BenchConversion {
  id: string;
  status: string;
  error: { code: string } | null;
}

/** POST /v1/conversions with `wait`; the conversion, or null with the status when it was refused. */
export async function submitAs(daemon: BenchDaemon, key: string, name: string, data: Buffer, target: string, wait: number): Promise<{ status: number; conversion: BenchConversion | null; body: string }> {
  const { contentType, body } = multipartBody({ target, wait: String(wait) }, name, 'application/octet-stream', data);
  const answer = await send(daemon, 'POST', '/v1/conversions', { authorization: `Bearer ${key}`, 'content-type': contentType }, body);
  const accepted = answer.status === 200 || answer.status === 201 || answer.status === 202;
  return { status: answer.status, conversion: accepted ? json<BenchConversion>(answer) : null, body: accepted ? '' : answer.body.toString('utf8') };
}

/** Waits (GET with `wait`) until the conversion has ended; the daemon's own limits end every one. */
export async function endedAs(daemon: BenchDaemon, key: string, id: string): Promise<BenchConversion> {
  for (;;) {
    const view = json<BenchConversion>(await send(daemon, 'GET', `/v1/conversions/${id}?wait=30`, { authorization: `Bearer ${key}` }));
    if (['succeeded', 'failed', 'cancelled'].includes(view.status)) return view;
  }
}
