// The sweeper tests' own contracts (test/sweeper/OddTokens.sol), compiled with the solc npm package
// and cached in memory and on disk as test/helpers/erc20.ts caches its test contracts.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Abi, Hex } from 'viem';

export const ODD_CONTRACTS = [
  'PlainToken',
  'RefusingToken',
  'NoReturnToken',
  'FalseToken',
  'LyingToken',
  'FeeToken',
  'ReentrantToken',
  'RejectingReceiver',
] as const;
export type OddContractName = (typeof ODD_CONTRACTS)[number];
export type OddContracts = Record<OddContractName, { abi: Abi; bytecode: Hex }>;

const SOURCE_NAMES = ['OddTokens.sol'];

function compilerInput(): string {
  const read = (name: string) => readFileSync(fileURLToPath(new URL(`./${name}`, import.meta.url)), 'utf8');
  return JSON.stringify({
    language: 'Solidity',
    sources: Object.fromEntries(SOURCE_NAMES.map((name) => [name, { content: read(name) }])),
    settings: {
      evmVersion: 'paris',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  });
}

let memoryCache: OddContracts | undefined;

/** Compiles the sources (cached per process, and on disk by the sha256 of the compiler input). */
export function compileOddContracts(): OddContracts {
  if (memoryCache) return memoryCache;
  const input = compilerInput();
  const digest = createHash('sha256').update(input).digest('hex');
  const path = fileURLToPath(new URL(`../../node_modules/.cache/wallet-service-contracts/${digest}.json`, import.meta.url));
  try {
    memoryCache = JSON.parse(readFileSync(path, 'utf8')) as OddContracts;
    if (ODD_CONTRACTS.every((name) => memoryCache?.[name]?.bytecode.startsWith('0x'))) return memoryCache;
  } catch {
    // Missing or unreadable: compile.
  }
  memoryCache = compile(input);
  try {
    mkdirSync(dirname(path), { recursive: true });
    // Write-then-rename so parallel test workers never read a half-written file.
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(tmp, JSON.stringify(memoryCache));
    renameSync(tmp, path);
  } catch {
    // The disk cache is only an optimisation.
  }
  return memoryCache;
}

interface SolcOutput {
  errors?: Array<{ severity: string; formattedMessage?: string; message: string }>;
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

function compile(input: string): OddContracts {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const output = JSON.parse(solc.compile(input)) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc:\n${errors.map((e) => e.formattedMessage ?? e.message).join('\n')}`);
  const contracts = Object.assign({}, ...SOURCE_NAMES.map((file) => output.contracts?.[file] ?? {})) as NonNullable<
    SolcOutput['contracts']
  >[string];
  const picked = {} as OddContracts;
  for (const name of ODD_CONTRACTS) {
    const object = contracts[name]?.evm.bytecode.object;
    if (!contracts[name] || !object) throw new Error(`solc output has no bytecode for ${name}`);
    picked[name] = { abi: contracts[name].abi, bytecode: `0x${object}` };
  }
  return picked;
}
