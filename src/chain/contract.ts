/**
 * Calldata for contract calls: checking raw `data`, and encoding a Solidity function signature
 * (`approve(address,uint256)`) with JSON arguments (numbers as decimal strings) through viem.
 * Pure: no node is asked anything here.
 */
import { encodeFunctionData, getAddress, isAddress, parseAbiItem, type AbiFunction, type AbiParameter, type Hex } from 'viem';

/** Largest calldata accepted, in bytes. */
export const MAX_CALLDATA_BYTES = 64 * 1024;

const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;
const INTEGER_TYPE = /^u?int\d*$/;
const BYTES_TYPE = /^bytes\d*$/;
const ARRAY_TYPE = /^(.*)\[(\d*)\]$/;
const DECIMAL_INTEGER = /^-?\d{1,80}$/;
/** Nesting of arrays and tuples an argument may have (the body's depth limit bounds it anyway). */
const MAX_ARG_DEPTH = 16;

/** Why a `data` string is not calldata: 'format' or 'size'; null when it is. */
export function calldataProblem(data: string): 'format' | 'size' | null {
  if (!HEX_BYTES.test(data)) return 'format';
  return (data.length - 2) / 2 > MAX_CALLDATA_BYTES ? 'size' : null;
}

/** The function of a signature such as `approve(address,uint256)` (with or without `function `), or null. */
export function parseFunction(signature: string): AbiFunction | null {
  const text = signature.trim();
  if (text.length === 0 || text.length > 1024) return null;
  try {
    const item = parseAbiItem(text.startsWith('function ') ? text : `function ${text}`);
    return item.type === 'function' ? item : null;
  } catch {
    return null;
  }
}

class ArgError extends Error {}

function integerArg(v: unknown): bigint {
  if (typeof v === 'string' && DECIMAL_INTEGER.test(v.trim())) return BigInt(v.trim());
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  throw new ArgError('not an integer');
}

/** One JSON argument as viem wants it for `param`. */
function toArg(param: AbiParameter, v: unknown, depth: number): unknown {
  if (depth > MAX_ARG_DEPTH) throw new ArgError('too deep');
  const array = ARRAY_TYPE.exec(param.type);
  if (array) {
    if (!Array.isArray(v) || (array[2] !== '' && v.length !== Number(array[2]))) throw new ArgError('not an array');
    return v.map((item) => toArg({ ...param, type: array[1]! }, item, depth + 1));
  }
  if (param.type === 'tuple') {
    const components = (param as { components?: readonly AbiParameter[] }).components ?? [];
    const values = Array.isArray(v)
      ? v
      : v !== null && typeof v === 'object'
        ? components.map((c) => (v as Record<string, unknown>)[c.name ?? ''])
        : null;
    if (values === null || values.length !== components.length) throw new ArgError('not a tuple');
    const out = components.map((c, i) => toArg(c, values[i], depth + 1));
    return Array.isArray(v) || components.some((c) => !c.name) ? out : Object.fromEntries(components.map((c, i) => [c.name!, out[i]]));
  }
  if (INTEGER_TYPE.test(param.type)) return integerArg(v);
  if (param.type === 'address') {
    if (typeof v !== 'string' || !isAddress(v, { strict: false })) throw new ArgError('not an address');
    return getAddress(v.toLowerCase());
  }
  if (param.type === 'bool') {
    if (typeof v !== 'boolean') throw new ArgError('not a boolean');
    return v;
  }
  if (param.type === 'string') {
    if (typeof v !== 'string') throw new ArgError('not a string');
    return v;
  }
  if (BYTES_TYPE.test(param.type)) {
    if (typeof v !== 'string' || !HEX_BYTES.test(v)) throw new ArgError('not hex bytes');
    return v;
  }
  throw new ArgError(`unsupported type ${param.type}`);
}

/**
 * A lower bound of the ABI encoding's size of JSON arguments, in bytes, walked only until it
 * passes `limit`: every value takes at least one 32-byte word, a string at least its length / 2
 * more. Arguments whose bound passes MAX_CALLDATA_BYTES are refused before encoding (a 1 MiB
 * body of `0,` would otherwise encode to 16 MB on the event loop).
 */
export function encodedSizeFloor(v: unknown, limit = MAX_CALLDATA_BYTES, depth = 0): number {
  if (depth > MAX_ARG_DEPTH) return limit + 1;
  if (typeof v === 'string') return 32 + Math.floor(v.length / 64) * 32;
  if (v === null || typeof v !== 'object') return 32;
  let total = 0;
  for (const item of Array.isArray(v) ? v : Object.values(v)) {
    total += encodedSizeFloor(item, limit, depth + 1);
    if (total > limit) return total;
  }
  return Math.max(total, 32);
}

/** Calldata of `fn` called with `args` (JSON values), or null when they do not fit its parameters. */
export function encodeCall(fn: AbiFunction, args: unknown[]): Hex | null {
  if (args.length !== fn.inputs.length) return null;
  try {
    const values = fn.inputs.map((p, i) => toArg(p, args[i], 0));
    return encodeFunctionData({ abi: [fn], functionName: fn.name, args: values as never });
  } catch {
    // ArgError, or viem's own range checks (a uint8 of 300, a bytes4 of 5 bytes, ...).
    return null;
  }
}
