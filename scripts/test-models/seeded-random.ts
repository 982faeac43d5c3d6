/**
 * A seeded source of normally distributed numbers for the test models' random weights, so the
 * same seed always writes byte-identical GGUF files.
 */

/** Draws from N(mean, standardDeviation²); the same seed gives the same sequence. */
export type NormalSampler = (mean: number, standardDeviation: number) => number;

/**
 * Returns a normal sampler driven by xoshiro128** seeded with splitmix32, using the Box–Muller
 * transform.
 * @example
 * const normal = createNormalSampler(1234);
 * const weight = normal(0, 0.02);
 */
export function createNormalSampler(seed: number): NormalSampler {
  const uniform = createUniform(seed);
  let spare: number | undefined;
  return (mean, standardDeviation) => {
    if (spare !== undefined) {
      const value = spare;
      spare = undefined;
      return mean + standardDeviation * value;
    }
    // 1 - u lies in (0, 1], so the logarithm is finite.
    const radius = Math.sqrt(-2 * Math.log(1 - uniform()));
    const angle = 2 * Math.PI * uniform();
    spare = radius * Math.sin(angle);
    return mean + standardDeviation * radius * Math.cos(angle);
  };
}

/** Uniform numbers in [0, 1) from xoshiro128**. */
function createUniform(seed: number): () => number {
  let splitmix = seed >>> 0;
  const nextSeedWord = (): number => {
    splitmix = (splitmix + 0x9e3779b9) >>> 0;
    let z = splitmix;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let [s0, s1, s2, s3] = [nextSeedWord(), nextSeedWord(), nextSeedWord(), nextSeedWord()];
  return () => {
    const result = Math.imul(rotateLeft(Math.imul(s1, 5) >>> 0, 7), 9) >>> 0;
    const shifted = (s1 << 9) >>> 0;
    s2 = (s2 ^ s0) >>> 0;
    s3 = (s3 ^ s1) >>> 0;
    s1 = (s1 ^ s2) >>> 0;
    s0 = (s0 ^ s3) >>> 0;
    s2 = (s2 ^ shifted) >>> 0;
    s3 = rotateLeft(s3, 11);
    return result / 2 ** 32;
  };
}

function rotateLeft(value: number, bits: number): number {
  return ((value << bits) | (value >>> (32 - bits))) >>> 0;
}
