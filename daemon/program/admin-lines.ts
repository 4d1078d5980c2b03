/** The admin commands' results as people read them (--json prints them as they are). */

export interface LinkOut { url: string; expires_at: string }
export interface AccountOut { id: string; name: string; plan: string; credits: { remaining: number | null; resets_at: string | null } }
export interface KeyOut { id: string; account: string; prefix?: string; key?: string; scopes: string[]; revoked_at?: string | null; name?: string; last_used_at?: string | null }
export interface DeliveryOut {
  id: string; conversion_id: string; event: string; url: string; status: string; next_attempt_at: string | null;
  attempts: { at: string; status_code: number | null; error: string | null }[];
}

export const linkLines = (link: LinkOut) => `sign-in link (works once, until ${link.expires_at}):\n  ${link.url}`;

export const accountLine = (a: AccountOut) =>
  `${a.id}  plan=${a.plan}  credits=${a.credits.remaining ?? 'unmetered'}${a.name ? `  name=${a.name}` : ''}`;

export const keyLine = (k: KeyOut) => `${k.id}  ${k.prefix ?? ''}…  scopes=${k.scopes.join(',')}${k.name ? `  name=${k.name}` : ''}  last used ${k.last_used_at ?? 'never'}${k.revoked_at ? '  revoked' : ''}`;

export const deliveryLine = (d: DeliveryOut) => {
  const attempts = d.attempts.map((a) => a.status_code ?? a.error ?? '?').join(', ');
  const next = d.next_attempt_at ? `  next ${d.next_attempt_at}` : '';
  return `${d.id}  ${d.conversion_id}  ${d.event}  ${d.status}  attempts [${attempts}]${next}  ${d.url}`;
};
