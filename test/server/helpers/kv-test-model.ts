/**
 * A variant of the tiny test model whose attention heads are 32 wide (2 heads instead of 4), so
 * quantized KV caches fit: q8_0 / q4_0 blocks are 32 values and must divide the head size, which
 * the shared 16-wide test model does not allow. Written by the same TypeScript generator.
 */
import { makeHead32TestGguf } from "../../../scripts/make-test-gguf.ts";

/** Path of the 32-wide-head test model, written when missing or older than its generator. */
export function ensureHead32TestModel(): Promise<string> {
  return makeHead32TestGguf({ log: () => {} });
}
