import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentsBinDir, areAgentsInstalled, PINNED_AGENTS, setupAgents } from "../../scripts/setup-agents.ts";

describe("setupAgents", () => {
  it("finds the pinned agents the test set-up installed, and does nothing on a second run", async () => {
    expect(await areAgentsInstalled()).toBe(true);
    const lines: string[] = [];
    expect(await setupAgents({ log: (line) => lines.push(line) })).toBe(agentsBinDir());
    expect(lines).toEqual([]);
    for (const agent of PINNED_AGENTS) expect(existsSync(join(agentsBinDir(), agent.binary))).toBe(true);
  });

  it("takes a changed pin for a missing install (the stamp names every package and version)", async () => {
    const [first, ...rest] = PINNED_AGENTS;
    if (first === undefined) throw new Error("no pinned agents");
    expect(await areAgentsInstalled([{ ...first, version: "0.0.0-other" }, ...rest])).toBe(false);
  });

  it("pins the versions docs/agents.md's client table records", () => {
    const docs = readFileSync(new URL("../../docs/agents.md", import.meta.url), "utf8");
    for (const agent of PINNED_AGENTS)
      expect(docs).toContain(`(\`${agent.npmPackage}\`) | ${agent.version} |`);
  });
});
