/**
 * The order a tool batch's calls start in: batch order, at most `concurrency` at once, and calls
 * that must run alone (`unsafe` tools, docs/decisions/012) only when nothing else runs. No I/O of
 * its own: the caller's `run` does the work and keeps each call's outcome by its index.
 */

/** How a batch is scheduled. */
export interface BatchSchedule {
  /** Most calls running at once (an integer ≥ 1; 1 runs the batch one call at a time). */
  concurrency: number;
  /** True for a call that runs alone: it starts once every earlier call has settled, and nothing starts until it has. */
  runsAlone: (index: number) => boolean;
  /** Checked before each start: once true, no further call starts (a cancelled run). */
  stopped: () => boolean;
}

/**
 * Run `run(index)` for each index of a batch of `count` calls, started in batch order under
 * `schedule`. Resolves once every started call has settled. The first `run` that rejects rejects
 * the batch at once (no further call starts; the caller aborts those still running).
 * @example
 * await runBatch(calls.length, { concurrency: 3, runsAlone: () => false, stopped: () => signal.aborted },
 *   async (index) => { outcomes[index] = await execute(calls[index]); });
 */
export function runBatch(
  count: number,
  schedule: BatchSchedule,
  run: (index: number) => Promise<void>,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let next = 0;
    let running = 0;
    /** The call running alone, while one does. */
    let alone = false;
    let failed = false;
    const pump = () => {
      if (failed) return;
      while (next < count && !alone) {
        const runsAlone = schedule.runsAlone(next);
        if (running >= (runsAlone ? 1 : schedule.concurrency) || schedule.stopped()) break;
        const index = next;
        next += 1;
        running += 1;
        alone = runsAlone;
        let started: Promise<void>;
        try {
          started = run(index);
        } catch (error) {
          started = Promise.reject(error);
        }
        started.then(
          () => {
            running -= 1;
            if (runsAlone) alone = false;
            pump();
          },
          (error: unknown) => {
            if (failed) return;
            failed = true;
            reject(error);
          },
        );
      }
      // Nothing running and nothing more to start (all done, or stopped): the batch is over.
      if (running === 0) resolve();
    };
    pump();
  });
}
