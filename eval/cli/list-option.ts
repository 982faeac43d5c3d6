/**
 * A repeatable list option (`--scenario`, `--tags`, `--ablation`): commander hands over what
 * followed the flag as separate words; each word may also hold several names separated by commas.
 */
import { z } from "zod";

/**
 * The names a list option holds, commas and spaces both separating them.
 * @example splitList(["basic_2step,sequential_3step", "error_recovery"]) // ["basic_2step", "sequential_3step", "error_recovery"]
 */
export function splitList(values: readonly string[]): string[] {
  return values
    .flatMap((value) => value.split(","))
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
}

/** The zod schema of a list option: `--scenario a,b` and `--scenario a b` read the same. */
export function listOption(defaults: string[] = []) {
  return z.array(z.string()).default(defaults).transform(splitList);
}
