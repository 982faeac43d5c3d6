import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { loadPermissions, PermissionPolicyError } from "../../src/cli/permissions-option.ts";
import { addGuardOptions } from "../../src/cli/proxy-command.ts";
import { proxyCliOptionsSchema } from "../../src/cli/proxy-options.ts";
import { PERMISSION_PRESETS } from "../../src/proxy/permission-presets.ts";

const dir = mkdtempSync(join(tmpdir(), "forge-permissions-"));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe("--permissions", () => {
  it("names a preset", () => {
    expect(loadPermissions("coding-safe")).toBe(PERMISSION_PRESETS["coding-safe"]);
  });

  it("reads a JSON policy file, defaults filled in", () => {
    const path = file(
      "ok.json",
      JSON.stringify({ deny: [{ tools: ["Bash"], args: ["command"], match: { glob: "sudo *" } }] }),
    );
    expect(loadPermissions(path)).toMatchObject({ default: "allow", allow: [], deny: [{ tools: ["Bash"] }] });
  });

  it("says what to fix: no such preset or file, not JSON, a bad field", () => {
    expect(() => loadPermissions("coding-unsafe")).toThrow(/not a preset \(coding-safe\)/);
    expect(() => loadPermissions(file("bad.json", "{"))).toThrow(/not JSON/);
    const badRegex = file("regex.json", JSON.stringify({ deny: [{ tools: ["x"], match: { regex: "(" } }] }));
    expect(() => loadPermissions(badRegex)).toThrow(PermissionPolicyError);
    expect(() => loadPermissions(badRegex)).toThrow(/deny\.0\.match\.regex/);
  });
});

describe("the guard flags", () => {
  const base = { backendUrl: "http://127.0.0.1:8080" };

  it("default to the loop guard and retry bounds on, no permissions", () => {
    const options = proxyCliOptionsSchema.parse(base);
    expect(options).toMatchObject({ loopGuard: true, loopThreshold: 3, loopExempt: [], retryBounds: true });
    expect(options.retryFactor).toBe(4);
    expect(options.retryFloor).toBe(256);
    expect(options.permissions).toBeUndefined();
  });

  it("refuses a loop threshold under 2", () => {
    expect(proxyCliOptionsSchema.safeParse({ ...base, loopThreshold: "1" }).success).toBe(false);
  });
});

describe("--think-calls, --narrow-tools and --always-offer", () => {
  const base = { backendUrl: "http://127.0.0.1:8080" };
  /** The guard flags as commander hands them over. */
  function parseFlags(argv: string[]): Record<string, unknown> {
    const command = addGuardOptions(new Command("proxy")).exitOverride();
    command.parse(argv, { from: "user" });
    return command.opts();
  }

  it("are off by default", () => {
    const options = proxyCliOptionsSchema.parse({ ...base, ...parseFlags([]) });
    expect(options).toMatchObject({ thinkCalls: false, alwaysOffer: [] });
    expect(options.narrowTools).toBeUndefined();
  });

  it("take K and comma-separated, repeatable tool lists", () => {
    const flags = parseFlags([
      "--think-calls",
      "--narrow-tools",
      "8",
      "--always-offer",
      "Bash, Read",
      "--always-offer",
      "Edit",
    ]);
    const options = proxyCliOptionsSchema.parse({ ...base, ...flags });
    expect(options).toMatchObject({
      thinkCalls: true,
      narrowTools: 8,
      alwaysOffer: ["Bash", "Read", "Edit"],
    });
  });

  it("refuses a K under 1", () => {
    expect(proxyCliOptionsSchema.safeParse({ ...base, narrowTools: "0" }).success).toBe(false);
  });
});

describe("--no-respond-upstream", () => {
  const base = { backendUrl: "http://127.0.0.1:8080" };
  const parseFlags = (argv: string[]) => {
    const command = addGuardOptions(new Command("proxy")).exitOverride();
    command.parse(argv, { from: "user" });
    return proxyCliOptionsSchema.parse({ ...base, ...command.opts() });
  };

  it("keeps respond upstream by default and turns it off when given", () => {
    expect(parseFlags([]).respondUpstream).toBe(true);
    expect(parseFlags(["--no-respond-upstream"]).respondUpstream).toBe(false);
  });
});
