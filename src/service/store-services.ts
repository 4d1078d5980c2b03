import type { Store } from '../store/types.ts';
import { AccountService } from './accounts.ts';
import type { ServiceConfig } from './config.ts';
import { DeliveryLog } from './deliveries.ts';
import { MaintenanceSwitch } from './maintenance.ts';

/** The services that need nothing but the store: all an admin command uses, with or without a running daemon. */
export interface StoreServices {
  accounts: AccountService;
  maintenance: MaintenanceSwitch;
  deliveries: DeliveryLog;
}

export function storeServices(store: Store, config: ServiceConfig): StoreServices {
  return { accounts: new AccountService(store, config), maintenance: new MaintenanceSwitch(store), deliveries: new DeliveryLog(store) };
}
