/**
 * Giving large request bodies' memory back. A 9 MiB request leaves four or five copies of its body
 * behind (the text, the parsed content, the history sent on, their encodings), and V8 lets such
 * garbage build up to several times the live heap before it collects: 32 concurrent 9 MiB requests
 * took the proxy from 150 MB to 440-510 MB of RSS, although the bodies it admits at once never
 * held more than about 100 MB. After `everyBytes` of large bodies have been served, the proxy asks
 * V8 for one full collection, run as a task of its own (not inside any request): about 10-15 ms per
 * collection on the 2-core bench machine, once per `everyBytes` of large bodies (a few requests of
 * that size), nothing for small ones. See docs/benchmarks.md ("Deadlines and limits").
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Default bytes of large bodies between two collections: 16 MiB (the default body memory budget). */
export const DEFAULT_RECLAIM_AFTER_BYTES = 16 * 1024 * 1024;

/** Bodies smaller than this never count: small requests leave V8 to its own schedule. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** V8's `gc` of `--expose-gc`: `execution: "async"` runs the collection as a task and resolves after it. */
type CollectGarbage = (options: { type: "major"; execution: "async" }) => Promise<void>;

let collector: CollectGarbage | undefined;

/**
 * V8's collector function. Taken without changing the process's flags for good: `--expose-gc` is
 * set only while one new context is made (the function is read from it), then unset, so the
 * application's own contexts never see a `gc` global. A process started with `--expose-gc` has it already.
 */
function collectGarbage(): CollectGarbage {
  if (collector) return collector;
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === "function") {
    collector = exposed as CollectGarbage;
    return collector;
  }
  setFlagsFromString("--expose-gc");
  let found: unknown;
  try {
    found = runInNewContext("typeof gc === 'function' ? gc : undefined");
  } finally {
    setFlagsFromString("--no-expose-gc");
  }
  if (typeof found !== "function") {
    throw new Error(
      "This runtime does not let the proxy ask for garbage collections (--expose-gc had no effect): " +
        "start node with --expose-gc, or turn reclaiming off with --reclaim-after 0 (reclaimAfterBytes: 0)",
    );
  }
  collector = found as CollectGarbage;
  return collector;
}

/** Counts the large bodies served and asks for a collection after every `everyBytes` of them. */
export class BodyReclaimer {
  readonly #everyBytes: number;
  readonly #collect: CollectGarbage | undefined;
  #served = 0;
  #collecting = false;
  readonly #onCollect: () => void;

  /** `everyBytes` 0 turns it off; `onCollect` hears of each collection asked for (metrics). */
  constructor(everyBytes: number = DEFAULT_RECLAIM_AFTER_BYTES, onCollect: () => void = () => {}) {
    if (!Number.isInteger(everyBytes) || everyBytes < 0) {
      throw new RangeError(
        `reclaimAfterBytes must be a whole number of bytes, 0 or more (0: off); got ${everyBytes}`,
      );
    }
    this.#everyBytes = everyBytes;
    this.#onCollect = onCollect;
    // Looked up now, so a runtime that cannot collect on request fails when the proxy starts.
    this.#collect = everyBytes === 0 ? undefined : collectGarbage();
  }

  /**
   * A request whose body weighed `bodyBytes` has been answered: its copies are garbage now.
   * Returns the collection it asked for (settled once V8 has run it), or undefined.
   */
  served(bodyBytes: number): Promise<void> | undefined {
    if (this.#collect === undefined || bodyBytes < LARGE_BODY_BYTES) return undefined;
    this.#served += bodyBytes;
    if (this.#served < this.#everyBytes || this.#collecting) return undefined;
    this.#served = 0;
    this.#collecting = true;
    this.#onCollect();
    const collect = this.#collect;
    // Called from a response's close listener: whatever happens, nothing is thrown there.
    return new Promise<void>((resolve) => resolve(collect({ type: "major", execution: "async" })))
      .catch((error: unknown) => {
        console.warn(`forge proxy: a requested garbage collection failed: ${String(error)}`);
      })
      .finally(() => {
        this.#collecting = false;
      });
  }
}
