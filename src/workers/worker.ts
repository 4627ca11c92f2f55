/** A background worker of one process: stop resolves after its current item is finished. */
export interface Worker {
  readonly name: string;
  stop(): Promise<void>;
  status(): 'running' | 'stopped';
}
