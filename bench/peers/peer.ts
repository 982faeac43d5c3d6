/**
 * What every peer adapter of `npm run bench:peers` provides: one run of the scenario (a mock model
 * that answers each step at once with one call of a no-op tool, the last step a call of the
 * terminal tool) through the peer's own agent loop, timed around the loop alone.
 */
import { performance } from "node:perf_hooks";

/** One framework's agent loop under the peers benchmark. */
export interface PeerAdapter {
  /** The row's name in the table. */
  name: string;
  /** The package and version measured, e.g. `ai@7.0.173`. */
  version: string;
  /** Runs `steps` model steps (`steps - 1` no-op calls, then the terminal call); resolves to the loop's times. */
  run(steps: number): Promise<LoopTime>;
}

/** How long one run of a loop took: wall time, and CPU time of this process (user + system). */
export interface LoopTime {
  wallMs: number;
  /** Unaffected by other processes taking the cores; includes V8's helper threads (GC). */
  cpuMs: number;
}

/** Times `loop` (the agent loop alone, set up beforehand) in wall and CPU time. */
export async function timeLoop(loop: () => Promise<unknown>): Promise<LoopTime> {
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  await loop();
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
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
