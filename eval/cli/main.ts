/**
 * Entry of the repository's eval commands: `npm run eval -- …`, `npm run eval:report -- …` and
 * `npm run sim-model -- …` run `tsx eval/cli/main.ts eval|sim-model …`.
 */
import { runProgram } from "../../src/cli/run-program.ts";
import { createEvalProgram } from "./program.ts";

await runProgram(createEvalProgram(), process.argv);
