/**
 * The SSRF guard: a webhook URL must not reach the service's own host, its private network or a
 * cloud metadata endpoint. A host name is resolved (every address, as the connection would) and
 * refused when ANY address is loopback, private, link-local, CGNAT, metadata, unspecified,
 * multicast, reserved or documentation-only, for IPv4 and IPv6. An IPv6 address that carries an
 * IPv4 address is judged by the IPv4 address it carries (IPv4-mapped `::ffff:0:0/96`, the
 * IPv4-translated `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`; the deprecated
 * IPv4-compatible `::/96` is refused whole), and Teredo `2001::/32` is refused whole: its
 * client address is obfuscated and its relay can forward to any IPv4 address, and no webhook
 * receiver needs it.
 *
 * Checked twice: on create/update (a 422 for the caller) and again by the delivery worker on
 * every connection (`guardedLookup`, used as the socket's DNS lookup), because DNS can change
 * between the two — the classic rebinding attack. Both are skipped when
 * `WEBHOOK_ALLOW_PRIVATE=true`.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';

/** [network, prefix length] over the 32-bit IPv4 space. */
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", incl. the unspecified 0.0.0.0
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (also Alibaba's metadata 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. the 169.254.169.254 metadata endpoint
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. broadcast 255.255.255.255
];

/** [network, prefix length] over the 128-bit IPv6 space. */
const V6_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ['::', 96], // unspecified, loopback ::1 and the deprecated IPv4-compatible ::a.b.c.d
  ['64:ff9b:1::', 48], // local-use NAT64
  ['2001::', 32], // Teredo: tunnels to an IPv4 address (server and obfuscated client inside)
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
  ['2001:2::', 48], // benchmarking
  ['2001:10::', 28], // ORCHID
  ['fc00::', 7], // unique local (incl. AWS's fd00:ec2::254 metadata)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

function v4ToBigInt(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** 128-bit value of an IPv6 address (handles `::` and a dotted IPv4 tail). */
function v6ToBigInt(ip: string): bigint {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = Number(v4ToBigInt(last));
    tail = [v4 >>> 16, v4 & 0xffff];
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head = '', rest] = text.split('::');
  const headParts = head === '' ? [] : head.split(':');
  const restParts = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? 0 : 8 - headParts.length - restParts.length;
  const groups = [...headParts, ...Array<string>(fill).fill('0'), ...restParts].map((g) => parseInt(g, 16));
  if (tail.length === 2) groups.splice(6, 2, tail[0]!, tail[1]!);
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

function inBlocks(value: bigint, bits: number, blocks: ReadonlyArray<readonly [string, number]>, parse: (s: string) => bigint): boolean {
  return blocks.some(([net, prefix]) => {
    const shift = BigInt(bits - prefix);
    return value >> shift === parse(net) >> shift;
  });
}

function v4Blocked(value: bigint): boolean {
  return inBlocks(value, 32, V4_BLOCKED, v4ToBigInt);
}

/**
 * Whether a literal IP address must never be a webhook destination. Anything that is not an IP
 * address at all is refused too (the caller resolves names first).
 */
export function isForbiddenAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '');
  const kind = isIP(bare);
  if (kind === 4) return v4Blocked(v4ToBigInt(bare));
  if (kind !== 6) return true;
  const v = v6ToBigInt(bare);
  const hi96 = v >> 32n;
  const low32 = v & 0xffffffffn;
  if (hi96 === 0xffffn) return v4Blocked(low32); // ::ffff:a.b.c.d, IPv4-mapped
  if (hi96 === 0xffff0000n) return v4Blocked(low32); // ::ffff:0:a.b.c.d, IPv4-translated (SIIT)
  if (hi96 === 0x64ff9b0000000000000000n) return v4Blocked(low32); // 64:ff9b::a.b.c.d, NAT64
  if (v >> 112n === 0x2002n) return v4Blocked((v >> 80n) & 0xffffffffn); // 2002:aabb:ccdd::, 6to4
  return inBlocks(v, 128, V6_BLOCKED, v6ToBigInt);
}

export type DestinationVerdict = { ok: true } | { ok: false; reason: 'private' | 'unresolvable' };

export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });

/** Resolve the URL's host and judge every address it resolves to. */
export async function checkDestination(url: URL, resolver: Resolver = systemResolver): Promise<DestinationVerdict> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) return isForbiddenAddress(host) ? { ok: false, reason: 'private' } : { ok: true };
  let addresses: string[];
  try {
    addresses = await resolver(host);
  } catch {
    return { ok: false, reason: 'unresolvable' };
  }
  if (addresses.length === 0) return { ok: false, reason: 'unresolvable' };
  return addresses.some(isForbiddenAddress) ? { ok: false, reason: 'private' } : { ok: true };
}

export class ForbiddenDestinationError extends Error {
  readonly code = 'EWEBHOOKPRIVATE';
  constructor(host: string) {
    super(`${host} resolves to a private or local address`);
    this.name = 'ForbiddenDestinationError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A drop-in for `dns.lookup` given to the socket: resolves as usual, then fails the connection
 * when any address is forbidden, so a name that now points inside cannot be reached.
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.length === 0 || addresses.some((a) => isForbiddenAddress(a.address))) {
      return callback(new ForbiddenDestinationError(hostname) as NodeJS.ErrnoException, []);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    return callback(null, first.address, first.family);
  });
}
