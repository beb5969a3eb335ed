// The session's events (training:progress, training:done, workspace:changed, session:changed) to every
// subscriber of every face.
import type { Logger } from '../../core/log';
import type { ApiEvent } from '../types';

export class SessionEvents {
  private readonly listeners = new Set<(event: ApiEvent) => void>();

  constructor(
    private readonly logger: Logger,
    /** Rewrites a finished run's message for the user (the session's temporary paths named: SessionFolder.showNames). */
    private readonly showNames: (message: string) => string = (message) => message,
  ) {}

  /** Returns the function that unsubscribes. */
  subscribe(listener: (event: ApiEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // A listener's failure must not reach the engine (a throwing progress callback cancels the run): the
  // session goes on and the failure is logged, naming the event and its run.
  emit(given: ApiEvent): void {
    const event: ApiEvent = given.event === 'training:done' && given.payload.message
      ? { event: 'training:done', payload: { ...given.payload, message: this.showNames(given.payload.message) } }
      : given;
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.error(`a listener of ${event.event}${'runId' in event.payload ? ` (${event.payload.runId})` : ''} failed`, error);
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
