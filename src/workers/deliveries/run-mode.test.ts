import { describe, expect, it } from 'vitest';
import { RunState } from './run-mode.js';

describe('delivery worker modes', () => {
  it('go created → running → stopping → draining → stopped', () => {
    const s = new RunState();
    expect(s.mode).toBe('created');
    s.transition('created', 'running');
    s.transition('running', 'stopping');
    s.transition('stopping', 'draining');
    s.transition('draining', 'stopped');
    expect(s.mode).toBe('stopped');
  });

  it('refuse a move that is not a transition, and stay where they were', () => {
    const s = new RunState();
    expect(() => s.transition('created', 'stopping')).toThrow('delivery worker: created → stopping is not a transition');
    expect(s.mode).toBe('created');
    s.transition('created', 'running');
    expect(() => s.transition('running', 'draining')).toThrow('is not a transition');
    expect(() => s.transition('running', 'running')).toThrow('is not a transition');
    expect(s.mode).toBe('running');
  });

  it('refuse a move from a mode the worker is not in (a second start, a start after stop)', () => {
    const s = new RunState();
    s.transition('created', 'running');
    expect(() => s.transition('created', 'running')).toThrow('delivery worker: created → running asked in mode running');
    s.transition('running', 'stopping');
    s.transition('stopping', 'draining');
    s.transition('draining', 'stopped');
    expect(() => s.transition('stopped', 'running')).toThrow('delivery worker: stopped → running is not a transition');
    expect(() => s.transition('created', 'running')).toThrow('asked in mode stopped');
    expect(s.mode).toBe('stopped');
  });
});
