/**
 * The agent task suite's tasks: each a handful of files committed to a fresh git repository, a
 * prompt for the agent, and a grader, deterministic code that reads the repository (and runs its
 * programs with Node) and the agent's final text after the run. No model grades.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A grader's verdict. */
export interface Verdict {
  passed: boolean;
  /** Why, in a line: what was found. */
  detail: string;
}

/** What a grader is given. */
export interface GradeInput {
  /** The repository, as the agent left it. */
  dir: string;
  /** The agent's final text (its stdout). */
  answer: string;
  /** `git status --porcelain` after the run (untracked files included). */
  changes: string[];
}

/** One task. */
export interface AgentTask {
  /** Short kebab-case id, the key in the results. */
  id: string;
  /** What it asks, for the report. */
  title: string;
  /** The repository's files at the start, by path. */
  files: Record<string, string>;
  /** What the agent is told. */
  prompt: string;
  grade(input: GradeInput): Promise<Verdict>;
}

/** `node <args>` in `dir`, with a 10 s cap; its trimmed stdout, or the failure as a verdict detail. */
export async function runNode(
  dir: string,
  args: string[],
): Promise<{ ok: true; stdout: string } | { ok: false; detail: string }> {
  try {
    const { stdout } = await run(process.execPath, args, { cwd: dir, timeout: 10_000 });
    return { ok: true, stdout: stdout.trim() };
  } catch (error) {
    const failure = error as { code?: unknown; stderr?: string; message?: string };
    // Node's own last line is its version; the error's first line says what went wrong.
    const lines = (failure.stderr ?? failure.message ?? "").split("\n").map((line) => line.trim());
    const reason =
      lines.find((line) => /^\w*(Error|Exception)\b/.test(line)) ?? lines.find((line) => line !== "") ?? "";
    return { ok: false, detail: `node ${args.join(" ")} failed (${String(failure.code)}): ${reason}` };
  }
}

function readIf(dir: string, path: string): string | undefined {
  const file = join(dir, path);
  return existsSync(file) ? readFileSync(file, "utf8") : undefined;
}

const pass = (detail: string): Verdict => ({ passed: true, detail });
const fail = (detail: string): Verdict => ({ passed: false, detail });

const MATH_JS = `function add(a, b) {
  return a - b;
}

module.exports = { add };
`;

const MATH_TEST_JS = `const assert = require("node:assert");
const { add } = require("./math.js");

assert.strictEqual(add(2, 3), 5);
assert.strictEqual(add(-1, 1), 0);
console.log("ok");
`;

/** The suite, in the order it runs. */
export const AGENT_TASKS: readonly AgentTask[] = [
  {
    id: "create-file",
    title: "create a file with given content",
    files: { "README.md": "# notes\n" },
    prompt: "Create a file named hello.txt whose only content is the line: Hello, forge!",
    grade: async ({ dir }) => {
      const content = readIf(dir, "hello.txt");
      if (content === undefined) return fail("hello.txt does not exist");
      return content.trim() === "Hello, forge!"
        ? pass("hello.txt holds the line")
        : fail(`hello.txt holds ${JSON.stringify(content.slice(0, 80))}`);
    },
  },
  {
    id: "fix-bug",
    title: "fix a one-line bug so a test passes",
    files: { "math.js": MATH_JS, "test.js": MATH_TEST_JS },
    prompt:
      "Running `node test.js` fails. Fix the bug in math.js so that `node test.js` passes. Do not change test.js.",
    grade: async ({ dir }) => {
      if (readIf(dir, "test.js") !== MATH_TEST_JS) return fail("test.js was changed");
      const result = await runNode(dir, ["test.js"]);
      return result.ok ? pass("node test.js passes") : fail(result.detail);
    },
  },
  {
    id: "rename-function",
    title: "rename a function across two files",
    files: {
      "util.js": `function calcTotal(prices) {\n  return prices.reduce((sum, price) => sum + price, 0);\n}\n\nmodule.exports = { calcTotal };\n`,
      "main.js": `const { calcTotal } = require("./util.js");\n\nconsole.log(calcTotal([1, 2, 3]));\n`,
    },
    prompt:
      "Rename the function calcTotal to computeTotal everywhere: its definition and export in util.js and its use in main.js.",
    grade: async ({ dir }) => {
      for (const file of ["util.js", "main.js"]) {
        const source = readIf(dir, file) ?? "";
        if (source.includes("calcTotal")) return fail(`${file} still names calcTotal`);
        if (!source.includes("computeTotal")) return fail(`${file} does not name computeTotal`);
      }
      const result = await runNode(dir, ["main.js"]);
      if (!result.ok) return fail(result.detail);
      return result.stdout === "6"
        ? pass("renamed, main.js prints 6")
        : fail(`main.js printed ${result.stdout}`);
    },
  },
  {
    id: "add-cli-flag",
    title: "add a CLI flag",
    files: {
      "greet.js": `const name = process.argv[2] ?? "world";\nconsole.log(\`Hello, \${name}\`);\n`,
    },
    prompt:
      "greet.js prints a greeting: `node greet.js Ada` prints `Hello, Ada`. Add a --shout flag: `node greet.js --shout Ada` must print `HELLO, ADA`. Without the flag it must behave as before.",
    grade: async ({ dir }) => {
      const plain = await runNode(dir, ["greet.js", "Ada"]);
      if (!plain.ok) return fail(plain.detail);
      if (plain.stdout !== "Hello, Ada") return fail(`without the flag it printed ${plain.stdout}`);
      const shout = await runNode(dir, ["greet.js", "--shout", "Ada"]);
      if (!shout.ok) return fail(shout.detail);
      return shout.stdout === "HELLO, ADA"
        ? pass("both forms print the right greeting")
        : fail(`--shout printed ${shout.stdout}`);
    },
  },
  {
    id: "answer-question",
    title: "answer a question about the code without editing",
    files: {
      "config.js": `// Server settings.\nconst DEFAULT_PORT = 7319;\nconst HOST = "127.0.0.1";\n\nmodule.exports = { DEFAULT_PORT, HOST };\n`,
      "server.js": `const http = require("node:http");\nconst { DEFAULT_PORT, HOST } = require("./config.js");\n\nconst port = Number(process.env.PORT ?? DEFAULT_PORT);\nhttp.createServer((req, res) => res.end("ok")).listen(port, HOST);\n`,
    },
    prompt:
      "Which TCP port does server.js listen on when PORT is not set? Read the code and answer with the number. Do not edit any file.",
    grade: async ({ answer, changes }) => {
      if (changes.length > 0) return fail(`files changed: ${changes.join(", ")}`);
      return /\b7319\b/.test(answer) ? pass("answered 7319") : fail("the answer does not name 7319");
    },
  },
  {
    id: "bump-version",
    title: "edit a field of a JSON file",
    files: {
      "package.json": `${JSON.stringify({ name: "demo-app", version: "1.1.4", private: true }, null, 2)}\n`,
    },
    prompt: "Set the version in package.json to 1.2.0. Change nothing else.",
    grade: async ({ dir }) => {
      let manifest: Record<string, unknown>;
      try {
        manifest = JSON.parse(readIf(dir, "package.json") ?? "") as Record<string, unknown>;
      } catch {
        return fail("package.json is missing or not JSON");
      }
      if (manifest.name !== "demo-app" || manifest.private !== true) return fail("other fields changed");
      return manifest.version === "1.2.0"
        ? pass("version is 1.2.0")
        : fail(`version is ${String(manifest.version)}`);
    },
  },
  {
    id: "delete-file",
    title: "delete one file, keep the rest",
    files: { "keep.txt": "keep me\n", "obsolete.txt": "remove me\n", "notes.md": "# notes\n" },
    prompt: "Delete the file obsolete.txt. Leave the other files alone.",
    grade: async ({ dir }) => {
      if (existsSync(join(dir, "obsolete.txt"))) return fail("obsolete.txt still exists");
      const kept = ["keep.txt", "notes.md"].every((file) => existsSync(join(dir, file)));
      return kept ? pass("obsolete.txt deleted, others kept") : fail("another file was deleted too");
    },
  },
  {
    id: "add-function",
    title: "add and export a function",
    files: {
      "shapes.js": `function area(width, height) {\n  return width * height;\n}\n\nmodule.exports = { area };\n`,
    },
    prompt:
      "In shapes.js, add a function perimeter(width, height) that returns 2 * (width + height), and export it next to area.",
    grade: async ({ dir }) => {
      const result = await runNode(dir, [
        "-e",
        'const s = require("./shapes.js"); console.log(s.perimeter(3, 4), s.area(3, 4));',
      ]);
      if (!result.ok) return fail(result.detail);
      return result.stdout === "14 12"
        ? pass("perimeter(3, 4) is 14, area kept")
        : fail(`perimeter(3, 4), area(3, 4) printed ${result.stdout}`);
    },
  },
  {
    id: "fix-typo",
    title: "fix a typo in a string",
    files: {
      "banner.js": `console.log("Welcom to the forge");\n`,
    },
    prompt: 'banner.js prints "Welcom to the forge". Fix the spelling so it prints "Welcome to the forge".',
    grade: async ({ dir }) => {
      const result = await runNode(dir, ["banner.js"]);
      if (!result.ok) return fail(result.detail);
      return result.stdout === "Welcome to the forge"
        ? pass("prints the fixed banner")
        : fail(`prints ${result.stdout}`);
    },
  },
];

/** The tasks named `ids` (all for `["all"]`); throws on an unknown id. */
export function selectTasks(ids: readonly string[]): AgentTask[] {
  if (ids.includes("all")) return [...AGENT_TASKS];
  return ids.map((id) => {
    const task = AGENT_TASKS.find((candidate) => candidate.id === id);
    if (!task)
      throw new AgentSuiteUsageError(
        `unknown task ${id}: use ${AGENT_TASKS.map((item) => item.id).join(", ")} or all`,
      );
    return task;
  });
}

/** A usage error of the agent suite (exit 2). */
export class AgentSuiteUsageError extends Error {
  override name = "AgentSuiteUsageError";
}
