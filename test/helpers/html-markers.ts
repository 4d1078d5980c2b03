/**
 * Pages that write a marker into every kind of browser storage (localStorage, sessionStorage,
 * IndexedDB, a cookie, Cache Storage, a BroadcastChannel kept answering) and pages that read them
 * all back, each printing `kind=value` (none when absent): the tests of the HTML engine's account
 * reuse read a PDF's text to see what a conversion found of an earlier one.
 */
import { pdfPageTexts } from './pdf-text.ts';

/** Reads every marker a page may have left, and prints `kind=value` for each (none when absent). */
const READ_MARKERS = `
async function readMarkers() {
  const found = {};
  found.local = localStorage.getItem('m');
  found.session = sessionStorage.getItem('m');
  found.cookie = document.cookie.includes('m=MARK') ? 'MARK' : null;
  found.idb = await new Promise((resolve) => {
    const request = indexedDB.open('m');
    request.onsuccess = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains('s')) { db.close(); resolve(null); return; }
      const get = db.transaction('s').objectStore('s').get('k');
      get.onsuccess = () => { db.close(); resolve(get.result ?? null); };
      get.onerror = () => resolve(null);
    };
    request.onerror = () => resolve(null);
  });
  found.cache = self.caches ? await caches.open('m').then((cache) => cache.match('/m')).then((hit) => (hit ? hit.text() : null)) : 'unavailable';
  found.broadcast = await new Promise((resolve) => {
    const channel = new BroadcastChannel('m');
    channel.onmessage = (event) => resolve(event.data);
    channel.postMessage('ping');
    setTimeout(() => resolve(null), 400);
  });
  return Object.entries(found).map(([kind, value]) => kind + '=' + (value ?? 'none')).join(' ');
}`;

/** Writes all six markers, keeps the BroadcastChannel answering, then reads them back (the control). */
export const WRITER = `<!doctype html><html><body><p id="out">writing</p><script>${READ_MARKERS}
(async () => {
  localStorage.setItem('m', 'MARK');
  sessionStorage.setItem('m', 'MARK');
  document.cookie = 'm=MARK; path=/; max-age=86400';
  await new Promise((resolve, reject) => {
    const request = indexedDB.open('m', 1);
    request.onupgradeneeded = () => request.result.createObjectStore('s');
    request.onsuccess = () => {
      const tx = request.result.transaction('s', 'readwrite');
      tx.objectStore('s').put('MARK', 'k');
      tx.oncomplete = () => { request.result.close(); resolve(); };
      tx.onerror = reject;
    };
    request.onerror = reject;
  });
  if (self.caches) await (await caches.open('m')).put('/m', new Response('MARK'));
  const channel = new BroadcastChannel('m');
  channel.onmessage = () => channel.postMessage('MARK');
  window.keep = channel;
  document.getElementById('out').textContent = 'wrote ' + await readMarkers();
  document.body.insertAdjacentHTML('beforeend', '<i id="done"></i>');
})();
</script></body></html>`;

export const READER = `<!doctype html><html><body><p id="out">reading</p><script>${READ_MARKERS}
readMarkers().then((text) => {
  document.getElementById('out').textContent = 'read ' + text;
  document.body.insertAdjacentHTML('beforeend', '<i id="done"></i>');
});
</script></body></html>`;

export const KINDS = ['local', 'session', 'cookie', 'idb', 'cache', 'broadcast'];

export async function markersIn(pdf: string): Promise<Record<string, string>> {
  const text = (await pdfPageTexts(pdf)).join(' ');
  return Object.fromEntries(KINDS.map((kind) => [kind, new RegExp(`${kind}=(\\w+)`).exec(text)?.[1] ?? `missing from "${text.slice(0, 200)}"`]));
}
