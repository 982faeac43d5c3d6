/**
 * Tie a child's life to its parent's: on Linux the server is spawned through util-linux's
 * `setpriv --pdeathsig KILL`, which asks the kernel (`prctl(PR_SET_PDEATHSIG)`) to SIGKILL it when
 * the proxy dies, even by `kill -9`, then execs the server under the same pid.
 */
import { findOnPath, isExecutable } from "./executables.ts";

/** Searched after `PATH`, where util-linux installs `setpriv`. */
const SYSTEM_FOLDERS = ["/usr/bin", "/bin"];

/** A command line to spawn. */
export interface SpawnCommand {
  command: string;
  args: string[];
  /** Whether the child is killed by the kernel when this process dies. */
  diesWithParent: boolean;
}

/**
 * The command that runs `binaryPath args` and dies with this process: through `setpriv` on Linux
 * when it is installed (Debian and most distributions ship it in util-linux), else unchanged. On
 * macOS and Windows no such mechanism exists: the child outlives a parent killed by SIGKILL (a
 * normal exit or SIGTERM still stops it). The kernel watches the thread that spawned the child:
 * spawned from a worker thread, the server dies when that worker ends.
 * @example
 * withParentDeathSignal("/usr/bin/llama-server", ["--port", "8080"], "linux", "/usr/bin:/bin")
 * // { command: "/usr/bin/setpriv", args: ["--pdeathsig", "KILL", "--", "/usr/bin/llama-server", "--port", "8080"], diesWithParent: true }
 */
export function withParentDeathSignal(
  binaryPath: string,
  args: string[],
  platform: NodeJS.Platform = process.platform,
  searchPath: string = process.env.PATH ?? "",
): SpawnCommand {
  const setpriv = platform === "linux" ? findOnPath("setpriv", searchPath, SYSTEM_FOLDERS) : null;
  // A binary that cannot run is spawned directly, so its ENOENT/EACCES is reported as a spawn error.
  if (setpriv === null || !canExecute(binaryPath, searchPath)) {
    return { command: binaryPath, args, diesWithParent: false };
  }
  return { command: setpriv, args: ["--pdeathsig", "KILL", "--", binaryPath, ...args], diesWithParent: true };
}

/** A bare command name is looked up like `setpriv` itself; a path must be executable as it is. */
function canExecute(binaryPath: string, searchPath: string): boolean {
  return binaryPath.includes("/")
    ? isExecutable(binaryPath)
    : findOnPath(binaryPath, searchPath, SYSTEM_FOLDERS) !== null;
}
