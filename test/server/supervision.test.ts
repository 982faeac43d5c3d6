/**
 * The supervision decisions on their own: restart limits and backoff, the gave-up message, and
 * the command that ties llama-server's life to the proxy's (`setpriv --pdeathsig KILL` on Linux).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { withParentDeathSignal } from "../../src/server/parent-death.ts";
import {
  DEFAULT_SUPERVISION,
  describeExit,
  gaveUpMessage,
  nextRestart,
  supervisionPolicySchema,
} from "../../src/server/supervision.ts";

describe("nextRestart", () => {
  const policy = supervisionPolicySchema.parse({
    maxRestarts: 3,
    windowMs: 1_000,
    backoffMs: 100,
    maxBackoffMs: 250,
  });

  it("doubles the backoff with each restart in the window, up to the cap", () => {
    expect(nextRestart([], 5_000, policy)).toEqual({ delayMs: 100 });
    expect(nextRestart([4_900], 5_000, policy)).toEqual({ delayMs: 200 });
    expect(nextRestart([4_800, 4_900], 5_000, policy)).toEqual({ delayMs: 250 });
  });

  it("gives up once maxRestarts restarts happened within the window", () => {
    expect(nextRestart([4_700, 4_800, 4_900], 5_000, policy)).toBeNull();
  });

  it("forgets restarts older than the window", () => {
    expect(nextRestart([3_000, 3_500, 4_900], 5_000, policy)).toEqual({ delayMs: 200 });
  });

  it("never restarts with maxRestarts 0", () => {
    expect(nextRestart([], 0, { ...policy, maxRestarts: 0 })).toBeNull();
  });

  it("has documented defaults: 5 restarts in 10 minutes, /health every 10 s with a 5 s deadline, 3 failures", () => {
    expect(DEFAULT_SUPERVISION).toEqual({
      maxRestarts: 5,
      windowMs: 600_000,
      backoffMs: 500,
      maxBackoffMs: 30_000,
      probeIntervalMs: 10_000,
      probeTimeoutMs: 5_000,
      probeFailures: 3,
    });
  });

  it("names the limit and the last cause when it gives up", () => {
    const cause = describeExit({ pid: 7, exitCode: null, signal: "SIGKILL", stderrTail: "" });
    expect(cause).toBe("pid 7 was killed by SIGKILL");
    expect(gaveUpMessage(DEFAULT_SUPERVISION, cause)).toMatch(
      /^llama-server gave up: it failed again after 5 restart\(s\) within 600 s \(last: pid 7 was killed by SIGKILL\)\..*--max-restarts/,
    );
  });
});

describe("withParentDeathSignal", () => {
  const directory = mkdtempSync(join(tmpdir(), "forge-pdeathsig-"));
  const setpriv = join(directory, "setpriv");
  const server = join(directory, "llama-server");
  writeFileSync(setpriv, "#!/bin/sh\n", { mode: 0o755 });
  writeFileSync(server, "#!/bin/sh\n", { mode: 0o755 });

  it("wraps the server in setpriv --pdeathsig KILL on Linux when setpriv is on the PATH", () => {
    expect(withParentDeathSignal(server, ["--port", "1"], "linux", directory)).toEqual({
      command: setpriv,
      args: ["--pdeathsig", "KILL", "--", server, "--port", "1"],
      diesWithParent: true,
    });
  });

  it("spawns the server directly on macOS and Windows, which have no parent-death signal", () => {
    for (const platform of ["darwin", "win32"] as const) {
      expect(withParentDeathSignal(server, [], platform, directory)).toEqual({
        command: server,
        args: [],
        diesWithParent: false,
      });
    }
  });

  it("spawns a binary that cannot run directly, so its spawn error is reported as such", () => {
    const missing = join(directory, "missing-llama-server");
    expect(withParentDeathSignal(missing, [], "linux", directory).command).toBe(missing);
  });

  it("finds the real setpriv of this Debian machine (util-linux)", () => {
    expect(withParentDeathSignal("/bin/sh", [], "linux", "").command).toMatch(/\/setpriv$/);
  });
});
