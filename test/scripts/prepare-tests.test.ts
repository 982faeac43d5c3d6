/**
 * The pretest step's system-package check: what counts as missing, the command it prints, and that
 * it installs as root and stops at once otherwise. No package is really installed here.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ensureSystemPackages,
  findMissing,
  installCommand,
  PrepareTestsError,
  type SystemRequirement,
  testRequirements,
} from "../../scripts/prepare-tests.ts";

/** A folder holding executable stubs named `commands`, to use as the whole PATH. */
function pathWith(commands: readonly string[]): string {
  const directory = mkdtempSync(join(tmpdir(), "forge-path-"));
  for (const command of commands) {
    writeFileSync(join(directory, command), "#!/bin/sh\n");
    chmodSync(join(directory, command), 0o755);
  }
  return directory;
}

/** A requirement that is present once `installed` holds its package. */
function fakeRequirement(name: string, installed: Set<string>): SystemRequirement {
  return { package: name, reason: "a test", isPresent: () => installed.has(name) };
}

describe("the system packages npm test needs", () => {
  it("finds the build tools on PATH and names the packages of the missing ones", () => {
    const directory = pathWith(["cmake", "git"]);
    // A folder named like a tool is not the tool.
    mkdirSync(join(directory, "make"));
    const env = { PATH: directory };
    const missing = findMissing(testRequirements(env)).map((requirement) => requirement.package);
    expect(missing).toContain("g++");
    expect(missing).toContain("make");
    expect(missing).not.toContain("cmake");
    expect(missing).not.toContain("git");
  });

  it("needs g++ as both c++ and g++, and no build tools when LLAMA_SERVER_PATH names a binary", () => {
    const onlyCxx = findMissing(testRequirements({ PATH: pathWith(["cmake", "git", "make", "c++"]) }));
    expect(onlyCxx.map((requirement) => requirement.package)).toContain("g++");
    const prebuilt = testRequirements({ PATH: "", LLAMA_SERVER_PATH: "/opt/llama-server" });
    expect(prebuilt.map((requirement) => requirement.package)).toEqual([
      "python3-pip",
      "chromium",
      "redis-server",
      "postgresql-15",
    ]);
  });

  it("finds everything it needs on this machine's PATH", () => {
    expect(findMissing(testRequirements()).map((requirement) => requirement.package)).toEqual([]);
  });

  it("prints the exact apt-get command", () => {
    expect(installCommand(["cmake", "g++"])).toBe("apt-get update && apt-get install -y cmake g++");
  });
});

describe("ensureSystemPackages", () => {
  it("stops at once when not root, with each missing package and the command to run", async () => {
    const aptCalls: string[][] = [];
    const error = await ensureSystemPackages(
      [fakeRequirement("cmake", new Set()), fakeRequirement("forge-no-such-package", new Set())],
      { isRoot: false, runApt: async (args) => void aptCalls.push([...args]), log: () => {} },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PrepareTestsError);
    expect((error as Error).message).toContain("forge-no-such-package (a test)");
    expect((error as Error).message).toContain(
      "apt-get update && apt-get install -y cmake forge-no-such-package",
    );
    expect(aptCalls).toEqual([]);
  });

  it("installs the missing packages with apt-get when root", async () => {
    const installed = new Set(["git"]);
    const aptCalls: string[][] = [];
    const lines: string[] = [];
    await ensureSystemPackages([fakeRequirement("git", installed), fakeRequirement("chromium", installed)], {
      isRoot: true,
      runApt: async (args) => {
        aptCalls.push([...args]);
        if (args[0] === "install") for (const name of args.slice(2)) installed.add(name);
      },
      log: (line) => lines.push(line),
    });
    expect(aptCalls).toEqual([["update"], ["install", "-y", "chromium"]]);
    expect(lines.join("\n")).toContain("apt-get update && apt-get install -y chromium");
  });

  it("fails when apt-get ran but the package is still missing", async () => {
    await expect(
      ensureSystemPackages([fakeRequirement("forge-no-such-package", new Set())], {
        isRoot: true,
        runApt: async () => {},
        log: () => {},
      }),
    ).rejects.toThrow("still missing after apt-get install: forge-no-such-package");
  });

  it("does nothing when everything is there", async () => {
    const aptCalls: string[][] = [];
    await ensureSystemPackages([fakeRequirement("git", new Set(["git"]))], {
      isRoot: false,
      runApt: async (args) => void aptCalls.push([...args]),
    });
    expect(aptCalls).toEqual([]);
  });
});
