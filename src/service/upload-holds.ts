/**
 * An upload between its pre-check and the end of `ConversionService.create`: it holds a place
 * among the account's active conversions and the credits it was estimated to cost, so that
 * uploads in flight cannot together pass limits that each passed alone.
 */
export interface UploadHold {
  readonly accountId: string;
  readonly credits: number;
  /** The upload's Idempotency-Key, if it has one. */
  readonly idempotencyKey: string | null;
  /** Gives the place and the credits back; harmless when called again. */
  release(): void;
  /** Resolves once released. */
  readonly released: Promise<void>;
}

/** What the other uploads in flight of an account hold. */
export interface Held {
  places: number;
  credits: number;
}

/** The holds of uploads in flight, by account. In memory: an upload lives in one process. */
export class UploadHolds {
  private readonly byAccount = new Map<string, Set<UploadHold>>();

  add(accountId: string, credits: number, idempotencyKey: string | null): UploadHold {
    let holds = this.byAccount.get(accountId);
    if (!holds) this.byAccount.set(accountId, (holds = new Set()));
    const set = holds;
    let settle!: () => void;
    const hold: UploadHold = {
      accountId,
      credits,
      idempotencyKey,
      released: new Promise<void>((resolve) => (settle = resolve)),
      release: () => {
        if (!set.delete(hold)) return;
        if (set.size === 0 && this.byAccount.get(accountId) === set) this.byAccount.delete(accountId);
        settle();
      },
    };
    set.add(hold);
    return hold;
  }

  /** An upload of the account in flight with this Idempotency-Key. */
  withKey(accountId: string, idempotencyKey: string): UploadHold | undefined {
    for (const hold of this.byAccount.get(accountId) ?? []) if (hold.idempotencyKey === idempotencyKey) return hold;
    return undefined;
  }

  /** The account's holds, less `except` (the request's own, which is not another upload). */
  heldBy(accountId: string, except?: UploadHold): Held {
    const held: Held = { places: 0, credits: 0 };
    for (const hold of this.byAccount.get(accountId) ?? []) {
      if (hold === except) continue;
      held.places++;
      held.credits += hold.credits;
    }
    return held;
  }
}
