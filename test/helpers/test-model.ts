/** Test helpers that provide a real llama-server binary and a tiny GGUF model, building them when missing. */
import { makeForgeTinyFixture, makeTestGguf } from "../../scripts/make-test-gguf.ts";
import { setupLlamaServer } from "../../scripts/setup-llama-server.ts";

/**
 * Returns the path of the tiny random-weight test model (ChatML/Hermes template, byte-level BPE
 * tokenizer), generating it when missing. Needs `/usr/bin/python3` with numpy.
 */
export function ensureTestModel(): Promise<string> {
  return makeTestGguf();
}

/**
 * Returns the path of a GGUF with forge-tiny's tokenizer and chat template and random weights
 * (`.cache/test-models/forge-tiny-random.gguf`), generating it when missing or stale. Needs
 * `/usr/bin/python3` with numpy.
 */
export function ensureForgeTinyFixture(): Promise<string> {
  return makeForgeTinyFixture();
}

/**
 * Returns the path of a runnable `llama-server`: `$LLAMA_SERVER_PATH`, or the cached build,
 * compiling it from the bundled llama.cpp source when missing (about 5 minutes on 2 cores, so
 * give the calling hook a timeout of 15 minutes).
 */
export function ensureLlamaServer(): Promise<string> {
  return setupLlamaServer();
}
