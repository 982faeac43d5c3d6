/** Test helpers that provide a real llama-server binary and a tiny GGUF model, building them when missing. */
import { makeForgeTinyFixture, makeTestGguf } from "../../scripts/make-test-gguf.ts";
import { setupLlamaServer } from "../../scripts/setup-llama-server.ts";

/**
 * Returns the path of the tiny random-weight test model (ChatML/Hermes template, byte-level BPE
 * tokenizer), writing it when missing (from TypeScript, in well under a second).
 */
export function ensureTestModel(): Promise<string> {
  return makeTestGguf();
}

/**
 * Returns the path of a GGUF with forge-tiny's tokenizer and chat template and random weights
 * (`.cache/test-models/forge-tiny-random.gguf`), writing it when missing or stale.
 */
export function ensureForgeTinyFixture(): Promise<string> {
  return makeForgeTinyFixture();
}

/**
 * Returns the path of a runnable `llama-server`: `$LLAMA_SERVER_PATH`, or the cached build. The
 * build (5 to 20 minutes on 2 cores) runs before the tests, in `npm test`'s pretest step or
 * vitest's global setup (`test/global-setup.ts`), so here it is normally found at once; it is
 * still compiled when missing, waiting for a build another process holds the lock of.
 */
export function ensureLlamaServer(): Promise<string> {
  return setupLlamaServer();
}
