/**
 * The basic tier's traps (as scenario tags) and its transient tool failure.
 */

/** The trap a basic scenario sets, as its tag. */
export const BasicTrap = {
  PROSE: "trap_prose",
  PREMATURE_TERMINAL: "trap_premature_terminal",
  UNKNOWN_TOOL: "trap_unknown_tool",
  TRANSIENT_ERROR: "trap_transient_error",
} as const;
export type BasicTrap = (typeof BasicTrap)[keyof typeof BasicTrap];

/** A service that is briefly unavailable; the same call succeeds once it is retried. */
export class ServiceUnavailableError extends Error {
  constructor(service: string) {
    super(`${service} is temporarily unavailable (503); try the same call again`);
    this.name = "ServiceUnavailable";
  }
}

/** `execute`, except that the first call of the run throws a transient error. */
export function failsOnce<Args>(service: string, execute: (args: Args) => unknown): (args: Args) => unknown {
  let failed = false;
  return (args) => {
    if (!failed) {
      failed = true;
      throw new ServiceUnavailableError(service);
    }
    return execute(args);
  };
}
