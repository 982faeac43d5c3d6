/** `npm run forge -- …`: the `forge` CLI from the TypeScript sources (the installed bin runs dist/). */
import { runCli } from "../src/cli/index.ts";

await runCli(process.argv);
