/**
 * The idle pages of `account` reuse: each kept under the one account it served, at most `limit`
 * over all accounts, the least recently used going first, so that a thousand accounts do not
 * make a thousand pages. Generic over what a page is, so that the rule is tested alone.
 */
export class AccountPages<P> {
  /** Insertion order is recency: the first entry is the least recently used. */
  private readonly pages = new Map<P, string>();

  constructor(private readonly limit: number) {}

  /** The account's most recently used idle page that `usable` accepts, taken out of the pool. */
  take(tenant: string, usable: (page: P) => boolean): P | undefined {
    let found: P | undefined;
    for (const [page, owner] of this.pages) if (owner === tenant && usable(page)) found = page;
    if (found !== undefined) this.pages.delete(found);
    return found;
  }

  /** Keeps `page` idle under `tenant`; returns the pages this pushes out, to be closed. */
  give(tenant: string, page: P): P[] {
    this.pages.delete(page);
    this.pages.set(page, tenant);
    const evicted: P[] = [];
    for (const oldest of this.pages.keys()) {
      if (this.pages.size <= this.limit) break;
      this.pages.delete(oldest);
      evicted.push(oldest);
    }
    return evicted;
  }

  /** Takes `page` out if it is idle; true when it was. */
  remove(page: P): boolean {
    return this.pages.delete(page);
  }

  /** Takes out every idle page `which` selects (a retired browser's), to be closed. */
  drop(which: (page: P) => boolean): P[] {
    const dropped = [...this.pages.keys()].filter(which);
    for (const page of dropped) this.pages.delete(page);
    return dropped;
  }

  /** Every idle page described, least recently used first. */
  snapshot<T>(describe: (page: P, tenant: string) => T): T[] {
    return [...this.pages].map(([page, tenant]) => describe(page, tenant));
  }
}
