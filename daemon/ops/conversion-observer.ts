import type { ConversionRecord } from '../../src/model/conversion.ts';
import type { ConversionStatus } from '../../src/model/status.ts';
import type { StoreObserver } from '../../src/store/observed-store.ts';
import type { DeliveryRecord } from '../../src/store/types.ts';
import type { Logger } from '../log.ts';
import type { DaemonMetrics } from './metrics.ts';

/** The engine a conversion runs on, as the logs and metrics name it. */
export type EngineOf = (record: { source: string; target: string; options?: Readonly<Record<string, unknown>> }) => string;

/**
 * What the daemon does with every conversion state change and webhook attempt: a `conversion`
 * log line, and a count in the metrics. The metrics are made after the system (they read its
 * registry and queue), so changes while the system opens are logged with engine `none` and not
 * counted, until `count` hands them over.
 */
export class ConversionObserver implements StoreObserver {
  private metrics: DaemonMetrics | null = null;
  private engineOf: EngineOf = () => 'none';

  constructor(private readonly logger: Logger) {}

  count(metrics: DaemonMetrics, engineOf: EngineOf): void {
    this.metrics = metrics;
    this.engineOf = engineOf;
  }

  onTransition(record: ConversionRecord, from: ConversionStatus | null): void {
    const engine = this.engineOf(record);
    this.metrics?.transition(record, from, engine);
    this.logger.log('info', 'conversion', {
      id: record.id, account: record.account_id, from, to: record.status,
      ...(record.status === 'processing' || record.status === 'succeeded' || record.status === 'failed' ? { engine } : {}),
      ...(record.error ? { code: record.error.code } : {}),
    });
  }

  onDeliveryAttempt(record: DeliveryRecord): void {
    this.metrics?.deliveryAttempt(record);
  }
}
