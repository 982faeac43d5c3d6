/**
 * Budget decisions as pure functions: Ollama's VRAM tiers, the forge-fast halving, the `-c` that
 * gives each llama-server slot a wanted context, and the check of a manual token count.
 */
import { BudgetResolutionError } from "../core/errors.ts";
import { BudgetMode } from "./budget-mode.ts";

/** MiB in one GiB: VRAM is reported in MiB, the tiers are stated in GiB. */
const MIB_PER_GIB = 1024;

/** Ollama's default context by total VRAM (its own tiers): below 24 GiB, below 48 GiB, and above. */
export const OLLAMA_VRAM_TIERS = [
  { belowGib: 24, tokens: 4096 },
  { belowGib: 48, tokens: 32_768 },
  { belowGib: Number.POSITIVE_INFINITY, tokens: 262_144 },
] as const;

/**
 * The context Ollama gives a model on a machine with `vramTotalMb` of GPU memory. `null` (no GPU
 * found) gets the smallest tier, as Ollama does when it runs on the CPU.
 * @example
 * ollamaTierTokens(12_288) // 4096
 * ollamaTierTokens(24_576) // 32768
 */
export function ollamaTierTokens(vramTotalMb: number | null): number {
  const gib = (vramTotalMb ?? 0) / MIB_PER_GIB;
  const tier = OLLAMA_VRAM_TIERS.find((candidate) => gib < candidate.belowGib);
  return (tier ?? OLLAMA_VRAM_TIERS[OLLAMA_VRAM_TIERS.length - 1]!).tokens;
}

/** forge-fast's share of the full context: half, rounded down. */
export function halveContext(fullTokens: number): number {
  return Math.floor(fullTokens / 2);
}

/**
 * The `-c` value that gives every llama-server slot `perSlotTokens` of context. With a unified KV
 * cache every slot may use the whole `-c`; without one, `-c` is split evenly across the slots.
 * llama-server unifies the cache by default only when the slot count is automatic.
 */
export function contextFlagForSlot(
  perSlotTokens: number,
  options: { slots?: number | undefined; kvUnified?: boolean | undefined } = {},
): number {
  const unified = options.kvUnified ?? options.slots === undefined;
  return unified ? perSlotTokens : perSlotTokens * (options.slots ?? 1);
}

/**
 * The token count of a `manual` budget, checked.
 * @throws {BudgetResolutionError} when it is missing or not a positive integer.
 */
export function checkManualTokens(manualTokens: number | undefined): number {
  if (manualTokens === undefined || !Number.isInteger(manualTokens) || manualTokens <= 0) {
    throw new BudgetResolutionError(
      `BudgetMode "${BudgetMode.MANUAL}" needs manualTokens, a positive integer (got ${String(manualTokens)}).`,
    );
  }
  return manualTokens;
}
