/**
 * What every peer adapter of `npm run bench:peers` provides: one run of the scenario (a mock model
 * that answers each step at once with one call of a no-op tool, the last step a call of the
 * terminal tool) through the peer's own agent loop, timed around the loop alone.
 */

/** One framework's agent loop under the peers benchmark. */
export interface PeerAdapter {
  /** The row's name in the table. */
  name: string;
  /** The package and version measured, e.g. `ai@7.0.173`. */
  version: string;
  /** Runs `steps` model steps (`steps - 1` no-op calls, then the terminal call); resolves to the loop's wall time in ms. */
  run(steps: number): Promise<number>;
}

/** The arguments of the no-op call at `step`, as every peer's mock model sends them. */
export function noopArgs(step: number): { i: number } {
  return { i: step };
}

/** Throws unless the loop made exactly the calls the scenario scripts. */
export function assertSteps(peer: string, expected: number, actual: number): void {
  if (actual !== expected) {
    throw new Error(
      `${peer}: the mock model was called ${actual} times, expected ${expected}; the loop did not run the scenario`,
    );
  }
}
