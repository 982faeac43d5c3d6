/**
 * Promises that settle when something changes, by key: a run's record, or "work" for idle
 * workers. Shared by the queue engines.
 */
export class Waiters {
  readonly #waiters = new Map<string, Set<() => void>>();

  /**
   * Resolve at the next `notify(key)` (or `notifyAll`), or after `timeoutMs` when given; reject
   * with the signal's reason when it aborts. Nothing is left behind once it settles.
   */
  next(key: string, options: { timeoutMs?: number; signal?: AbortSignal | undefined } = {}): Promise<void> {
    const { timeoutMs, signal } = options;
    return new Promise((resolve, reject) => {
      const waiters = this.#waiters.get(key) ?? new Set<() => void>();
      this.#waiters.set(key, waiters);
      let timer: NodeJS.Timeout | undefined;
      const settle = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.#waiters.delete(key);
        signal?.removeEventListener("abort", aborted);
      };
      const done = () => {
        settle();
        resolve();
      };
      const aborted = () => {
        settle();
        reject(signal?.reason);
      };
      if (timeoutMs !== undefined) timer = setTimeout(done, timeoutMs);
      waiters.add(done);
      signal?.addEventListener("abort", aborted, { once: true });
    });
  }

  /** Wake everyone waiting on `key`. */
  notify(key: string): void {
    for (const waiter of [...(this.#waiters.get(key) ?? [])]) waiter();
  }

  /** Wake everyone (the queue closed). */
  notifyAll(): void {
    for (const key of [...this.#waiters.keys()]) this.notify(key);
  }
}
