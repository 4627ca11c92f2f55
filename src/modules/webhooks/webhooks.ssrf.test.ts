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

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:0808:0808::1'])(
    'allows %s',
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );
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
    for (const url of ['http://127.1/', 'http://2130706433/', 'http://0x7f000001/', 'http://[::1]:8080/', 'http://[::ffff:a9fe:a9fe]/']) {
      expect(await checkDestination(new URL(url), never), url).toEqual({ ok: false, reason: 'private' });
    }
    expect(await checkDestination(new URL('http://93.184.215.14/'), never)).toEqual({ ok: true });
  });
});
