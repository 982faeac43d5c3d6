/**
 * A standalone entry for the eval commands (`tsx eval/cli/main.ts eval …`), used by the tests
 * and usable before `src/cli/index.ts` registers them.
 */
import { Command } from "commander";
import { registerEvalCommand } from "../../src/cli/eval-command.ts";
import { registerSimModelCommand } from "../../src/cli/sim-model-command.ts";

const program = new Command().name("forge").showHelpAfterError();
registerEvalCommand(program);
registerSimModelCommand(program);
await program.parseAsync(process.argv);
