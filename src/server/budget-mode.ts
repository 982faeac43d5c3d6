/** How the context budget is chosen: trust the backend, take the user's number, or let forge pick. */

/**
 * Where the context budget comes from.
 * - `backend`: the backend's own default; nothing is overridden.
 * - `manual`: exactly the token count the user gives.
 * - `forge-full`: the largest safe context (llama-server's auto-tuned `n_ctx`, Ollama's VRAM tier).
 * - `forge-fast`: half of `forge-full`, trading context for faster attention.
 */
export const BudgetMode = {
  BACKEND: "backend",
  MANUAL: "manual",
  FORGE_FULL: "forge-full",
  FORGE_FAST: "forge-fast",
} as const;
export type BudgetMode = (typeof BudgetMode)[keyof typeof BudgetMode];

/** Whether `value` is one of the {@link BudgetMode} strings. */
export function isBudgetMode(value: unknown): value is BudgetMode {
  return Object.values(BudgetMode).includes(value as BudgetMode);
}
