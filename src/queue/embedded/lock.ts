/**
 * The embedded queue's directory lock, fenced: a process that takes it bumps the directory's epoch,
 * and checks the epoch is still its own before each write. A process frozen past the lock's
 * staleness (10 s: GC, SIGSTOP, a blocking tool) loses the directory to the next one; when it wakes
 * its writes are refused with `QueueFencedError`, and it never removes the new holder's lock.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import lockfile from "proper-lockfile";
import { QueueFencedError, RunQueueStateError } from "../run-queue.ts";
import { bumpEpoch, readEpoch } from "./files.ts";

/** How old the lock's mtime gets before another process may take the directory (ms). */
export const LOCK_STALE_MS = 10_000;

/** The directory's lock, held by a worker (or by a client pruning while no worker does). */
export class DirectoryLock {
  readonly #dir: string;
  readonly #onLost: (error: QueueFencedError) => void;
  #unlock: (() => Promise<void>) | undefined;
  #epoch: number | undefined;
  #lost: QueueFencedError | undefined;

  /** `onLost` hears the first sign that another process took the directory (once). */
  constructor(dir: string, onLost: (error: QueueFencedError) => void = () => {}) {
    this.#dir = dir;
    this.#onLost = onLost;
  }

  /** Whether a process holds the directory now (its lock is not stale). */
  static isHeld(dir: string): Promise<boolean> {
    return lockfile.check(dir, { lockfilePath: join(dir, "queue.lock"), stale: LOCK_STALE_MS });
  }

  /** The epoch this process took the directory at. */
  get epoch(): number | undefined {
    return this.#epoch;
  }

  /**
   * Take the lock (waiting up to `waitForLockMs` for a live holder's, or for a dead one's to go
   * stale) and bump the epoch. Throws proper-lockfile's error when another process holds it.
   */
  async acquire(waitForLockMs = 0): Promise<void> {
    const retries = Math.ceil(waitForLockMs / 500);
    this.#unlock = await lockfile.lock(this.#dir, {
      lockfilePath: join(this.#dir, "queue.lock"),
      stale: LOCK_STALE_MS,
      retries: { retries, minTimeout: 500, maxTimeout: 500, factor: 1 },
      fs: this.#fs(),
      // proper-lockfile's refresh found the lock replaced or unrefreshable: the directory is another's.
      onCompromised: (error) => this.#lose(readEpoch(this.#dir), error.message),
    });
    this.#epoch = bumpEpoch(this.#dir);
  }

  /** Throw `QueueFencedError` (for `runId`'s write, if given) unless the directory is still this process's. */
  assertHeld(runId?: string): void {
    if (this.#epoch === undefined)
      throw new RunQueueStateError("The run queue's directory lock is not taken");
    if (!this.#lost) {
      const current = readEpoch(this.#dir);
      if (current !== this.#epoch) this.#lose(current);
    }
    if (this.#lost) {
      throw runId ? new QueueFencedError(this.#dir, this.#epoch, this.#lost.currentEpoch, runId) : this.#lost;
    }
  }

  /** Let go of the lock; a lock another process took is left to it. */
  async release(): Promise<void> {
    const unlock = this.#unlock;
    this.#unlock = undefined;
    if (!unlock) return;
    try {
      await unlock();
    } catch (error) {
      // Compromised (taken over): proper-lockfile has let go already, and the lock is the new holder's.
      if (!this.#lost && (error as NodeJS.ErrnoException).code !== "ERELEASED") throw error;
    }
  }

  #lose(currentEpoch: number | undefined, detail?: string): void {
    if (this.#lost || this.#epoch === undefined) return;
    this.#lost = new QueueFencedError(this.#dir, this.#epoch, currentEpoch);
    if (detail) this.#lost.message += ` (${detail})`;
    this.#onLost(this.#lost);
  }

  /**
   * proper-lockfile's file system, except that it cannot remove the lock once the directory is
   * another process's: not on release, and not in its exit handler (which removes every lock it
   * thinks it holds). Taking a stale lock (before this process has an epoch) removes it as usual.
   */
  #fs(): typeof fs {
    const mayRemove = () =>
      this.#epoch === undefined || (!this.#lost && readEpoch(this.#dir) === this.#epoch);
    return {
      ...fs,
      rmdir: ((path: fs.PathLike, callback: fs.NoParamCallback) => {
        if (mayRemove()) fs.rmdir(path, callback);
        else callback(null);
      }) as typeof fs.rmdir,
      rmdirSync: (path: fs.PathLike) => {
        if (mayRemove()) fs.rmdirSync(path);
      },
    };
  }
}
