import { describe, expect, it } from 'vitest';
import { checkDestination, isForbiddenAddress } from './webhooks.ssrf.js';

describe('isForbiddenAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '100.64.0.1',
    '100.100.100.200',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '192.0.0.170',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::10.0.0.1',
    '2002:c0a8:0101::1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1%eth0',
    'ff02::1',
    '2001:db8::1',
    'not-an-ip',
  ])('refuses %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  // Every IPv6 form that carries an IPv4 address (issue 47, g): judged by the IPv4 address inside,
  // or refused whole (Teredo, IPv4-compatible), in each spelling the URL parser or a resolver gives.
  it.each([
    // IPv4-mapped ::ffff:0:0/96, dotted, hex, fully written out, upper case, bracketed
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '0:0:0:0:0:ffff:7f00:1',
    '0000:0000:0000:0000:0000:FFFF:7F00:0001',
    '[::ffff:7f00:1]',
    '::ffff:10.0.0.1',
    '::ffff:a00:1',
    '::ffff:c0a8:101',
    '::ffff:a9fe:a9fe',
    '::ffff:0.0.0.0',
    // IPv4-translated (SIIT) ::ffff:0:0:0/96
    '::ffff:0:127.0.0.1',
    '::ffff:0:7f00:1',
    '::ffff:0:a9fe:a9fe',
    // IPv4-compatible ::/96 (deprecated): refused whole, a public address inside too
    '::8.8.8.8',
    '::808:808',
    // NAT64 64:ff9b::/96 and the local-use 64:ff9b:1::/48
    '64:ff9b::7f00:1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::808:808',
    // 6to4 2002::/16: the IPv4 address is bits 16-47
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    '2002:0a00:0001:ffff::1',
    // Teredo 2001::/32: refused whole (server 65.54.227.120, client obfuscated), whatever is inside
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001::7f00:1',
    '2001:0:7f00:1::',
    '2001:0:0808:0808:0:0:f7f7:f7f7',
  ])('refuses the IPv4-carrying form %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '::ffff:0:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:4860:4860::8888',
    '2001:1::1',
  ])('allows the public form %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
  ])('allows %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });
});

describe('checkDestination', () => {
  const resolver = (map: Record<string, string[]>) => async (host: string) => {
    const v = map[host];
    if (!v) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return v;
  };

  it('refuses a name when any of its addresses is private', async () => {
    const r = resolver({ 'mixed.example': ['93.184.215.14', '10.0.0.1'], 'public.example': ['93.184.215.14', '2606:4700:4700::1111'] });
    expect(await checkDestination(new URL('https://mixed.example/x'), r)).toEqual({ ok: false, reason: 'private' });
    expect(await checkDestination(new URL('https://public.example/x'), r)).toEqual({ ok: true });
    expect(await checkDestination(new URL('https://missing.example/x'), r)).toEqual({ ok: false, reason: 'unresolvable' });
  });

  it('judges IP literals without resolving, in every URL spelling', async () => {
    const never = async () => {
      throw new Error('must not resolve');
    };
    for (const url of [
      'http://127.1/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://[::1]:8080/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[0:0:0:0:0:ffff:7f00:1]:8080/',
      'http://[::ffff:0:7f00:1]/',
      'http://[64:ff9b::127.0.0.1]/',
      'http://[2002:7f00:1::]/',
      'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
    ]) {
      expect(await checkDestination(new URL(url), never), url).toEqual({ ok: false, reason: 'private' });
    }
    expect(await checkDestination(new URL('http://93.184.215.14/'), never)).toEqual({ ok: true });
  });
});
