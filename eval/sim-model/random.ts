/**
 * Deterministic draws for the sim-model: a hash of the request's identity, so the same seed,
 * scenario, turn and last message always give the same fault, with no server state.
 */

/** A 32-bit FNV-1a hash of the parts joined by `|`. */
export function hashParts(...parts: readonly (string | number)[]): number {
  let hash = 0x811c9dc5;
  for (const char of parts.join("|")) {
    hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  }
  return hash;
}

/** A uniform draw in [0, 1) from the parts (FNV-1a, then a murmur3 finalizer to spread the bits). */
export function drawUniform(...parts: readonly (string | number)[]): number {
  let hash = hashParts(...parts);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b) >>> 0;
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35) >>> 0;
  hash ^= hash >>> 16;
  return (hash >>> 0) / 2 ** 32;
}
