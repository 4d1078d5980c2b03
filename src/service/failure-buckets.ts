/**
 * Failed attempts allowed per key and minute (sign-ins by address and by account name): a token
 * bucket per key, taken before the attempt and given back when it did not fail, so only failures
 * stay counted. In this process (daemon/http/auth-failures.ts), or in the database every node
 * shares (SharedFailureBuckets), so a client spreading its guesses over the nodes gets no more.
 */
export interface FailureBuckets {
  /** Takes one attempt for `key`: null when it may try, else the seconds to wait. */
  take(key: string, perMinute: number): number | null | Promise<number | null>;
  /** The attempt taken for `key` did not fail. */
  giveBack(key: string, perMinute: number): void | Promise<void>;
}
