import type { CredentialAccess } from './credential-pool.ts';
import { atGroupAddress } from './group-address.ts';

/**
 * What failed a request on the way to its upstream such that other credentials would meet the
 * same, and are passed over without an attempt (they would spend max_attempts_per_request before
 * a Group reached another way had its turn):
 * - a managed proxy that failed at the gateway's side (failedAtProxy): every credential behind
 *   it, a Group's or the global proxy, in any Group;
 * - the Group's address (a connection that never opened, a refused certificate) through the
 *   proxy it was reached by, or none: the Group's other credentials there, the same way. The
 *   next Group has its turn (nextGroup).
 * Nothing is allocated for the proxies until one fails.
 */
export class UnreachedTargets {
  private proxies: Set<string> | undefined;
  private groupAddress = false;
  private groupAddressVia: string | undefined;

  /** Something is noted: a credential's proxy is needed to tell whether it is passed over. */
  get noted(): boolean {
    return this.proxies !== undefined || this.groupAddress;
  }

  /** The next Group's turn: its address has not failed. */
  nextGroup(): void {
    this.groupAddress = false;
    this.groupAddressVia = undefined;
  }

  /** A managed proxy failed (failedAtProxy); undefined (no proxy) notes nothing. */
  proxyFailed(proxy: string | undefined): void {
    if (proxy !== undefined) (this.proxies ??= new Set()).add(proxy);
  }

  /** The current Group's address failed, reached through `via` (or no proxy). */
  groupAddressFailed(via: string | undefined): void {
    this.groupAddress = true;
    this.groupAddressVia = via;
  }

  /** The credential's proxy failed this request. */
  behindFailedProxy(proxy: string | undefined): boolean {
    return proxy !== undefined && this.proxies?.has(proxy) === true;
  }

  /** The credential is at its Group's address that failed this request, reached the same way. */
  atFailedGroupAddress(access: CredentialAccess, group: { readonly base_url: string | null }, proxy: string | undefined): boolean {
    return this.groupAddress && atGroupAddress(access, group) && proxy === this.groupAddressVia;
  }
}
