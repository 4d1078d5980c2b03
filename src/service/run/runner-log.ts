/** Where the runner says what happened to a conversion (started, succeeded, failed, an internal error). */
export interface RunnerLog {
  (event: string, fields: Record<string, unknown>): void;
}
