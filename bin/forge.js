#!/usr/bin/env node
// The `forge` command: registers tsx so the TypeScript sources run as they are, then hands over.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("../src/cli/index.ts");
await runCli(process.argv);
