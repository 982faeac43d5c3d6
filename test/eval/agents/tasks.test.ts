/**
 * The agent suite's graders on real repositories: each task fails as committed and passes once
 * solved the way an agent would (files edited on disk), and the question task reads the answer.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AGENT_TASKS, selectTasks } from "../../../eval/agents/tasks.ts";
import { changesOf, createWorkspace, type Workspace } from "../../../eval/agents/workspace.ts";

/** How each task is solved: edits in the repository, and the final answer. */
const SOLUTIONS: Record<string, (dir: string) => string> = {
  "create-file": (dir) => {
    writeFileSync(join(dir, "hello.txt"), "Hello, forge!\n");
    return "Done.";
  },
  "fix-bug": (dir) => {
    const path = join(dir, "math.js");
    writeFileSync(path, readFileSync(path, "utf8").replace("a - b", "a + b"));
    return "Fixed.";
  },
  "rename-function": (dir) => {
    for (const file of ["util.js", "main.js"]) {
      const path = join(dir, file);
      writeFileSync(path, readFileSync(path, "utf8").replaceAll("calcTotal", "computeTotal"));
    }
    return "Renamed.";
  },
  "add-cli-flag": (dir) => {
    writeFileSync(
      join(dir, "greet.js"),
      'const args = process.argv.slice(2);\nconst shout = args.includes("--shout");\nconst name = args.find((arg) => arg !== "--shout") ?? "world";\nconst line = "Hello, " + name;\nconsole.log(shout ? line.toUpperCase() : line);\n',
    );
    return "Added.";
  },
  "answer-question": () => "It listens on port 7319 by default.",
  "bump-version": (dir) => {
    const path = join(dir, "package.json");
    writeFileSync(path, readFileSync(path, "utf8").replace("1.1.4", "1.2.0"));
    return "Bumped.";
  },
  "delete-file": (dir) => {
    rmSync(join(dir, "obsolete.txt"));
    return "Deleted.";
  },
  "add-function": (dir) => {
    writeFileSync(
      join(dir, "shapes.js"),
      "function area(width, height) {\n  return width * height;\n}\n\nfunction perimeter(width, height) {\n  return 2 * (width + height);\n}\n\nmodule.exports = { area, perimeter };\n",
    );
    return "Added.";
  },
  "fix-typo": (dir) => {
    const path = join(dir, "banner.js");
    writeFileSync(path, readFileSync(path, "utf8").replace("Welcom ", "Welcome "));
    return "Fixed.";
  },
};

const workspaces: Workspace[] = [];
afterEach(() => {
  for (const workspace of workspaces.splice(0)) workspace.remove();
});

async function fresh(files: Record<string, string>): Promise<Workspace> {
  const workspace = await createWorkspace(files);
  workspaces.push(workspace);
  return workspace;
}

// Each grade runs `node` up to three times: seconds each on a busy shared machine.
describe("agent suite tasks", () => {
  it("has at least eight tasks, each with a solution here", () => {
    expect(AGENT_TASKS.length).toBeGreaterThanOrEqual(8);
    expect(Object.keys(SOLUTIONS).sort()).toEqual(AGENT_TASKS.map((task) => task.id).sort());
  });

  for (const task of AGENT_TASKS) {
    it(`${task.id}: fails as committed, passes once solved`, async () => {
      const untouched = await fresh(task.files);
      const before = await task.grade({
        dir: untouched.repo,
        answer: "",
        changes: await changesOf(untouched.repo),
      });
      expect(before.passed, before.detail).toBe(false);

      const solved = await fresh(task.files);
      const answer = SOLUTIONS[task.id]?.(solved.repo) ?? "";
      const after = await task.grade({ dir: solved.repo, answer, changes: await changesOf(solved.repo) });
      expect(after, after.detail).toMatchObject({ passed: true });
    }, 120_000);
  }

  it("answer-question fails when a file was edited, even with the right number", async () => {
    const task = selectTasks(["answer-question"])[0];
    if (!task) throw new Error("no answer-question task");
    const workspace = await fresh(task.files);
    writeFileSync(join(workspace.repo, "config.js"), "// edited\n");
    const verdict = await task.grade({
      dir: workspace.repo,
      answer: "7319",
      changes: await changesOf(workspace.repo),
    });
    expect(verdict).toEqual({ passed: false, detail: "files changed: config.js" });
  });

  it("fix-bug fails when the test itself was changed", async () => {
    const task = selectTasks(["fix-bug"])[0];
    if (!task) throw new Error("no fix-bug task");
    const workspace = await fresh(task.files);
    writeFileSync(join(workspace.repo, "test.js"), 'console.log("ok");\n');
    const verdict = await task.grade({ dir: workspace.repo, answer: "", changes: [] });
    expect(verdict).toEqual({ passed: false, detail: "test.js was changed" });
  });

  it("selectTasks names the unknown id", () => {
    expect(() => selectTasks(["no-such-task"])).toThrow(/unknown task no-such-task/);
  });
});
