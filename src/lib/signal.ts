/**
 * An in-process wake-up: `emit()` calls every subscriber at once (synchronously), `on(fn)`
 * subscribes and returns the unsubscribe. It carries no data and promises nothing across
 * processes: the workers it wakes still poll (the outbox's recorded events, the broadcasts the
 * watcher looks for sooner, the blocks the charge worker settles on).
 */
import { EventEmitter } from 'node:events';

export interface Signal {
  on(fn: () => void): () => void;
  emit(): void;
}

export function inProcessSignal(): Signal {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    on(fn) {
      emitter.on('signal', fn);
      return () => emitter.off('signal', fn);
    },
    emit() {
      emitter.emit('signal');
    },
  };
}
